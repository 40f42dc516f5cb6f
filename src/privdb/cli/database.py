"""``privdb attach | grant | revoke | token | sql | serve``: the owner's database commands.

All but ``token`` and ``serve`` also run over a server (``--url`` and an owner token), which is how the owner
works while ``privdb serve`` holds the database (DuckDB's lock keeps ``--db`` out meanwhile)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from privdb.cli.core import app, console, errors, friendly
from privdb.cli.options import DbOption, FormatOption, LedgerOption, TokenOption, UrlOption, open_connection
from privdb.errors import InvalidParameter
from privdb.suggest import did_you_mean

OwnerDb = Annotated[
    Path | None, typer.Option("--db", help="database directory (created on first use), or --url for a server")
]


def owner_connection(db: Path | None, url: str | None, token: str | None, ledger: str | None = None) -> Any:
    """The owner's connection: on --db (created on first use; its ledger in PostgreSQL with --ledger), or
    over a running server with --url and an owner token (the server refuses an analyst's)."""
    if url is None:
        from privdb import connect

        if db is None:
            raise InvalidParameter("give --db DIR (the database) or --url URL --token OWNER_TOKEN (a server)")
        return connect(db, ledger=ledger)
    return open_connection(db, url, token, ledger=ledger)


@app.command()
@friendly
def attach(
    table: Annotated[str, typer.Argument(help="the name analysts will query")],
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="where the data stays: sqlite:////abs/path.db (absolute: four slashes), "
            "sqlite:///relative.db, postgresql://user@host:port/dbname or spark://local[2]",
        ),
    ],
    metadata: Annotated[Path, typer.Option(help="privacy metadata YAML")],
    source: Annotated[
        str | None, typer.Option(help="the table's name in that engine (default: TABLE)")
    ] = None,
    db: OwnerDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
) -> None:
    """Register a table that stays in its own engine; DP-SELECTs on it run there, only aggregates return.
    Over a server (--url, an owner token) the engine URL is opened by the server, on its machine."""
    with owner_connection(db, url, token, ledger) as conn:
        meta = conn.attach(table, engine, source, metadata)
        # where the engine's data strays from the metadata (embedded: the owner's own check, read here)
        findings = [] if isinstance(meta, dict) else conn.conformance(table)
    unit = meta.get("privacy_unit") if isinstance(meta, dict) else meta.privacy_unit
    console().print(
        Text.assemble("attached ", (table, "bold"), f" from {engine}; privacy unit: {unit or 'one row'}")
    )
    for finding in findings:
        errors().print(f"warning: {finding.message()}", highlight=False)


@app.command()
@friendly
def grant(
    analyst: Annotated[str, typer.Argument(help="analyst name")],
    db: OwnerDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
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
    group: Annotated[
        str | None, typer.Option(help="join a budget group (its budget is drawn on too); '' leaves it")
    ] = None,
    query_epsilon: Annotated[
        float | None,
        typer.Option(
            help="the ε each plain aggregate SQL query (a BI tool's chart) is answered at when the session "
            "sets no privdb.epsilon; 0 removes it (default: kept; none for a new analyst)"
        ),
    ] = None,
    query_delta: Annotated[float | None, typer.Option(help="the δ beside --query-epsilon")] = None,
) -> None:
    """Create an analyst with a budget (or change it); prints a new token (the old one stops working)."""
    scope = None if tables is None else [t.strip() for t in tables.split(",") if t.strip()]
    with owner_connection(db, url, token, ledger) as conn:
        if scope:  # a typo would grant a table that is not there: refused before anything changes
            known = [str(t["name"]) for t in conn.tables()]
            lowered = {k.lower() for k in known}
            for name in scope:
                if name.lower() not in lowered:
                    raise InvalidParameter(f"--tables: no table {name!r}{did_you_mean(name, known)}")
        issued = conn.grant(
            analyst,
            epsilon=epsilon,
            delta=delta,
            tables=scope,
            expires_in=None if expires_in is None else expires_in * 86_400,
            group=group,
            query_epsilon=query_epsilon,
            query_delta=query_delta,
        )
    sys.stdout.write(issued + "\n")


@app.command()
@friendly
def revoke(
    analyst: Annotated[str, typer.Argument(help="analyst name")],
    db: OwnerDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
) -> None:
    """Revoke an analyst's token at once (their budget and log stay; `privdb grant` issues a new token)."""
    with owner_connection(db, url, token, ledger) as conn:
        conn.revoke(analyst)
    console().print(f"revoked the token of {analyst}")


@app.command()
@friendly
def token(db: DbOption, ledger: LedgerOption = None) -> None:
    """Issue a new owner token (for the server's owner-only API and page); prints it once."""
    from privdb.database import Database

    with Database(db, ledger=ledger) as database:
        sys.stdout.write(database.catalog.add_owner_token() + "\n")


@app.command("sql")
@friendly
def owner_sql(
    statement: Annotated[str, typer.Argument(help="any SQL (the owner's direct access)")],
    db: OwnerDb = None,
    url: UrlOption = None,
    token: TokenOption = None,
    ledger: LedgerOption = None,
    output_format: FormatOption = "table",
) -> None:
    """Run raw SQL as the database owner (direct access model; analysts cannot). While `privdb serve`
    holds the database, run it over the server: --url URL --token OWNER_TOKEN."""
    with owner_connection(db, url, token, ledger) as conn:
        frame = conn.owner_sql(statement)
    if frame.attrs.get("truncated"):
        errors().print(f"the server sent the first {len(frame):,} rows only; narrow the query for the rest")
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
    ledger: LedgerOption = None,
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    workers: Annotated[int, typer.Option(help="worker processes (more than 1 opens the data read-only)")] = 1,
    query_timeout: Annotated[float, typer.Option(help="seconds an engine query may run")] = 30.0,
    max_body: Annotated[
        int, typer.Option(help="largest request body, in bytes (but a table's file: --max-load-bytes)")
    ] = 16 * 2**20,
    max_load_bytes: Annotated[
        int | None,
        typer.Option(
            help="largest file a load or an append may send, in bytes, streamed to disk as it comes "
            "(default: no limit but the disk's)"
        ),
    ] = None,
    access_log: Annotated[
        bool, typer.Option("--access-log/--no-access-log", help="log each request to standard output")
    ] = True,
    log_config: Annotated[
        Path | None,
        typer.Option(
            envvar="PRIVDB_LOG_CONFIG",
            help="logging config (JSON, YAML or INI, as uvicorn's), e.g. to write the access log to a file",
        ),
    ] = None,
    pg_port: Annotated[
        int | None,
        typer.Option(
            help="also accept PostgreSQL clients (psql, DBeaver, JDBC…) on this port (docs/clients.md)"
        ),
    ] = None,
    pg_host: Annotated[
        str | None, typer.Option(help="address for PostgreSQL clients (default: --host)")
    ] = None,
    pg_tls_cert: Annotated[
        Path | None, typer.Option(help="PEM certificate: PostgreSQL clients may use TLS")
    ] = None,
    pg_tls_key: Annotated[Path | None, typer.Option(help="PEM private key of --pg-tls-cert")] = None,
    pg_max_connections: Annotated[
        int, typer.Option(help="PostgreSQL sessions at once (max_connections); more are refused, 53300")
    ] = 100,
    pg_auth_timeout: Annotated[
        float, typer.Option(help="seconds a PostgreSQL client has to log in (authentication_timeout)")
    ] = 60.0,
    pg_auth_delay: Annotated[
        float,
        typer.Option(help="seconds before a failed PostgreSQL login is answered, doubled per recent failure"),
    ] = 0.1,
) -> None:
    """Serve the database over HTTP (the API of docs/server.md, the page at /), and with --pg-port over
    PostgreSQL's protocol too; prints an owner token the first time."""
    from privdb.inuse import served_already

    if workers < 1 or not 0 < port < 65536 or query_timeout <= 0 or max_body < 1024:
        raise InvalidParameter("--workers ≥ 1, --port in 1..65535, --query-timeout > 0, --max-body ≥ 1024")
    if max_load_bytes is not None and max_load_bytes < 1:
        raise InvalidParameter("--max-load-bytes must be a number of bytes ≥ 1 (leave it out for no limit)")
    if pg_port is not None and (not 0 < pg_port < 65536 or pg_port == port):
        raise InvalidParameter("--pg-port must be in 1..65535 and differ from --port")
    if pg_port is None and (pg_host or pg_tls_cert or pg_tls_key):
        raise InvalidParameter("--pg-host, --pg-tls-cert and --pg-tls-key need --pg-port")
    limits_ok = 1 <= pg_max_connections <= 10_000 and 0 < pg_auth_timeout <= 600 and 0 <= pg_auth_delay <= 5
    if not limits_ok:
        raise InvalidParameter(
            "--pg-max-connections must be in 1..10000, --pg-auth-timeout in (0, 600] s and "
            "--pg-auth-delay in [0, 5] s"
        )
    # before anything is printed, opened or even imported (the server's modules take seconds to load on a
    # busy machine): the running server stays as it is, and the refusal comes at once
    refusal = served_already(db)
    if refusal is not None:
        raise refusal
    from privdb.accounting.restart import notice
    from privdb.database import Database
    from privdb.server import serve as run_server
    from privdb.server.run import PgOptions

    with Database(db, ledger=ledger) as database:
        if not database.catalog.has_owner_token():
            errors().print(
                f"owner token (shown once; `privdb token` issues more): {database.catalog.add_owner_token()}"
            )
        if database.ledger.orphans:  # the reservations of a server that died, settled as it opened
            errors().print(notice(database.ledger.orphans))
    pg = None
    if pg_port is not None:
        limits = (pg_max_connections, pg_auth_timeout, pg_auth_delay)
        pg = PgOptions(pg_port, pg_host or host, pg_tls_cert, pg_tls_key, *limits)
    also = "" if pg is None else f" and postgresql://{pg.host}:{pg.port}"
    errors().print(
        f"privdb serving {db} on http://{host}:{port}{also} ({workers} worker(s)); Ctrl-C stops it"
    )
    run_server(
        db,
        host=host,
        port=port,
        workers=workers,
        query_timeout=query_timeout,
        max_body=max_body,
        access_log=access_log,
        log_config=log_config,
        ledger=ledger,
        pg=pg,
        max_load_bytes=max_load_bytes,
    )
