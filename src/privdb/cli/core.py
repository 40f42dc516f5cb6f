"""The Typer application, its consoles, and the error handling every command shares.

Exit status: 0 on success, 2 on a user error (one clear line on stderr), 1 on an internal fault, 3 when
`privdb audit` finds a mechanism whose ε lower bound exceeds its claim, 130 when interrupted (Ctrl-C: the
line "interrupted", whatever the engine made of the signal; privdb.interrupt).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console

from privdb.errors import InternalError, PrivdbError
from privdb.interrupt import interrupted, settle

__all__ = [
    "CLOSED_PIPE",
    "INTERRUPTED",
    "app",
    "arrange",
    "console",
    "errors",
    "friendly",
    "only",
    "stop_interrupted",
    "widen_help",
]

INTERRUPTED = 130  # the exit status of a command ended by Ctrl-C (128 + SIGINT), as shells report it
CLOSED_PIPE = 141  # the reader of the output went away (`| head -1`): 128 + SIGPIPE, as shells report it

app = typer.Typer(
    name="privdb",
    help="privdb: a private statistical database. Analysts get differentially private answers; "
    "owners publish anonymised tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",  # a docstring's wrapped lines read as one paragraph
)


def widen_help(typer_app: typer.Typer, args: list[str]) -> None:
    """Before parsing ``args``, if they ask for help (``--help``, or command groups alone: Typer's
    no_args_is_help): help piped to a file or a pager gets lines as long as the code's own, where Rich would
    assume 80 columns and squeeze every description (a terminal keeps its real width; COLUMNS or
    TERMINAL_WIDTH still win). Typer's Rich help (and Markdown) is imported here, only when help is shown: a
    command that runs never needs it."""

    def groups(of: typer.Typer) -> set[str]:
        found = {str(g.name) for g in of.registered_groups}
        return found.union(*(groups(g.typer_instance) for g in of.registered_groups if g.typer_instance))

    if "--help" not in args and not set(args) <= groups(typer_app):
        return
    from typer import rich_utils

    if rich_utils.MAX_WIDTH is None and "COLUMNS" not in os.environ and not sys.stdout.isatty():
        rich_utils.MAX_WIDTH = 120


def _version(value: bool) -> None:
    if value:
        from privdb import __version__

        sys.stdout.write(f"privdb {__version__}\n")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print privdb's version and exit"
    ),
) -> None:
    """privdb: a private statistical database. Analysts get differentially private answers; owners publish
    anonymised tables."""


# `privdb --help` groups the commands by who uses them, in the order of a first session; a command missing
# here is listed under "Other" (so a new command never disappears from the help)
PANELS: dict[str, tuple[str, ...]] = {
    "Owner: data and analysts": (
        "load",
        "infer",
        "attach",
        "grant",
        "budgets",
        "revoke",
        "token",
        "sql",
        "log",
        "tune",
        "serve",
    ),
    "Analyst": ("query", "explain", "budget"),
    "Publishing": ("anonymize", "check", "risk", "linkage", "publish", "sample"),
    "Local model": ("survey",),
    "Choosing and checking ε": ("epsilon", "audit", "demo"),
}


def name_of(info: Any) -> str:
    """A registered command's (or command group's) name, as the command line spells it."""
    if info.name:
        return str(info.name)
    callback = info.callback or getattr(info, "typer_instance", None)
    return getattr(callback, "__name__", "").replace("_", "-") if callback else ""


def arrange(typer_app: typer.Typer) -> None:
    """Put every registered command (and command group) in its help panel, in the order of ``PANELS``."""
    order = [name for names in PANELS.values() for name in names]
    for infos in (typer_app.registered_commands, typer_app.registered_groups):
        for info in infos:
            name = name_of(info)
            info.rich_help_panel = next((p for p, names in PANELS.items() if name in names), "Other")
        infos.sort(key=lambda i: order.index(name_of(i)) if name_of(i) in order else len(order))


def only(typer_app: typer.Typer, args: list[str]) -> typer.Typer:
    """The application with only the command (or group) that ``args`` start with: Typer turns every
    registered command into a Click command at each start, reading each signature (a tenth of a start), and
    the one that runs is all it needs; its help, errors and exit statuses are the same. When ``args`` name
    none (``--help``, ``--version``, a misspelt command and its suggestions): the whole application."""
    name = args[0] if args else ""
    commands = [info for info in typer_app.registered_commands if name_of(info) == name]
    groups = [info for info in typer_app.registered_groups if name_of(info) == name]
    if not commands and not groups:
        return typer_app
    lean = copy.copy(typer_app)  # the callback (--version) and the settings stay; the other commands go
    lean.registered_commands, lean.registered_groups = commands, groups
    return lean


# Every string the CLI prints is plain text: Rich's markup (``[b]…[/b]``) and emoji codes (``:smile:``) are
# off on both consoles, so a name, path, label or value from the user or the data is printed as it is (never
# restyled, never a MarkupError after a release was written or budget spent). Style with ``style=`` or
# ``rich.text.Text``; strings inside Rich renderables (Table cells and titles, rules) are plain too.


def console() -> Console:
    """Standard output, plain text (no markup, no emoji codes). Made per command so the terminal's current
    width (``COLUMNS``) is honoured; when the output is not a terminal and ``COLUMNS`` is unset, tables get
    160 columns rather than wrapping at 80."""
    width = None if "COLUMNS" in os.environ or sys.stdout.isatty() else 160
    return Console(width=width, markup=False, emoji=False)


def errors() -> Console:
    """Standard error, plain text (no markup, no emoji codes), lines never wrapped."""
    return Console(stderr=True, soft_wrap=True, markup=False, emoji=False)


F = TypeVar("F", bound=Callable[..., Any])


def friendly(func: F) -> F:
    """Turn privdb errors into one line on stderr and exit 2; anything else into exit 1, no traceback; an
    interrupt, however the engine reported it, into "interrupted" and exit 130."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            stop_interrupted()
        except (typer.Exit, typer.Abort):
            raise
        except BaseException:
            if interrupted():  # the engine's own error for the signal, or a failure it caused
                stop_interrupted()
            raise

    return _friendly(wrapper)  # type: ignore[return-value]


def stop_interrupted() -> None:
    """End the command after Ctrl-C: one line on stderr, exit status 130."""
    settle()
    sys.stderr.flush()
    os.write(2, b"interrupted\n")  # unbuffered: the line is out whatever the interrupted code left behind
    raise typer.Exit(INTERRUPTED)


def _friendly(func: F) -> F:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PrivdbError as err:
            status = 1 if isinstance(err, InternalError) else 2
            errors().print(f"error [{err.code}]: {err.message}", highlight=False)
            raise typer.Exit(status) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except SystemExit as done:  # Rich's own answer to a closed pipe: stdout to devnull, SystemExit(1)
            if isinstance(done.__context__, BrokenPipeError):
                raise typer.Exit(CLOSED_PIPE) from None
            raise
        except BrokenPipeError:  # the reader took what it wanted: no "internal error", no flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(CLOSED_PIPE) from None
        except Exception as err:  # an internal fault: say so without a traceback
            errors().print(
                f"internal error ({type(err).__name__}); please report it with the command you ran",
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]
