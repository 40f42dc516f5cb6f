"""Options and the connection helper the database commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from privdb.errors import InvalidParameter

__all__ = [
    "DbOption",
    "FormatOption",
    "LedgerOption",
    "MaybeDb",
    "TableOrJson",
    "TokenOption",
    "UrlOption",
    "open_connection",
]

DbOption = Annotated[Path, typer.Option("--db", help="database directory (created on first use)")]
MaybeDb = Annotated[Path | None, typer.Option("--db", help="database directory (or --url for a server)")]
UrlOption = Annotated[
    str | None, typer.Option("--url", envvar="PRIVDB_URL", help="a privdb server, e.g. http://127.0.0.1:8000")
]
LedgerOption = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        envvar="PRIVDB_LEDGER",
        help="keep budgets, analysts and the log in PostgreSQL (postgresql://user@host:port/db), shared by "
        "several hosts' servers; default: the --db directory's own file",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="PRIVDB_TOKEN", help="bearer token for --url (from `privdb grant`)"),
]
FormatOption = Annotated[
    Literal["table", "json", "csv"], typer.Option("--format", help="how to print the answer")
]
TableOrJson = Annotated[Literal["table", "json"], typer.Option("--format", help="how to print it")]


def open_connection(
    db: Path | None, url: str | None, token: str | None, analyst: str | None = None, ledger: str | None = None
) -> Any:
    """An embedded connection on --db (as --analyst, or the owner; its ledger in PostgreSQL with --ledger),
    or a server session on --url."""
    from privdb import connect

    if url is not None:
        if db is not None:
            raise InvalidParameter("give --db (a local database) or --url (a server), not both")
        if ledger is not None:
            raise InvalidParameter("--ledger goes with --db: a server (--url) keeps its own ledger")
        if analyst is not None:
            raise InvalidParameter("on a server the token says who asks: give --token, not --analyst")
        if not token:
            raise InvalidParameter("--url needs --token (or PRIVDB_TOKEN): the token `privdb grant` printed")
        return connect(url, token=token)
    if db is None:
        raise InvalidParameter("give --db DIR (a local database) or --url URL --token T (a server)")
    marker = "." if ledger is not None else "privdb.sqlite"  # its catalog in PostgreSQL, or here
    if not (Path(db) / marker).exists():  # a read command never creates a database (a typo)
        raise InvalidParameter(
            f"no privdb database at {str(db)!r}; check --db (the owner creates one with `privdb load` or "
            "`privdb grant`)"
        )
    if token is not None and analyst is None:
        return connect(db, token=token, ledger=ledger)
    return connect(db, analyst=analyst, ledger=ledger)
