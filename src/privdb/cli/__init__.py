"""The ``privdb`` command: a thin face over the library (Typer + Rich)."""

import sys

try:  # the imports take the command's first second or two: Ctrl-C then ends it as it does later
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
    from privdb.cli.app import app, arrange, stop_interrupted
except KeyboardInterrupt:
    sys.stderr.write("interrupted\n")
    sys.exit(130)

__all__ = ["app", "main"]

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
)  # importing them registers their commands on ``app``
arrange(app)


def main() -> None:
    """Console-script entry point. A usage error (an unknown option, a value not among the choices) is one
    line on stderr and exit status 2, like every other user error (the exit statuses of cli/app.py); Ctrl-C
    is "interrupted" and exit status 130, wherever it lands."""
    import typer

    from privdb.interrupt import install

    install()
    try:
        code = _run()
    except typer.Exit as done:  # only from stop_interrupted(): the commands' own exits return a code
        sys.exit(done.exit_code)
    sys.exit(code)


def _run() -> int:
    """The command's exit status; Ctrl-C outside a command (while Typer parses) is "interrupted" too."""
    import typer
    from typer import rich_utils

    try:
        code = app(standalone_mode=False, prog_name="privdb")
    except KeyboardInterrupt:
        stop_interrupted()
    except typer.Abort as err:
        if isinstance(err.__context__, KeyboardInterrupt):  # click's own word for Ctrl-C at a prompt
            stop_interrupted()
        sys.stderr.write("aborted\n")
        return 1
    except typer.TyperException as err:  # Typer's parser errors (its vendored click's ClickException)
        if type(err).__name__ == "NoArgsIsHelpError":  # `privdb` alone: the help
            rich_utils.rich_format_error(err)  # type: ignore[arg-type]
        else:
            ctx = getattr(err, "ctx", None)
            where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            message = " ".join(str(getattr(err, "format_message", err.__str__)()).split()).replace(
                "Value error, ", ""
            )
            sys.stderr.write(f"error [invalid_parameter]: {message}{where}\n")
        return int(getattr(err, "exit_code", 2))
    return code if isinstance(code, int) else 0
