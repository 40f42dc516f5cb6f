"""The assembled ``privdb`` application: importing each command module registers its commands on ``app``."""

from importlib import import_module

from privdb.cli.core import app, arrange

__all__ = ["app"]

_COMMANDS = tuple(
    import_module(f"privdb.cli.{name}")  # each registers its commands on ``app`` as it is imported
    for name in (
        "analyst", "anonymize", "budgets", "database", "epsilon", "linkage", "load", "log", "measure",
        "publish", "publish_marginals", "sample", "showcase", "survey", "tune",
    )
)  # fmt: skip
arrange(app)
