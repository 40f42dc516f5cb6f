"""``privdb load``: files into the embedded engine, with their privacy metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privdb.cli.app import app, console, friendly
from privdb.cli.options import DbOption


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
