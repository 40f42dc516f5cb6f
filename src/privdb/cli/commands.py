"""The assembled ``privdb`` application: importing each command module registers its commands on ``app``."""

from privdb.cli import (
    analyst,
    anonymize,
    budgets,
    database,
    epsilon,
    linkage,
    load,
    log,
    publish,
    showcase,
    survey,
    tune,
)
from privdb.cli.core import app, arrange

__all__ = ["app"]

_COMMANDS = (
    analyst,
    anonymize,
    budgets,
    database,
    epsilon,
    linkage,
    load,
    log,
    publish,
    showcase,
    survey,
    tune,
)
arrange(app)
