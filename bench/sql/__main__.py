"""``python -m bench.sql``: privdb's DP-SELECT against raw DuckDB and SmartNoise SQL (bench/sql/__init__)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from bench.harness import ROOT, data, report
from bench.harness.peers import SMARTNOISE_SQL
from bench.harness.query import EPS
from bench.sql.measure import Row, measure_privdb
from bench.sql.report import COLUMNS, PART_COLUMNS, machine_line, markdown, part_rows, peer_notes, table_rows
from bench.sql.report import targets as target_lines
from bench.sql.spec import QUERIES, QUICK_ROWS, SETTINGS, SMARTNOISE_DELTA, TABLE, smartnoise_metadata


def main() -> None:
    parser = argparse.ArgumentParser(description="DP-SELECT: privdb against raw DuckDB and SmartNoise SQL.")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in the table (default 10M)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run on {QUICK_ROWS:,} rows; prints only")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (default 5)")
    parser.add_argument(
        "--pandas-rows", type=int, default=1_000_000, help="rows for SmartNoise's pandas reader (0: skip)"
    )
    args = parser.parse_args()

    from privdb.data.census import generate
    from privdb.database import Database

    n = QUICK_ROWS if args.quick else args.rows
    pandas_rows = min(args.pandas_rows, n // 4 if args.quick else n)
    console = report.console()
    metadata = data.census_metadata()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-sql-"))
    rows: list[Row] = []
    try:
        console.print(f"Generating {n:,} rows …")
        data.setting_databases(work, {TABLE: generate(n)}, metadata)
        peer_copy = work / "smartnoise.duckdb"  # closed, so the file is complete: the peer reads a copy of it
        shutil.copyfile(work / "row" / "data.duckdb", peer_copy)
        for setting in SETTINGS:
            with Database(work / setting) as db:
                for query in QUERIES:
                    console.print(f"{SETTINGS[setting]}, {query.key}: raw DuckDB and privdb")
                    rows.append(measure_privdb(db, setting, query, args.repeats))
        console.print(f"SmartNoise SQL ({SMARTNOISE_SQL.venv.relative_to(ROOT)}) …")
        spec = {
            "db": str(peer_copy),
            "epsilon": EPS,
            "delta": SMARTNOISE_DELTA,
            "repeats": args.repeats,
            "queries": [{"key": q.key, "label": q.label, "body": q.body} for q in QUERIES],
            "settings": list(SETTINGS),
            "metadata": {s: smartnoise_metadata(metadata[s], s) for s in SETTINGS},
            "pandas_rows": pandas_rows,
        }
        peer = SMARTNOISE_SQL.run("bench.sql.smartnoise", spec)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in rows:
        info = peer.get("duckdb", {}).get(r.setting, {}).get(r.query.key, {})
        r.smartnoise = info.get("seconds")
        r.smartnoise_error = info.get("error") or peer.get("error")

    title = f"DP-SELECT on {n:,} rows, ε = 1 (best of {args.repeats})"
    table = report.rich_table(title, COLUMNS, table_rows(rows), right=2)
    parts = report.rich_table("privdb by stage (s)", PART_COLUMNS, part_rows(rows), right=2)
    notes = map(report.plain, (*target_lines(rows), *peer_notes(peer, n)))
    console.print(table, parts, machine_line(peer), *notes, sep="\n")
    if not args.quick:
        report.write_section("sql", markdown(rows, peer, n, args.repeats))
        console.print(f"Wrote the sql section of {report.DOC}")


if __name__ == "__main__":
    main()
