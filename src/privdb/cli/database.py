"""``privdb load | grant | query | explain | budget | sql``: the database commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from privdb.cli.app import app, check_format, console, errors, friendly
from privdb.errors import InvalidParameter

DbOption = Annotated[Path, typer.Option("--db", help="database directory (created on first use)")]
MaybeDb = Annotated[Path | None, typer.Option("--db", help="database directory (or --url for a server)")]
UrlOption = Annotated[
    str | None, typer.Option("--url", envvar="PRIVDB_URL", help="a privdb server, e.g. http://127.0.0.1:8000")
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="PRIVDB_TOKEN", help="bearer token for --url (from `privdb grant`)"),
]
FormatOption = Annotated[str, typer.Option("--format", help="table, json or csv")]


def _open(db: Path | None, url: str | None, token: str | None, analyst: str | None = None) -> Any:
    """An embedded connection on --db (as --analyst, or the owner), or a server session on --url."""
    from privdb import connect

    if url is not None:
        if db is not None:
            raise InvalidParameter("give --db (a local database) or --url (a server), not both")
        if analyst is not None:
            raise InvalidParameter("on a server the token says who asks: give --token, not --analyst")
        if not token:
            raise InvalidParameter("--url needs --token (or PRIVDB_TOKEN): the token `privdb grant` printed")
        return connect(url, token=token)
    if db is None:
        raise InvalidParameter("give --db DIR (a local database) or --url URL --token T (a server)")
    if not (Path(db) / "privdb.sqlite").is_file():  # a read command never creates a database (a typo)
        raise InvalidParameter(
            f"no privdb database at {str(db)!r}; check --db (the owner creates one with `privdb load` or "
            "`privdb grant`)"
        )
    if token is not None and analyst is None:
        return connect(db, token=token)
    return connect(db, analyst=analyst)


@app.command()
@friendly
def load(
    table: Annotated[str, typer.Argument(help="name of the table to create or replace")],
    file: Annotated[Path, typer.Argument(help="CSV (delimiter and header detected) or Parquet file")],
    db: DbOption,
    metadata: Annotated[Path | None, typer.Option(help="privacy metadata YAML")] = None,
) -> None:
    """Load a CSV or Parquet file into the database, with its privacy metadata."""
    from privdb import connect

    with connect(db) as conn:
        meta = conn.load(table, file, metadata)
        rows = conn.owner_sql(f'SELECT COUNT(*) AS n FROM "{meta.name}"')["n"].iloc[0]
    bounded = [c.name for c in meta.columns.values() if c.bounded]
    console().print(
        f"loaded [bold]{meta.name}[/bold]: {rows:,} rows, {len(meta.columns)} columns; "
        f"privacy unit: {meta.privacy_unit or 'one row'}; bounded: {', '.join(bounded) or 'none'}"
    )


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


@app.command()
@friendly
def query(
    sql: Annotated[str, typer.Argument(help='a DP-SELECT, e.g. "DP-SELECT 0.5 COUNT(*) FROM people"')],
    db: MaybeDb = None,
    analyst: Annotated[str | None, typer.Option(help="the analyst who asks (and pays), with --db")] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    output_format: FormatOption = "table",
) -> None:
    """Answer a DP-SELECT with differential privacy, paid from the analyst's budget."""
    check_format(output_format, ("table", "json", "csv"))
    if url is None and analyst is None and token is None:
        raise InvalidParameter("say who asks: --analyst NAME (with --db) or --token T (with --url)")
    with _open(db, url, token, analyst) as conn:
        result = conn.sql(sql)
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
    elif output_format == "csv":
        sys.stdout.write(result.to_csv())
    else:
        console().print(result)


@app.command()
@friendly
def explain(
    sql: Annotated[str, typer.Argument(help="a DP-SELECT")],
    db: MaybeDb = None,
    analyst: Annotated[
        str | None, typer.Option(help="explain as this analyst, with --db: only the tables granted to them")
    ] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
) -> None:
    """Show a DP-SELECT's plan, sensitivities, noise and cost, without reading data or spending budget
    (as the owner by default; as an analyst with --analyst, or with --url and their token)."""
    check_format(output_format, ("table", "json"))
    with _open(db, url, token, analyst) as conn:
        plan = conn.explain(sql)
    if output_format == "json":
        sys.stdout.write(json.dumps(plan) + "\n")
        return
    out = console()
    out.print(
        f"[bold]table[/bold] {plan['table']}  ·  privacy unit: {plan['privacy_unit'] or 'one row'}"
        f"  ·  neighbours: {plan['neighbouring']}  ·  keys: {plan['keys']}"
    )
    out.print(f"[bold]cost[/bold] ε = {plan['epsilon']:g}, δ = {plan['delta']:g}")
    table = Table(title="noisy statistics")
    for col in ("statistic", "kind", "column", "sensitivity", "mechanism", "ε", "scale", "95% ±"):
        table.add_column(col)
    for s in plan["statistics"]:
        table.add_row(
            s["statistic"],
            s["kind"],
            s["column"] or "*",
            f"{s['sensitivity']:g}",
            s["mechanism"],
            f"{s['epsilon']:.4g}",
            f"{s['scale']:.4g}",
            f"{s['ci95_half_width']:.4g}",
        )
    out.print(table)
    if plan.get("order_statistics"):
        order = Table(title="order statistics and modes (exponential mechanism)")
        for col in ("column", "kind", "ε per group", "Δ", "candidates", "resolution", "95% utility loss"):
            order.add_column(col)
        for o in plan["order_statistics"]:
            order.add_row(
                o["column"],
                o["kind"] + (f" q={o['q']:g}" if o["q"] is not None else ""),
                f"{o['epsilon_per_group']:.4g}",
                f"{o['sensitivity']:g}",
                f"{o['candidates']:,}",
                "—" if o["resolution"] is None else f"{o['resolution']:.4g}",
                f"{o['utility_loss95']:.4g}",
            )
        out.print(order)
    out.print("[bold]engine SQL[/bold]")
    out.print(plan["engine_sql"], highlight=False, markup=False)


@app.command()
@friendly
def budget(
    db: MaybeDb = None,
    analyst: Annotated[str | None, typer.Option(help="analyst name")] = None,
    url: UrlOption = None,
    token: TokenOption = None,
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
) -> None:
    """Show an analyst's budget: total, spent and remaining (on a server: the token's own)."""
    check_format(output_format, ("table", "json"))
    with _open(db, url, token) as conn:
        if url is not None and analyst is None:
            info = conn.budget()
        elif analyst is None:
            raise InvalidParameter("--analyst NAME: whose budget to show")
        else:
            info = conn.budget_of(analyst)
    analyst = analyst or str(info.get("analyst", ""))
    if output_format == "json":
        sys.stdout.write(json.dumps(info) + "\n")
        return
    table = Table(title=f"budget of {analyst}")
    for col in ("", "ε", "δ"):
        table.add_column(col)
    for row in ("total", "spent", "remaining"):
        table.add_row(row, f"{info['epsilon_' + row]:g}", f"{info['delta_' + row]:g}")
    console().print(table)


@app.command("sql")
@friendly
def owner_sql(
    statement: Annotated[str, typer.Argument(help="any SQL (the owner's direct access)")],
    db: DbOption,
    output_format: FormatOption = "table",
) -> None:
    """Run raw SQL as the database owner (direct access model; analysts cannot)."""
    from privdb import connect

    check_format(output_format, ("table", "json", "csv"))
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
    """Serve the database over HTTP (the API of DESIGN.md, the page at /); prints an owner token at first."""
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
