"""``privdb attach | grant | revoke | token | sql | serve``: the owner's database commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from privdb.cli.app import app, console, errors, friendly
from privdb.cli.options import DbOption, FormatOption
from privdb.errors import InvalidParameter


@app.command()
@friendly
def attach(
    table: Annotated[str, typer.Argument(help="the name analysts will query")],
    db: DbOption,
    engine: Annotated[str, typer.Option("--engine", help="where the data stays: sqlite:///path/file.db")],
    metadata: Annotated[Path, typer.Option(help="privacy metadata YAML")],
    source: Annotated[
        str | None, typer.Option(help="the table's name in that engine (default: TABLE)")
    ] = None,
) -> None:
    """Register a table that stays in its own engine; DP-SELECTs on it run there, only aggregates return."""
    from privdb.database import Database

    with Database(db) as database:
        meta = database.attach(table, engine, source, metadata)
    console().print(
        f"attached [bold]{meta.name}[/bold] from {engine}; privacy unit: {meta.privacy_unit or 'one row'}"
    )


@app.command()
@friendly
def grant(
    analyst: Annotated[str, typer.Argument(help="analyst name")],
    db: DbOption,
    epsilon: Annotated[
        float | None, typer.Option(help="total ε budget (needed for a new analyst; a re-grant keeps it)")
    ] = None,
    delta: Annotated[
        float | None, typer.Option(help="total δ budget (default 0; a re-grant keeps it)")
    ] = None,
    tables: Annotated[
        str | None, typer.Option(help="comma-separated tables the analyst may query (default: all)")
    ] = None,
    expires_in: Annotated[
        float | None, typer.Option(help="the token's life in days (default: no expiry)")
    ] = None,
) -> None:
    """Create an analyst with a budget (or change it); prints a new token (the old one stops working)."""
    from privdb import connect

    scope = None if tables is None else [t.strip() for t in tables.split(",") if t.strip()]
    with connect(db) as conn:
        token = conn.grant(
            analyst,
            epsilon=epsilon,
            delta=delta,
            tables=scope,
            expires_in=None if expires_in is None else expires_in * 86_400,
        )
    sys.stdout.write(token + "\n")


@app.command()
@friendly
def revoke(
    analyst: Annotated[str, typer.Argument(help="analyst name")],
    db: DbOption,
) -> None:
    """Revoke an analyst's token at once (their budget and log stay; `privdb grant` issues a new token)."""
    from privdb import connect

    with connect(db) as conn:
        conn.revoke(analyst)
    console().print(f"revoked the token of {analyst}")


@app.command()
@friendly
def token(db: DbOption) -> None:
    """Issue a new owner token (for the server's owner-only API and page); prints it once."""
    from privdb.database import Database

    with Database(db) as database:
        sys.stdout.write(database.catalog.add_owner_token() + "\n")


@app.command("sql")
@friendly
def owner_sql(
    statement: Annotated[str, typer.Argument(help="any SQL (the owner's direct access)")],
    db: DbOption,
    output_format: FormatOption = "table",
) -> None:
    """Run raw SQL as the database owner (direct access model; analysts cannot)."""
    from privdb import connect

    with connect(db) as conn:
        frame = conn.owner_sql(statement)
    if output_format == "json":
        sys.stdout.write(frame.to_json(orient="split", index=False) + "\n")
    elif output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    else:
        table = Table()
        for col in frame.columns:
            table.add_column(str(col))
        for row in frame.itertuples(index=False):
            table.add_row(*(str(v) for v in row))
        console().print(table)


@app.command()
@friendly
def serve(
    db: DbOption,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    workers: Annotated[int, typer.Option(help="worker processes (more than 1 opens the data read-only)")] = 1,
    query_timeout: Annotated[float, typer.Option(help="seconds an engine query may run")] = 30.0,
    max_body: Annotated[int, typer.Option(help="largest request body, in bytes")] = 16 * 2**20,
) -> None:
    """Serve the database over HTTP (the API of docs/server.md, the page at /); prints an owner token the
    first time."""
    from privdb.database import Database
    from privdb.server import serve as run_server

    if workers < 1 or not 0 < port < 65536 or query_timeout <= 0 or max_body < 1024:
        raise InvalidParameter("--workers ≥ 1, --port in 1..65535, --query-timeout > 0, --max-body ≥ 1024")
    with Database(db) as database:
        if not database.catalog.has_owner_token():
            errors().print(
                f"owner token (shown once; `privdb token` issues more): {database.catalog.add_owner_token()}"
            )
    errors().print(f"privdb serving {db} on http://{host}:{port} ({workers} worker(s)); Ctrl-C stops it")
    run_server(db, host=host, port=port, workers=workers, query_timeout=query_timeout, max_body=max_body)
