"""The ``privdb`` command: a thin face over the library (Typer + Rich)."""

from privdb.cli import anonymize, database, showcase
from privdb.cli.app import app

__all__ = ["app", "main"]

_COMMANDS = (anonymize, database, showcase)  # importing them registers their commands on ``app``


def main() -> None:
    """Console-script entry point."""
    app()
