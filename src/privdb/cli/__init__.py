"""The ``privdb`` command: a thin face over the library (Typer + Rich)."""

from privdb.cli import analyst, anonymize, database, linkage, load, log, showcase, survey
from privdb.cli.app import app, arrange

__all__ = ["app", "main"]

_COMMANDS = (
    analyst,
    anonymize,
    database,
    linkage,
    load,
    log,
    showcase,
    survey,
)  # importing them registers their commands on ``app``
arrange(app)


def main() -> None:
    """Console-script entry point."""
    app()
