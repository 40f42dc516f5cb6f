"""The ``privdb`` command: a thin face over the library (Typer + Rich)."""

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
from privdb.cli.app import app, arrange

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
    line on stderr and exit status 2, like every other user error (the exit statuses of cli/app.py)."""
    import sys

    import typer
    from typer import rich_utils

    try:
        code = app(standalone_mode=False, prog_name="privdb")
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(1)
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
        sys.exit(int(getattr(err, "exit_code", 2)))
    sys.exit(code if isinstance(code, int) else 0)
