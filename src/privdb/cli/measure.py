"""``privdb check | risk``: measure any table, e.g. a release someone published: its k, l and t, and its
re-identification risk (prosecutor, journalist, marketer). Nothing is written or charged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson
from privdb.cli.table_options import (
    FixLabelsOption,
    HierarchiesOption,
    QiOption,
    SensitiveOption,
    Steps,
    hierarchy_frames,
    qi_columns,
)


@app.command()
@friendly
def check(
    source: Annotated[
        Path, typer.Argument(help="any table, e.g. a release someone published (CSV or Parquet)")
    ],
    qi: QiOption,
    sensitive: SensitiveOption = None,
    distance: Annotated[
        str, typer.Option(help="t distance: auto, equal, ordered, hierarchical, variational or kl")
    ] = "auto",
    hierarchies: HierarchiesOption = None,
    original: Annotated[
        Path | None, typer.Option(help="the original table, same rows: check every value is covered")
    ] = None,
    fix_labels: FixLabelsOption = False,
    output_format: TableOrJson = "table",
) -> None:
    """Measure k, l and t (and re-identification risk) of any table."""
    from privdb.anonymize.report import read_table, table_report

    columns = qi_columns(qi)
    with Steps(2) as steps:
        steps.next(f"reading {source.name}")
        frame, _ = read_table(source)
        loaded = hierarchy_frames(hierarchies, [*columns, *([sensitive] if sensitive else [])], fix_labels)
        steps.next(f"checking {len(frame):,} records")
        body = table_report(
            frame,
            columns,
            sensitive,
            distance=distance,
            hierarchy=(loaded or {}).get(sensitive) if sensitive else None,
            original=read_table(original)[0] if original is not None else None,
            hierarchies=loaded,
        )
    if output_format == "json":
        sys.stdout.write(json.dumps(body, default=str) + "\n")
        return
    table = Table(title=f"{source.name}: {body['records']:,} records, {body['classes']:,} classes")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("k", body["achieved"]["k"]),
        ("l (distinct)", body["achieved"]["l"]),
        ("l (entropy)", body["l_entropy"]),
        (f"recursive c for l = {body['recursive']['l']}", body["recursive"]["c"]),
        (f"t ({body['distance']})", body["achieved"]["t"]),
        ("suppressed records", body["suppressed"]),
        ("prosecutor risk, max", body["risk"]["prosecutor_max"]),
        ("prosecutor risk, avg", body["risk"]["prosecutor_avg"]),
        ("sample uniques", body["risk"]["sample_uniques"]),
    ]
    if "coverage" in body:
        rows.append(("values not covering their record", body["coverage"]["violations"]))
    for name, value in rows:
        if value is not None:
            table.add_row(name, f"{value:.4g}" if isinstance(value, float) else str(value))
    console().print(table)
    if body.get("coverage") and not body["coverage"]["ok"]:
        console().print(f"[red]not covered[/red]: {body['coverage']['by_column']}")


@app.command("risk")
@friendly
def risk_command(
    source: Annotated[Path, typer.Argument(help="any table (CSV or Parquet)")],
    qi: QiOption,
    population: Annotated[
        Path | None,
        typer.Option(
            help="a table of the population (raw values, the same columns): journalist and marketer "
            "risk count the population records each class covers"
        ),
    ] = None,
    population_size: Annotated[
        int | None,
        typer.Option(
            help="the population's size N: the table is taken as a uniform sample of it, each "
            "class's population count estimated as its size times N/n"
        ),
    ] = None,
    output_format: TableOrJson = "table",
) -> None:
    """Re-identification risk of a table: prosecutor (max, average), journalist, marketer, sample uniques.

    Journalist and marketer risk need a population model: a population table (--population), a
    population size (--population-size, the sampling-fraction model), or neither (then they equal the
    prosecutor risk: the table is its own population). The output names the model used.
    """
    from privdb.anonymize.report import read_table
    from privdb.anonymize.risk import risk

    columns = qi_columns(qi)
    frame, _ = read_table(source)
    people = read_table(population)[0] if population is not None else None
    body = risk(frame, columns, people, population_size=population_size).to_dict()
    if output_format == "json":
        sys.stdout.write(json.dumps(body) + "\n")
        return
    table = Table(title=f"re-identification risk of {source.name}", caption=f"quasi-identifiers: {qi}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in body.items():
        shown = (
            f"{value:.4g}" if isinstance(value, float) else value if isinstance(value, str) else f"{value:,}"
        )
        table.add_row("population model" if key == "model" else key.replace("_", " "), shown)
    console().print(table)
