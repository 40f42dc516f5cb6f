"""``privdb publish``: non-interactive releases with a DP guarantee, each charged to the owner's account.

A Typer sub-app: every release method is one command of ``publish_app`` (``safepub`` here; a new method adds
its own module that registers a command on ``publish_app`` and is imported in ``privdb.cli``). Shared steps
live here: the database whose ledger pays (``--db``), the input (a table of the database or a CSV file) and
the charge, reserved after every check passed and committed before any output is written.

The owner's publication account is the ledger's analyst ``owner`` on the database (created with
``privdb grant owner --epsilon E --delta D``); a release also draws on the table's shared budget
(``privdb budgets --table NAME``), so a table's lifetime cap bounds publications too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import typer

from privdb.cli.anonymize import _suffix, qi_columns
from privdb.cli.app import app, console, friendly
from privdb.errors import InvalidParameter

__all__ = ["OWNER_ACCOUNT", "publish_app"]

OWNER_ACCOUNT = "owner"

publish_app = typer.Typer(
    name="publish",
    help="Publish a table non-interactively with a differential-privacy guarantee; every release is charged "
    "to the owner's account in the ledger (`privdb grant owner --epsilon E --delta D`).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
app.add_typer(publish_app, name="publish")


def open_database(db: Path | None) -> Any:
    """The database whose ledger pays; refuses a missing ``--db`` or a directory that is no database."""
    from privdb.database import Database

    if db is None:
        raise InvalidParameter(
            "give --db DIR: every release is charged to the owner's account in that database's ledger"
        )
    if not (Path(db) / "privdb.sqlite").is_file():
        raise InvalidParameter(
            f"no privdb database at {str(db)!r}; check --db (the owner creates one with `privdb load` or "
            "`privdb grant`)"
        )
    return Database(db)


def read_input(database: Any, source: str, table: str | None) -> tuple[pd.DataFrame, str]:
    """The rows to publish and the name of the table they are charged to: a table of the database (by
    name), or a CSV/Parquet file (``--table``, default the file's stem)."""
    from privdb.anonymize.tables import read_table
    from privdb.backends.duckdb import check_name, quote

    names = {n.lower(): n for n in database.table_names()}
    if source.lower() in names and not Path(source).is_file():
        name = names[source.lower()]
        if table is not None and table.lower() != name.lower():
            raise InvalidParameter(f"--table {table!r} differs from the input table {name!r}: drop --table")
        return database.owner_sql(f"SELECT * FROM {quote(name)}"), name
    if not Path(source).is_file():
        known = ", ".join(sorted(names.values())) or "none"
        raise InvalidParameter(
            f"{source!r} is neither a table of the database (tables: {known}) nor a file; check the name"
        )
    name = check_name(table if table is not None else Path(source).stem, "--table")
    frame, _ = read_table(source)
    return frame, name


@publish_app.command("safepub")
@friendly
def safepub_command(
    source: Annotated[str, typer.Argument(help="a table of --db, or a CSV/Parquet file", show_default=False)],
    qi: Annotated[str, typer.Option("--qi", help="comma-separated quasi-identifier columns (all released)")],
    output: Annotated[Path, typer.Option("-o", "--output", help="where to write the released CSV")],
    epsilon: Annotated[float, typer.Option("--epsilon", help="total ε charged (ε_anon + ε_search), e.g. 1")],
    delta: Annotated[float, typer.Option("--delta", help="δ charged, in (0, 1), e.g. 1e-5")],
    epsilon_search: Annotated[float, typer.Option(help="the search's share of ε (ARX: 0.1)")] = 0.1,
    hierarchies: Annotated[
        Path | None, typer.Option("--hierarchies", help="directory of public COLUMN.csv hierarchies (ARX)")
    ] = None,
    fix_labels: Annotated[bool, typer.Option(help="rename lo-hi labels that exclude their values")] = False,
    metric: Annotated[
        str, typer.Option(help="the search's score: loss, precision, aecs, discernibility or entropy")
    ] = "loss",
    steps: Annotated[int | None, typer.Option(help="search steps (default: the lattice's height)")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="the database whose ledger pays")] = None,
    table: Annotated[str | None, typer.Option(help="ledger table name for a file input (its stem)")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write the JSON utility report")] = None,
    png: Annotated[Path | None, typer.Option("--report-png", help="write the report's chart (.png)")] = None,
) -> None:
    """SafePub (Bild, Kuhn, Prasser 2018): sample, generalise along public hierarchies, suppress classes
    below k; (ε, δ)-DP. Only the quasi-identifiers of the kept records are written."""
    from privdb.anonymize import load_hierarchies
    from privdb.publish.report import publication_report, report_png
    from privdb.publish.safepub import check_inputs, safepub

    columns = qi_columns(qi)
    _suffix(output, (".csv",), "-o")
    _suffix(report, (".json",), "--report")
    _suffix(png, (".png",), "--report-png")
    database = open_database(db)
    try:
        frame, name = read_input(database, source, table)
        given = load_hierarchies(hierarchies, columns, fix_labels=fix_labels) if hierarchies else {}
        check_inputs(
            frame, columns, given, epsilon=epsilon, delta=delta, epsilon_search=epsilon_search,
            metric=metric, steps=steps,
        )  # fmt: skip
        note = f"publish safepub {name} ε={epsilon:g} δ={delta:g} → {output.name}"
        reservation = database.ledger.reserve(
            OWNER_ACCOUNT, database.name, epsilon=epsilon, delta=delta, note=note, draws=[("table", name)]
        )
        try:
            published = safepub(
                frame, columns, given, epsilon=epsilon, delta=delta, epsilon_search=epsilon_search,
                metric=metric, steps=steps, rng=database.noise_source,
            )  # fmt: skip
        finally:
            reservation.commit()  # the data was read: charged even if the run failed
        published.table.to_csv(output, index=False)
        body = publication_report(frame, published, given) if report or png else None
        if report is not None and body is not None:
            report.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if png is not None and body is not None:
            report_png(body, png)
        left = database.budget(OWNER_ACCOUNT)
    finally:
        database.close()
    p = published.params
    out = console()
    out.print(
        f"published {len(published.table):,} of {len(frame):,} rows of {name!r} to {output} "
        f"(k = {p.k}, β = {p.beta:.3f}, node {published.node})",
        markup=False,
        highlight=False,
    )
    out.print(
        f"charged ε={epsilon:g}, δ={delta:g} to {OWNER_ACCOUNT!r} "
        f"(left: ε={float(left.epsilon_remaining):g}, δ={float(left.delta_remaining):g})",
        markup=False,
        highlight=False,
    )
    sys.stdout.flush()
