"""``python -m bench.server``: privdb's server under load, beside the embedded API (bench/server)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench.harness import data, machine, report
from bench.server.load import Bar, Cell, Embedded, http_floor, run_load, run_sequential, running_server
from bench.server.report import (
    COLUMNS,
    EMBEDDED_COLUMNS,
    cell_rows,
    embedded_rows,
    floor_text,
    machine_line,
    markdown,
    stage_columns,
    stage_rows,
    targets,
)
from bench.server.spec import LOADS, QUERIES, QUICK_ROWS, ROUNDS, SETTINGS, TABLE, Epsilons
from bench.server.stages import Stages, filesystem, fsync_ms, run_embedded, stage_times, try_costs


def main() -> None:
    parser = argparse.ArgumentParser(description="privdb's server under load, beside the embedded API.")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the table (default 1M)")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed window per load (default 5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds before it (default 1)")
    parser.add_argument(
        "--embedded", type=int, default=60, help=f"queries per side in each of {ROUNDS} rounds (default 60)"
    )
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--quick", action="store_true", help=f"smoke run on {QUICK_ROWS:,} rows; prints only")
    args = parser.parse_args()

    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from privdb.data.census import generate
    from privdb.database import Database

    n = QUICK_ROWS if args.quick else args.rows
    seconds, warmup, n_embedded = args.seconds, args.warmup, args.embedded
    if args.quick:
        seconds, warmup, n_embedded = min(seconds, 1.5), min(warmup, 0.5), min(n_embedded, 10)
    console = report.console()
    metadata = data.census_metadata()
    load = machine.load()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-server-", dir="/var/tmp"))
    cells: list[Cell] = []
    embedded: list[Embedded] = []
    stages: list[Stages] = []
    floor: list[float] = []
    tries: dict[str, float] = {}
    try:
        fsync, fs = fsync_ms(work), filesystem(work)
        console.print(f"Generating {n:,} rows …")
        frame = generate(n)
        chosen = {setting: metadata[setting] for setting in args.settings}
        tokens = data.setting_databases(work, {TABLE: frame}, chosen, epsilon=1e9)
        epsilons = {setting: Epsilons() for setting in args.settings}
        del frame
        columns = [TextColumn("{task.description:<46}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%")]
        with Progress(*columns, TimeRemainingColumn(), console=console) as progress:
            bar = Bar(progress, len(args.settings) * len(LOADS) * len(QUERIES) * (warmup + seconds))
            for setting in args.settings:
                path, eps = work / setting, epsilons[setting]
                pairs = [Embedded(setting, query) for query in QUERIES]
                for r in range(ROUNDS):
                    bar.say(f"{setting}: embedded API vs server, round {r + 1}")
                    for e in pairs:
                        e.latencies += run_embedded(path, e.query, eps, n_embedded)
                    with running_server(path, 1, work / "server.log") as server:
                        for e in pairs:
                            e.server += run_sequential(server.url, tokens[setting], e.query, eps, n_embedded)
                embedded += pairs
                bar.say(f"{setting}: stages")
                with Database(path) as db:
                    if setting == "row" or not tries:
                        tries = try_costs(db, 30)
                    for query in QUERIES:
                        ms, raw = stage_times(db, tokens[setting], query, eps, 50)
                        stages.append(Stages(setting, query, ms, raw))
                for workers in sorted({w for w, _ in LOADS}):
                    with running_server(path, workers, work / "server.log") as server:
                        if not floor:
                            floor = http_floor(server.url, 300)
                        for query in QUERIES:
                            for clients in (c for w, c in LOADS if w == workers):
                                bar.say(f"{setting} {query.key}: {workers} worker(s), {clients} client(s)")
                                cell = Cell(setting, query, workers, clients, seconds)
                                cells.append(run_load(server, tokens[setting], cell, eps, warmup, bar.tick))
                                bar.next(warmup + seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    title = f"privdb serve on {n:,} rows: {seconds:g} s per load after {warmup:g} s warm-up"
    table = report.rich_table(title, COLUMNS, cell_rows(cells), right=2)
    side_title = "embedded API against the server at one client (ms)"
    side = report.rich_table(side_title, EMBEDDED_COLUMNS, embedded_rows(embedded), right=2)
    parts_title = "one query by stage, median ms (one thread, no HTTP)"
    parts = report.rich_table(parts_title, stage_columns(stages), stage_rows(stages), right=2)
    notes = [line.replace("**", "") for line in targets(cells, embedded)]
    console.print(
        table,
        side,
        parts,
        sep="\n",
    )
    console.print(
        f"HTTP floor (GET /healthz): {floor_text(floor)}",
        f"fsync ({fs}): {fsync}",
        machine_line(),
        f"load average before: {load}",
        sep="\n",
    )
    console.print(*notes, sep="\n")
    if not args.quick:
        setup = {
            "machine": machine_line(),
            "load": load,
            "rows": n,
            "seconds": seconds,
            "warmup": warmup,
            "fsync": fsync,
            "fs": fs,
            "embedded": n_embedded,
            "tries": tries,
        }
        report.write_section("server", markdown(cells, embedded, stages, floor, setup))
        console.print(f"Wrote the server section of {report.DOC}")


if __name__ == "__main__":
    main()
