"""``privdb load | grant | query | explain | budget | sql``: the database commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from privdb.cli.app import app, console, friendly
from privdb.errors import InvalidParameter

DbOption = Annotated[Path, typer.Option("--db", help="database directory (created on first use)")]
FormatOption = Annotated[str, typer.Option("--format", help="table, json or csv")]


def _formats(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidParameter(f"--format must be one of {', '.join(allowed)}, got {value!r}")
    return value


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
def grant(
    analyst: Annotated[str, typer.Argument(help="analyst name")],
    db: DbOption,
    epsilon: Annotated[float, typer.Option(help="total ε budget")],
    delta: Annotated[float, typer.Option(help="total δ budget")] = 0.0,
) -> None:
    """Create an analyst with a budget (or change their budget); prints the analyst's token."""
    from privdb import connect

    with connect(db) as conn:
        token = conn.grant(analyst, epsilon=epsilon, delta=delta)
    sys.stdout.write(token + "\n")


@app.command()
@friendly
def query(
    sql: Annotated[str, typer.Argument(help='a DP-SELECT, e.g. "DP-SELECT 0.5 COUNT(*) FROM people"')],
    db: DbOption,
    analyst: Annotated[str, typer.Option(help="the analyst who asks (and pays)")],
    output_format: FormatOption = "table",
) -> None:
    """Answer a DP-SELECT with differential privacy, paid from the analyst's budget."""
    from privdb import connect

    _formats(output_format, ("table", "json", "csv"))
    with connect(db, analyst=analyst) as conn:
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
    db: DbOption,
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
) -> None:
    """Show a DP-SELECT's plan, sensitivities, noise and cost, without reading data or spending budget."""
    from privdb import connect

    _formats(output_format, ("table", "json"))
    with connect(db) as conn:
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
    out.print("[bold]engine SQL[/bold]")
    out.print(plan["engine_sql"], highlight=False, markup=False)


@app.command()
@friendly
def budget(
    db: DbOption,
    analyst: Annotated[str, typer.Option(help="analyst name")],
    output_format: Annotated[str, typer.Option("--format", help="table or json")] = "table",
) -> None:
    """Show an analyst's budget: total, spent and remaining."""
    from privdb import connect

    _formats(output_format, ("table", "json"))
    with connect(db) as conn:
        info = conn.budget_of(analyst)
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

    _formats(output_format, ("table", "json", "csv"))
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
