"""``privdb check | risk``: measure any table, e.g. a release someone published: its k, l and t, and its
re-identification risk (prosecutor, journalist, marketer). Nothing is written or charged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from privdb.cli.core import app, console, friendly
from privdb.cli.options import TableOrJson
from privdb.cli.table_options import (
    BetaOption,
    DeltaDisclosureOption,
    EnhancedBetaOption,
    EstimatorOption,
    FixLabelsOption,
    HierarchiesOption,
    KMapEstimatorOption,
    PopulationOption,
    QiOption,
    SamplingFractionOption,
    SensitiveOption,
    SignificanceOption,
    Steps,
    hierarchy_frames,
    qi_columns,
)
from privdb.errors import InvalidParameter


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
    beta: BetaOption = None,
    enhanced_beta: EnhancedBetaOption = None,
    delta_disclosure: DeltaDisclosureOption = None,
    delta_presence: Annotated[
        str | None, typer.Option(help="δ-presence 'δmin,δmax' against --population")
    ] = None,
    k_map: Annotated[
        int | None, typer.Option(help="k-map: against --population, or estimated from --sampling-fraction")
    ] = None,
    k_map_estimator: KMapEstimatorOption = "poisson",
    significance: SignificanceOption = 0.01,
    average_risk: Annotated[
        float | None, typer.Option(help="threshold of the average re-identification risk")
    ] = None,
    sample_uniqueness: Annotated[float | None, typer.Option(help="threshold of sample uniqueness")] = None,
    population_uniqueness: Annotated[
        float | None, typer.Option(help="threshold of estimated population uniqueness (--sampling-fraction)")
    ] = None,
    estimator: EstimatorOption = "dankar",
    population: PopulationOption = None,
    sampling_fraction: SamplingFractionOption = None,
    output_format: TableOrJson = "table",
) -> None:
    """Measure k, l and t (and re-identification risk) of any table; with model options, say whether
    β-likeness, δ-disclosure, δ-presence, k-map and the risk thresholds hold, and the worst value.

    δ-presence and k-map join --population to the release through --hierarchies (the ones the release was
    made with): a release of a hierarchy's labels is refused without them."""
    from privdb.anonymize.criteria import Models, evaluate
    from privdb.anonymize.model_spec import check_model_inputs
    from privdb.anonymize.report import read_table, table_report

    models = Models(
        beta=beta,
        enhanced_beta=enhanced_beta,
        delta_disclosure=delta_disclosure,
        delta_presence=delta_pair(delta_presence) if delta_presence is not None else None,
        k_map=k_map,
        k_map_estimator=k_map_estimator,
        significance=significance,
        average_risk=average_risk,
        sample_uniqueness=sample_uniqueness,
        population_uniqueness=population_uniqueness,
        estimator=estimator,
    )
    check_model_inputs(models, sensitive, population, sampling_fraction)  # before reading anything

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
        if models.any:
            people = read_table(population)[0] if population is not None else None
            found = evaluate(
                frame,
                columns,
                models,
                sensitive=sensitive,
                population=people,
                sampling_fraction=sampling_fraction,
                hierarchies=loaded,
            )
            body["models"] = [r.to_dict() for r in found]
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
    for m in body.get("models", []):
        shown = "—" if m["value"] is None else f"{m['value']:.4g}"
        table.add_row(m["model"], f"{'holds' if m['holds'] else 'fails'} (worst {shown})")
    console().print(table)
    if body.get("coverage") and not body["coverage"]["ok"]:
        console().print(Text.assemble(("not covered", "red"), f": {body['coverage']['by_column']}"))


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
    sampling_fraction: Annotated[
        float | None,
        typer.Option(help="the table's share of its population: adds the population-uniqueness estimates"),
    ] = None,
    hierarchies: HierarchiesOption = None,
    fix_labels: FixLabelsOption = False,
    output_format: TableOrJson = "table",
) -> None:
    """Re-identification risk of a table: prosecutor (max, average), journalist, marketer, sample uniques.

    Journalist and marketer risk need a population model: a population table (--population), a
    population size (--population-size, the sampling-fraction model), or neither (then they equal the
    prosecutor risk: the table is its own population). The output names the model used. With
    --sampling-fraction (or --population-size: π = n/N) it adds the share of the population estimated
    unique: Pitman, Zayatz, SNB and Dankar's rule, as ARX computes them.

    --population is joined to the release through --hierarchies (the ones the release was made with), so a
    category label covers the population values under it; a release of such labels is refused without them.
    """
    from privdb.anonymize._classes import group
    from privdb.anonymize.report import read_table
    from privdb.anonymize.risk import risk
    from privdb.anonymize.uniqueness import population_uniqueness

    if sampling_fraction is not None and population_size is not None:
        raise InvalidParameter("give --sampling-fraction or --population-size, not both")
    if hierarchies is not None and population is None:
        raise InvalidParameter("--hierarchies joins --population to the release: give --population too")
    columns = qi_columns(qi)
    loaded = hierarchy_frames(hierarchies, columns, fix_labels)
    frame, _ = read_table(source)
    people = read_table(population)[0] if population is not None else None
    classes = group(frame, columns)
    body = risk(
        frame, columns, people, population_size=population_size, classes=classes, hierarchies=loaded
    ).to_dict()
    pi = sampling_fraction
    if pi is None and population_size is not None:
        pi = classes.n / population_size
    estimates = population_uniqueness(classes.sizes, pi).to_dict() if pi is not None else None
    if estimates is not None:
        body["population_uniqueness"] = estimates
    if output_format == "json":
        sys.stdout.write(json.dumps(body) + "\n")
        return
    table = Table(title=f"re-identification risk of {source.name}", caption=f"quasi-identifiers: {qi}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in body.items():
        if isinstance(value, dict):
            continue
        shown = (
            f"{value:.4g}" if isinstance(value, float) else value if isinstance(value, str) else f"{value:,}"
        )
        table.add_row("population model" if key == "model" else key.replace("_", " "), shown)
    for key, value in (estimates or {}).items():
        if key not in ("sample_uniques", "sampling_fraction"):
            shown = str(value) if isinstance(value, str) or value is None else f"{value:.4g}"
            table.add_row(f"population uniques ({key.replace('_', ' ')})", shown)
    console().print(table)


def delta_pair(text: str) -> tuple[float, float]:
    """'lo,hi' as two numbers."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:  # also a wrong count of parts
        raise InvalidParameter(f"--delta-presence is 'δmin,δmax', e.g. 0,0.5 (got {text!r})") from None
    return lo, hi
