"""``privdb tune``: the owner's DP histogram of rows per unit, to choose ``max_contributions``
(privdb.publish.tune; charged to the owner's publication account and the table's lifetime budget)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson, TokenOption
from privdb.cli.publish import open_database
from privdb.errors import Unauthorized


@app.command()
@friendly
def tune(
    table: Annotated[str, typer.Argument(help="a table of --db with a privacy_unit")],
    db: Annotated[Path | None, typer.Option("--db", help="the database (its ledger pays)")] = None,
    epsilon: Annotated[float, typer.Option("--epsilon", help="ε charged for the histogram")] = 0.1,
    coverage: Annotated[
        float, typer.Option("--coverage", help="the share of rows the suggested bound keeps")
    ] = 0.9,
    token: TokenOption = None,
    output_format: TableOrJson = "table",
) -> None:
    """A DP histogram of rows per unit (one bin per count to 16, then powers of two) with a suggested
    max_contributions: the smallest bound keeping --coverage of the rows. Charged ε to the owner's account
    and the table's lifetime budget, like a publication. The owner's command: an analyst's token is
    refused."""
    from privdb.publish.tune import rows_per_unit

    database = open_database(db)
    try:
        if token is not None and not database.catalog.authenticate(token).is_owner:
            raise Unauthorized(
                "privdb tune reads every unit's rows: it is the owner's command; an analyst sees the "
                "truncation estimate in each answer instead"
            )
        result = rows_per_unit(database, table, epsilon, coverage)
    finally:
        database.close()
    if output_format == "json":
        sys.stdout.write(json.dumps(result.to_dict()) + "\n")
        return
    half = f"{result.ci95_half_width:.0f}"
    shown = Table(
        title=f"rows per {result.privacy_unit} in {result.table} (noisy, ± {half} units per bin at 95%)"
    )
    for name in ("rows per unit", "units", "rows kept with this bound"):
        shown.add_column(name, justify="right")
    for b in result.bins:
        span = f"{b['low']}" if b["high"] == b["low"] else f"{b['low']}–{b['high'] or ''}"
        share = "" if b["rows_kept_share"] is None else f"{b['rows_kept_share']:.1%}"
        shown.add_row(span if b["high"] is not None else f"> {b['low'] - 1}", f"{b['units']:,}", share)
    out = console()
    out.print(shown)
    suggestion = (
        f"suggested max_contributions: {result.suggested} (keeps ≥ {result.coverage:.0%} of the rows)"
        if result.suggested is not None
        else f"no bound up to the last bin keeps {result.coverage:.0%} of the rows"
    )
    out.print(f"{suggestion}; now {result.current}", highlight=False)
    out.print(f"charged ε={result.epsilon:g} to table {result.table!r}", highlight=False)
