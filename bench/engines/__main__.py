"""``python -m bench.engines``: DP-SELECT on each engine, privdb against the raw query (bench/engines)."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.engines.load import Row, duckdb_table, measure, parquet_file, postgres_table, sqlite_file
from bench.engines.report import (
    COLUMNS,
    ENGINES,
    PART_COLUMNS,
    big_lines,
    machine_line,
    markdown,
    part_rows,
    table_rows,
    targets,
)
from bench.engines.spark_big import run_spark_big
from bench.harness import ROOT, machine, report
from bench.harness.data import row_metadata
from bench.harness.query import ANALYST
from bench.sql.spec import QUERIES

QUICK_ROWS = 200_000
QUICK_BIG_ROWS = 2_000_000


def load_file(name: str, path: Path) -> ModuleType:
    """A file as a module (tests/pgfixture.py: ``tests`` is no package), imported once."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description="DP-SELECT on each engine: privdb against the raw query.")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows per engine (default 10M)")
    for key in ("sqlite", "postgres", "spark"):
        parser.add_argument(f"--{key}-rows", type=int, default=None, help=f"rows for {key} (default --rows)")
    parser.add_argument("--big-rows", type=int, default=100_000_000, help="Spark at scale (0: skip)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up (default 3)")
    parser.add_argument("--big-repeats", type=int, default=2, help="privdb Q1 runs at scale (default 2)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of engines")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows; prints only")
    parser.add_argument(
        "--user-rows", type=int, default=0,
        help="only the user-level forms on Spark local[2] against Spark SQL (bench.engines.spark_user: AVG "
        "with a unit, a join on the unit, a per-unit subquery, COUNT DISTINCT, MEDIAN) at this many rows",
    )  # fmt: skip
    args = parser.parse_args()
    if args.user_rows:
        argv = ["--rows", str(args.user_rows), "--repeats", str(args.repeats)]
        subprocess.run([sys.executable, "-m", "bench.engines.spark_user", *argv], check=True)
        return

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from privdb.data.census import METADATA, generate
    from privdb.database import Database

    pgfixture = load_file("pgfixture", ROOT / "tests" / "pgfixture.py")  # the tests' throw-away cluster
    n = QUICK_ROWS if args.quick else args.rows
    sizes = {"duckdb": n}
    for key in ("sqlite", "postgres", "spark"):
        sizes[key] = min(n, getattr(args, f"{key}_rows") or n)
    big_rows = (QUICK_BIG_ROWS if args.quick else args.big_rows) if args.big_rows else 0
    chosen = [e.strip() for e in args.engines.split(",") if e.strip()]
    console = report.console()
    metadata = row_metadata(METADATA)
    load = machine.load(", ", 1)
    versions = {
        "privdb": machine.version("privdb"),
        "duckdb": machine.version("duckdb"),
    }
    versions |= {"SQLite": sqlite3.sqlite_version, "psycopg": machine.version("psycopg")}
    versions |= {"pyspark": machine.version("pyspark"), "Java": machine.java_version()}
    versions |= {"pyarrow": machine.version("pyarrow")}
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-engines-"))
    rows: list[Row] = []
    loads: dict[str, float] = {}
    big: dict[str, Any] | None = None
    parquet_mib = parquet_s = 0.0
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    try:
        with progress, ExitStack() as stack:
            task = progress.add_task(f"generating {n:,} rows", total=None)
            frame = generate(n)
            progress.update(task, total=1, completed=1)
            db = Database(work / "db")
            db.grant(ANALYST, epsilon=1e9, delta=1e-3)

            def loading(key: str, body: Callable[..., object], *args: Any) -> None:
                t = progress.add_task(f"loading {ENGINES[key]}", total=sizes[key])
                t0 = time.perf_counter()
                body(*args, lambda k: progress.advance(t, k))
                loads[key] = time.perf_counter() - t0

            for key in [e for e in ENGINES if e in chosen]:
                part = frame if sizes[key] == n else frame.iloc[: sizes[key]]
                table = f"people_{key}"
                if key == "duckdb":
                    loading(key, duckdb_table, db, table, part)
                    db.set_metadata(table, metadata)
                elif key == "sqlite":
                    path = work / "people.db"
                    loading(key, sqlite_file, path, part)
                    db.attach(table, f"sqlite:///{path}", source="people", metadata=metadata)
                elif key == "postgres":
                    cluster = ExitStack()
                    stack.push(cluster)
                    url = cluster.enter_context(pgfixture.postgres_cluster())
                    loading(key, postgres_table, url, part)
                    db.attach(table, url, source="people", metadata=metadata)
                    backend, _ = db.backend_for(table)
                    versions["PostgreSQL"] = str(backend.fetch("SHOW server_version").iloc[0, 0]).split()[0]
                else:
                    path = work / "people.parquet"
                    loading(key, parquet_file, path, part, 1)
                    db.attach(table, "spark://local[2]", source=str(path), metadata=metadata)
                t = progress.add_task(f"{ENGINES[key]}: Q1–Q3, raw and privdb", total=len(QUERIES))
                for query in QUERIES:
                    rows.append(measure(db, table, key, sizes[key], query, args.repeats))
                    progress.advance(t)
                if key == "postgres":
                    db._engines.pop(url).close()  # before the cluster goes away
                    cluster.close()
            db.close()
            if big_rows:
                copies = max(1, big_rows // n)
                path = work / "big.parquet"
                t = progress.add_task(f"writing {copies * n:,} rows of Parquet", total=copies * n)
                t0 = time.perf_counter()
                parquet_file(path, frame, copies, lambda k: progress.advance(t, k))
                parquet_s, parquet_mib = time.perf_counter() - t0, path.stat().st_size / 2**20
                del frame
                progress.add_task(f"Spark local[2]: Q1 on {copies * n:,} rows (subprocess)", total=None)
                big = run_spark_big(path, copies * n, args.big_repeats, work)
                big_rows = copies * n
    finally:
        shutil.rmtree(work, ignore_errors=True)

    title = f"DP-SELECT, row-level, ε = 1 (best of {args.repeats})"
    table_out = report.rich_table(title, COLUMNS, table_rows(rows), right=lambda i: i >= 3 or i == 1)
    parts = report.rich_table("privdb by stage (s)", PART_COLUMNS, part_rows(rows), right=2)
    extra = {
        "versions": versions,
        "load": load,
        "loads": ", ".join(f"{ENGINES[k]} {v:.1f} ({sizes[k]:,} rows)" for k, v in loads.items()),
        "big_rows": big_rows,
        "parquet_mib": parquet_mib,
        "parquet_s": parquet_s,
    }
    notes = [
        line.replace("**", "")
        for line in (*targets(rows, big), *big_lines(big, big_rows, parquet_mib, parquet_s))
    ]
    console.print(table_out, parts, machine_line(versions), f"loads (s): {extra['loads']}", *notes, sep="\n")
    if not args.quick:
        report.write_section("engines", markdown(rows, big, extra, args.repeats))
        console.print(f"Wrote the engines section of {report.DOC}")


if __name__ == "__main__":
    main()
