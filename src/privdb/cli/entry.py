"""A command run in this process: its imports (Ctrl-C while they run is "interrupted" too), Typer's
parsing, its errors and exit status. ``privdb.cli.main`` comes here when no warm process takes the command,
and a warm process's forked copy comes here to run it (privdb.cli.warm.become)."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import TYPE_CHECKING, NoReturn

from privdb.interrupt import install, interrupted

if TYPE_CHECKING:
    import typer

__all__ = ["leave", "run_cold", "run_here"]


def run_here() -> int:
    """``run_cold``, its exit as a status: ``sys.exit``'s number (None is 0; a message is written to stderr
    and is 1, as the interpreter would)."""
    try:
        run_cold()
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        sys.stderr.write(f"{done.code}\n")
        return 1
    return 0


def leave(code: int) -> NoReturn:
    """End the process with ``code`` once a command is done: ``atexit`` work, the standard streams flushed,
    then at once, without the interpreter's teardown, which frees every object one by one (0.2-0.3 s after
    a 1,000,000-row ``privdb anonymize``). A warm command ends so too. So a command closes what it writes
    itself: a thread still running is stopped where it is (a refused release's writer, whose file is gone)."""
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_cold() -> None:
    """Run the command of ``sys.argv`` here and exit with its status."""
    # first, before the imports that take a moment: a Ctrl-C while they run is noted even where a library's
    # bare ``except:`` swallows its KeyboardInterrupt (CI saw such a command run on and exit 0)
    install()
    try:
        import typer

        from privdb.cli.commands import app
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    if interrupted():  # the KeyboardInterrupt was swallowed: still "interrupted", 130, before any work
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show ε gets \u03b5, not a lost answer
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = _run(app)
    except typer.Exit as done:  # only from stop_interrupted(): the commands' own exits return a code
        sys.exit(done.exit_code)
    sys.exit(code)


def _run(app: typer.Typer) -> int:
    """The command's exit status; Ctrl-C outside a command (while Typer parses) is "interrupted" too."""
    import typer

    from privdb.cli.core import INTERRUPTED, only, stop_interrupted, widen_help

    widen_help(app, sys.argv[1:])
    try:
        code = only(app, sys.argv[1:])(standalone_mode=False, prog_name="privdb")
    except KeyboardInterrupt:
        stop_interrupted()
    except typer.Abort as err:
        if isinstance(err.__context__, KeyboardInterrupt):  # click's own word for Ctrl-C at a prompt
            stop_interrupted()
        sys.stderr.write("aborted\n")
        return 1
    except typer.TyperException as err:  # Typer's parser errors (its vendored click's ClickException)
        if type(err).__name__ == "NoArgsIsHelpError":  # `privdb` alone: the help
            from typer import rich_utils

            rich_utils.rich_format_error(err)  # type: ignore[arg-type]
        else:
            ctx = getattr(err, "ctx", None)
            where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            message = " ".join(str(getattr(err, "format_message", err.__str__)()).split()).replace(
                "Value error, ", ""
            )
            sys.stderr.write(f"error [invalid_parameter]: {message}{where}\n")
        return int(getattr(err, "exit_code", 2))
    if interrupted() and code != INTERRUPTED:  # a Ctrl-C some library swallowed is never lost:
        stop_interrupted()  # the command still ends "interrupted", 130
    return code if isinstance(code, int) else 0
