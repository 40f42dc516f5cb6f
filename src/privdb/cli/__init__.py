"""The ``privdb`` command: a thin face over the library (Typer + Rich).

``privdb --version`` answers before Typer and the command modules are imported (they take most of a start);
every other invocation goes to the user's warm process where there is one (privdb.cli.warm: it has imported
all that once), else assembles the application here (privdb.cli.entry, privdb.cli.commands), whose modules
import the engine only inside the commands that use it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privdb.cli.commands import app

__all__ = ["app", "main"]


def __getattr__(name: str) -> object:
    """``app``: the Typer application with every command registered, assembled on first use."""
    if name == "app":
        from privdb.cli.commands import app

        return app
    raise AttributeError(f"module 'privdb.cli' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point. A usage error (an unknown option, a value not among the choices) is one
    line on stderr and exit status 2, like every other user error (the exit statuses of cli/core.py); Ctrl-C
    is "interrupted" and exit status 130, wherever it lands. The command runs in the user's warm process
    where there is one to use (privdb.cli.warm), else here."""
    argv = sys.argv[1:]
    if argv == ["--version"]:
        from privdb import __version__

        sys.stdout.write(f"privdb {__version__}\n")
        sys.exit(0)
    try:
        from privdb.cli.warm import hand_over

        hand_over(argv)  # returns only where the command is to run in this process
    except KeyboardInterrupt:  # before the command was handed over (or started here): nothing ran
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    from privdb.cli.entry import leave, run_here

    leave(run_here())
