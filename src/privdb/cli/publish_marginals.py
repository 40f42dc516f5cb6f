"""``privdb publish histogram | synthetic``: the releases built from noisy marginals over the public domains
a table's metadata declares (a table of the database, or a file with ``--metadata``). Each is a command of
privdb.cli.publish's ``publish_app`` and pays as every release does (privdb.publish.charge).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from privdb.cli.core import console, friendly
from privdb.cli.publish import open_database, publish_app, served_hint
from privdb.cli.table_options import print_held_out
from privdb.errors import InvalidParameter

if TYPE_CHECKING:  # the engine is imported by the commands that run it, so `privdb --help` starts fast
    import pandas as pd

    from privdb.catalog.metadata import TableMeta
    from privdb.database import Database

__all__ = ["source_table"]


SourceArgument = Annotated[str, typer.Argument(metavar="IN", help="a table of --db, or a CSV/Parquet file")]
ReleaseEpsilon = Annotated[float, typer.Option(help="ε of the whole release")]
PublishDb = Annotated[
    Path | None,
    typer.Option("--db", help="the database whose ledger pays (and that holds IN, if IN is a table)"),
]
TableName = Annotated[
    str | None,
    typer.Option("--table", help="for a file IN: the table name it is charged to (default: its stem)"),
]
MetadataFile = Annotated[
    Path | None, typer.Option("--metadata", help="for a file IN: its metadata (public domains), as for load")
]


def source_table(
    db: Database, source: str, table: str | None, metadata: Path | None
) -> tuple[pd.DataFrame, TableMeta]:
    """IN as a frame and its metadata: a table of the database (its stored metadata), or a CSV/Parquet file
    with ``--metadata`` (charged as ``--table``, default the file's stem)."""
    from privdb.publish.service import table_rows

    if source in set(db.table_names()) or (not Path(source).exists() and metadata is None):
        meta = db.metadata(source)  # unknown_table with a suggestion when it is neither
        frame = table_rows(db, meta.name)
        return frame, meta
    from privdb.anonymize.tables import read_table
    from privdb.backends.duckdb import DuckDBBackend
    from privdb.catalog.metadata_file import load_metadata
    from privdb.catalog.metadata_spec import metadata_from_dict

    if metadata is None:
        raise InvalidParameter(
            f"{source!r} is a file: give its public domains with --metadata M.yaml (or load it with `privdb "
            "load` and publish the table)"
        )
    frame, _ = read_table(source)
    name = table or Path(source).stem
    scratch = DuckDBBackend(None)
    try:
        scratch.load_frame(name, frame)
        meta = metadata_from_dict(name, load_metadata(metadata, name), scratch.columns(name))
    finally:
        scratch.close()
    return frame, meta


def _writable(path: Path, what: str) -> None:
    if not path.parent.is_dir():
        raise InvalidParameter(f"{what} {str(path)!r}: folder {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise InvalidParameter(f"{what} {str(path)!r} is a folder; give a file name")


def _bins(specs: list[str]) -> dict[str, int]:
    out = {}
    for spec in specs:
        name, _, count = spec.partition("=")
        if not name or not count.isdigit():
            raise InvalidParameter(f"--bins {spec!r}: write COLUMN=N, e.g. --bins age=10")
        out[name.strip()] = int(count)
    return out


@publish_app.command("histogram")
@friendly
@served_hint
def histogram(
    source: SourceArgument,
    epsilon: ReleaseEpsilon,
    output: Annotated[Path, typer.Option("-o", "--output", help="the released counts, CSV")],
    db: PublishDb = None,
    columns: Annotated[
        list[str] | None,
        typer.Option("--columns", help="one marginal: a,b (1 to 3 columns); repeat for more"),
    ] = None,
    hierarchical: Annotated[
        str | None, typer.Option(help="one numeric column as a hierarchical histogram (Hay et al. 2010)")
    ] = None,
    branching: Annotated[int, typer.Option(help="the hierarchy's fan-out")] = 4,
    bins: Annotated[
        list[str] | None, typer.Option("--bins", help="COLUMN=N equal bins of a number's bounds")
    ] = None,
    delta: Annotated[float, typer.Option(help="δ (gaussian noise)")] = 0.0,
    noise: Annotated[Literal["laplace", "gaussian"], typer.Option(help="integer noise law")] = "laplace",
    method: Annotated[
        Literal["consistent", "noisefirst", "structurefirst"],
        typer.Option(
            help="consistent: least squares over the marginals; noisefirst: one 1-D histogram's noisy bins "
            "merged; structurefirst: one numeric column's bins grouped into --buckets chosen privately"
        ),
    ] = "consistent",
    buckets: Annotated[int | None, typer.Option(help="structurefirst: how many buckets (1..100)")] = None,
    count_bound: Annotated[
        int | None,
        typer.Option(help="structurefirst: public bound on any bin's count (default: the table's rows: N)"),
    ] = None,
    structure_share: Annotated[
        float, typer.Option(help="structurefirst: the share of ε spent choosing the buckets")
    ] = 0.5,
    table: TableName = None,
    metadata: MetadataFile = None,
    report: Annotated[Path | None, typer.Option(help="the utility report, JSON (for the owner)")] = None,
    png: Annotated[Path | None, typer.Option("--report-png", help="the release's chart (.png)")] = None,
) -> None:
    """DP marginals (or a hierarchical histogram) over public domains, consistent and non-negative, each
    cell with a 95% interval; charged to the table's lifetime budget and logged as the owner's release."""
    if db is None:
        raise InvalidParameter(
            "--db DIR: the database whose ledger pays for the release (every release is charged)"
        )
    _writable(output, "--output")
    if report is not None:
        _writable(report, "--report")
    if png is not None:
        _writable(png, "--report-png")
    marginals = [tuple(c.strip() for c in spec.split(",") if c.strip()) for spec in columns or []]
    from privdb.publish.service import HistogramOptions, publish_histogram

    with open_database(db) as database:
        frame, meta = source_table(database, source, table, metadata)
        options = HistogramOptions(
            epsilon=epsilon, marginals=tuple(marginals), hierarchical=hierarchical, branching=branching,
            bins=tuple(_bins(bins or []).items()), delta=delta, noise=noise, method=method, buckets=buckets,
            count_bound=count_bound, structure_share=structure_share,
        )  # fmt: skip
        released = publish_histogram(database, frame, meta, options)
    released.to_frame().to_csv(output, index=False)
    summary = {
        "epsilon": released.epsilon, "delta": released.delta, "noise": released.noise,
        "sensitivity": released.sensitivity, "marginals": ["|".join(c) for c, _ in released.marginals],
        "hierarchical": released.hierarchical, "structure": released.structure,
        "cells": sum(len(f) for _, f in released.marginals),
        "utility": {"tv_distance": released.utility,
                    "note": "total-variation distance to the private data's marginals: for the owner only"},
    }  # fmt: skip
    if report is not None:
        report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if png is not None:
        from privdb.publish.histogram_report import histogram_png

        histogram_png(released, png)
    console().print(
        f"released {summary['cells']:,} cells of {len(released.marginals)} marginal(s) to {output} · "
        f"ε {epsilon:g}, δ {delta:g} charged to table {meta.name!r}"
    )


@publish_app.command("synthetic")
@friendly
@served_hint
def synthetic(
    source: SourceArgument,
    epsilon: ReleaseEpsilon,
    delta: Annotated[float, typer.Option(help="δ of the whole release (zCDP measurements), e.g. 1e-9")],
    rows: Annotated[int, typer.Option(help="how many synthetic rows to write")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the synthetic rows, CSV")],
    db: PublishDb = None,
    columns: Annotated[
        str | None, typer.Option(help="the columns to synthesise, a,b,c (default: all but identifiers)")
    ] = None,
    bins: Annotated[
        list[str] | None, typer.Option("--bins", help="COLUMN=N equal bins of a number's bounds")
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            help="the synthesizer: mst (McKenna et al. 2021), aim (McKenna et al. 2022) or mwem "
            "(Hardt et al. 2012, small domains)"
        ),
    ] = "mst",
    table: TableName = None,
    metadata: MetadataFile = None,
    report: Annotated[Path | None, typer.Option(help="the utility report, JSON (for the owner)")] = None,
    plot: Annotated[
        Path | None, typer.Option("--report-png", "--plot", help="the utility report as a PNG (owner)")
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="report: a column to predict (train on synthetic, test on held-out real rows: the release "
            "is then made from the other rows only)"
        ),
    ] = None,
    save_model: Annotated[
        Path | None,
        typer.Option("--save-model", help="also save the fitted model to this folder (`privdb sample` it)"),
    ] = None,
    nulls: Annotated[bool, typer.Option("--nulls/--no-nulls", help="a NULL is a value of its own")] = True,
    bounds_share: Annotated[
        float, typer.Option(help="share of the budget for DP bounds of numbers that declare none, e.g. 0.05")
    ] = 0.0,
    workload: Annotated[
        str | None, typer.Option(help="aim/mwem: the marginals of interest, 'a,b;c,d'")
    ] = None,
    degree: Annotated[int, typer.Option(help="aim/mwem: every DEGREE-way marginal (no --workload)")] = 3,
    compress: Annotated[
        bool, typer.Option("--compress/--no-compress", help="mst: merge rare cells (noisy count < 3σ)")
    ] = True,
    holdout: Annotated[float, typer.Option(help="with --target: the share of rows held out")] = 0.3,
) -> None:
    """DP synthetic rows from noisy marginals (MST, AIM or MWEM), with a utility report; charged to the
    table's lifetime budget and logged as the owner's release."""
    from privdb.publish.service import publish_synthetic
    from privdb.publish.synthetic import check_synthetic, options_of

    for path, what in ((output, "--output"), (report, "--report"), (plot, "--report-png")):
        if path is not None:
            _writable(path, what)
    from privdb.publish.evaluation import check_share, split_rows

    check_share(holdout)
    chosen = [c.strip() for c in (columns or "").split(",") if c.strip()] or None
    marginals = [[c.strip() for c in m.split(",") if c.strip()] for m in (workload or "").split(";")]
    options = {"method": method, "columns": chosen, "bins": _bins(bins or []), "nulls": nulls,
               "bounds_share": bounds_share, "workload": [m for m in marginals if m], "degree": degree,
               "compress": compress}  # fmt: skip
    with open_database(db) as database:
        frame, meta = source_table(database, source, table, metadata)
        checked = check_synthetic(meta, epsilon=epsilon, delta=delta, rows=rows, options=options_of(options))
        names = [d.column for d in checked]
        if target is not None and target not in names:
            raise InvalidParameter(f"--target {target!r} is not a synthesised column: {', '.join(names)}")
        split = None if target is None else split_rows(frame, holdout, unit=meta.privacy_unit)
        released = publish_synthetic(
            database, split.train if split else frame, meta,
            {"epsilon": epsilon, "delta": delta, "rows": rows, **options},
            f"publish synthetic {source} --rows {rows} ({method})", save_model,
        )  # fmt: skip
    released.frame.to_csv(output, index=False)
    if report is not None or plot is not None or split is not None:
        from privdb.publish.synthetic import encode
        from privdb.publish.utility import plot as draw
        from privdb.publish.utility import utility_report

        sizes = [len(d.labels) for d in released.domains]
        held_out = None if split is None else (encode(split.train, released.domains),
                                               encode(split.test, released.domains))  # fmt: skip
        utility = utility_report(
            encode(frame, released.domains), released.codes, released.columns, sizes, target, held_out
        )
        if split is not None:
            utility["classifier"]["held_out"] = split.describe()
        summary = {"method": released.method, "epsilon": epsilon, "delta": delta, "rho": released.rho,
                   "rows": rows, "columns": released.columns, "sensitivity": released.sensitivity,
                   "measured": ["|".join(c) for c in released.cliques], "utility": utility,
                   "bounds": {c: list(b) for c, b in released.bounds.items()}}  # fmt: skip
        if released.method == "aim":
            summary["rounds"] = released.rounds
        if report is not None:
            report.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        if plot is not None:
            draw(utility, plot, f"privdb publish synthetic ({released.method}) · ε {epsilon:g}, δ {delta:g}")
    saved = f" · model saved to {save_model}" if save_model is not None else ""
    console().print(
        f"wrote {rows:,} synthetic rows of {len(released.columns)} columns to {output} · ε {epsilon:g}, "
        f"δ {delta:g} charged to table {meta.name!r}{saved}"
    )
    if split is not None:
        scores = ("train_synthetic_test_real", "train_real_test_real")
        print_held_out(split, utility["classifier"], "synthetic", scores)
