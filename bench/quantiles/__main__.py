"""``python -m bench.quantiles``: MEDIAN and QUANTILE against DuckDB, SmartNoise SQL and OpenDP
(bench/quantiles)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench.harness import ROOT, machine, report
from bench.harness.data import census_metadata, setting_databases
from bench.harness.peers import SMARTNOISE_SQL
from bench.harness.query import EPS
from bench.quantiles.measure import (
    ErrorRow,
    Grid,
    TimeRow,
    Truth,
    grid_of,
    measure_time,
    privdb_errors,
    smartnoise_seconds,
)
from bench.quantiles.opendp import WhatIf, opendp_errors, opendp_quantile, time_opendp, what_if_sensitivity
from bench.quantiles.report import (
    ERROR_COLUMNS,
    PART_COLUMNS,
    TIME_COLUMNS,
    error_rows,
    machine_text,
    markdown,
    noise_line,
    part_rows,
    peer_notes,
    targets,
    time_rows,
    what_if_lines,
)
from bench.quantiles.spec import EXTREMES, QUICK_REPS, QUICK_ROWS, SETTINGS, STATS, SUBSET_TABLE, TABLE
from bench.sql.spec import SMARTNOISE_DELTA, smartnoise_metadata


def main() -> None:
    parser = argparse.ArgumentParser(
        description="MEDIAN and QUANTILE: privdb against DuckDB, SmartNoise, OpenDP."
    )
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in the table (default 10M)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run on {QUICK_ROWS:,} rows; prints only")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (default 5)")
    parser.add_argument("--error-reps", type=int, default=100, help="releases per error cell (default 100)")
    parser.add_argument("--subset-rows", type=int, default=10_000, help="people in the small table")
    parser.add_argument(
        "--subset-reps",
        type=int,
        default=1000,
        help="releases per error cell on the small table (default 1000)",
    )
    args = parser.parse_args()

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from privdb.data.census import generate
    from privdb.database import Database

    n = QUICK_ROWS if args.quick else args.rows
    if args.quick:
        args.error_reps = min(args.error_reps, QUICK_REPS)
        args.subset_reps = min(args.subset_reps, 4 * QUICK_REPS)
    subset = min(args.subset_rows, n)
    console = report.console()
    metadata = census_metadata()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-quantiles-"))
    times: list[TimeRow] = []
    errors: list[ErrorRow] = []
    what_ifs: list[WhatIf] = []
    notes: dict[str, str] = {}

    def progress() -> Progress:
        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )

    try:
        console.print(f"Generating {n:,} rows …")
        frame = generate(n)
        small = frame[frame["pid"] <= subset]
        columns = {c: frame[c].to_numpy() for c in ("age", "income")}
        dbs = {}
        setting_databases(work, {TABLE: frame, SUBSET_TABLE: small}, metadata)
        del frame
        console.print(f"SmartNoise SQL ({SMARTNOISE_SQL.venv.relative_to(ROOT)}): its percentiles …")
        peer = SMARTNOISE_SQL.run(
            "bench.quantiles.smartnoise",
            {
                "db": str(work / "row" / "data.duckdb"),  # closed: the worker reads it, then privdb reopens
                "epsilon": EPS,
                "delta": SMARTNOISE_DELTA,
                "repeats": args.repeats,
                "forms": {s.key: s.smartnoise_forms() for s in STATS} | {"MIN/MAX": EXTREMES},
                "settings": list(SETTINGS),
                "metadata": {s: smartnoise_metadata(metadata[s], s) for s in SETTINGS},
            },
        )
        for setting in SETTINGS:
            dbs[setting] = Database(work / setting)

        with progress() as bar:
            task = bar.add_task("time: raw DuckDB, privdb, stages", total=len(SETTINGS) * len(STATS))
            for setting, db in dbs.items():
                for stat in STATS:
                    bar.update(task, description=f"time: {SETTINGS[setting]}, {stat.key}")
                    row = measure_time(db, setting, stat, args.repeats)
                    row.smartnoise = smartnoise_seconds(peer, setting, stat.key)
                    times.append(row)
                    bar.advance(task)

        grids = {stat.key: grid_of(dbs["row"], stat) for stat in STATS}
        console.print("OpenDP make_private_quantile on the whole column …")
        lists = {c: (v.tolist()) for c, v in columns.items()}
        with progress() as bar:
            task = bar.add_task("time: OpenDP", total=len(STATS))
            for stat in STATS:
                seconds = time_opendp(lists[stat.column], stat, grids[stat.key])
                for r in times:
                    if r.stat == stat and r.setting == "row":
                        r.opendp = seconds
                bar.advance(task)

        reps = {"table": args.error_reps, "subset": args.subset_reps}
        datasets = [
            ("table", TABLE, columns),
            ("subset", SUBSET_TABLE, {c: v[:subset] for c, v in columns.items()}),
        ]
        total = sum(reps.values()) * len(STATS) * (len(SETTINGS) + 1)
        with progress() as bar:
            task = bar.add_task("error at ε = 1", total=total)
            for data, table, cols in datasets:
                for stat in STATS:
                    grid = grids[stat.key]
                    truth = Truth(cols[stat.column])
                    exact = float(dbs["row"].backend.fetch(stat.raw(table)).to_numpy()[0, 0])
                    grid_rank = min(truth.rank_error(float(c), stat.q) for c in _near(grid, exact))
                    per_setting = {}
                    for setting, db in dbs.items():
                        bar.update(task, description=f"error: {data}, {stat.key}, privdb {setting}")
                        per_setting[setting] = privdb_errors(
                            db, stat, table, truth, exact, reps[data], lambda: bar.advance(task)
                        )
                    bar.update(task, description=f"error: {data}, {stat.key}, OpenDP")
                    values = lists[stat.column] if data == "table" else cols[stat.column].tolist()
                    draw, how, _ = opendp_quantile(values, stat, grid)
                    notes[f"{data} ({len(values):,} rows)"] = how
                    odp = opendp_errors(draw, stat, truth, exact, reps[data], lambda: bar.advance(task))
                    errors.append(ErrorRow(data, truth.n, stat, exact, grid_rank, per_setting, odp, how))
        console.print("privdb's mechanism with the add/remove sensitivity m·max(q, 1 − q) (simulation) …")
        subset_truth = {c: Truth(v[:subset]) for c, v in columns.items()}
        what_ifs = [
            what_if_sensitivity(
                dbs["row"], stat, SUBSET_TABLE, subset_truth[stat.column], args.subset_reps * 2
            )
            for stat in STATS
            if stat.column == "income"
        ]
        for db in dbs.values():
            db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    console.print(
        report.rich_table(
            f"MEDIAN and QUANTILE on {n:,} rows, ε = 1 (best of {args.repeats})",
            TIME_COLUMNS,
            time_rows(times),
            2,
        ),
        report.rich_table("privdb by stage (s)", PART_COLUMNS, part_rows(times), 2),
        report.rich_table(
            f"Mean absolute error at ε = 1 ({args.error_reps} releases; {args.subset_reps} on the subset)",
            ERROR_COLUMNS,
            error_rows(errors),
            2,
        ),
        machine_text(peer),
        noise_line(times),
        *(
            report.plain(line)
            for line in (
                *what_if_lines(what_ifs, args.subset_rows, args.subset_reps * 2),
                *targets(times, errors),
                *peer_notes(peer, notes, machine.version("opendp")),
            )
        ),
        sep="\n",
    )
    if not args.quick:
        report.write_section("quantiles", markdown(times, errors, what_ifs, peer, notes, n, args))
        console.print(f"Wrote the quantiles section of {report.DOC}")


def _near(grid: Grid, value: float) -> list[float] | list[int]:
    """The candidates around ``value``: the best one is among them (ranks are monotone in the candidate)."""
    import bisect

    i = bisect.bisect_left(grid.candidates, value)
    return grid.candidates[max(0, i - 2) : i + 3]


if __name__ == "__main__":
    main()
