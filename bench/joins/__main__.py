"""``python -m bench.joins``: privdb's DP-SELECT over JOINs against raw DuckDB and Qrlew (bench/joins)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Any

from bench.harness import ROOT, report
from bench.harness.peers import QRLEW, module_argv, run_json_worker
from bench.joins.data import DATA, data_stats, ensure_data
from bench.joins.report import (
    COLUMNS,
    PART_COLUMNS,
    _get,
    data_notes,
    machine_line,
    markdown,
    part_rows,
    peer_notes,
    table_rows,
    targets,
)
from bench.joins.spec import METADATA, QRLEW_DELTA, QUERIES, QUICK_PEOPLE


def main() -> None:
    parser = argparse.ArgumentParser(description="DP-SELECT over JOINs: privdb against raw DuckDB and Qrlew.")
    parser.add_argument("--people", type=int, default=10_000_000, help="people (visits: 3×; default 10M)")
    parser.add_argument(
        "--quick", action="store_true", help=f"smoke run on {QUICK_PEOPLE:,} people; prints only"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up (default 3)")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print (and, unless --quick, write to the docs) the figures of the last run of this size",
    )
    args = parser.parse_args()
    console = report.console()
    people = QUICK_PEOPLE if args.quick else args.people
    saved = DATA / f"joins-{people}.results.json"
    if args.report_only:
        show(json.loads(saved.read_text(encoding="utf-8")), console, write=not args.quick)
        return
    load = os.getloadavg()
    path = ensure_data(people, console.print)
    stats = data_stats(path)
    queries = [{"key": q.key, "label": q.label, "body": q.body} for q in QUERIES]
    work = DATA / f"privdb-{os.getpid()}"
    spec = {"repeats": args.repeats, "queries": queries, "metadata": METADATA, "data": str(path)}
    try:
        console.print("privdb and the raw queries (worker in this venv) …")
        argv = module_argv(sys.executable, "bench.joins.privdb_worker")
        failed = "the privdb worker failed (exit {code}); see its output above"
        mine = run_json_worker(argv, spec | {"work": str(work)}, failed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.print(f"Qrlew ({QRLEW.venv.relative_to(ROOT)}) …")
    peer_spec = spec | {"delta": QRLEW_DELTA, "max_multiplicity": 10, "max_groups": 1}
    peer = QRLEW.run("bench.joins.qrlew_worker", peer_spec)
    results = {
        "mine": mine,
        "peer": peer,
        "stats": stats,
        "spec": peer_spec,
        "people": people,
        "load": [load[0], os.getloadavg()[0]],
        "command": report.command("bench.joins"),
    }
    saved.write_text(json.dumps(results), encoding="utf-8")
    show(results, console, write=not args.quick)


def show(results: dict[str, Any], console: Any, *, write: bool) -> None:
    """Print the figures; with ``write``, rewrite the joins section of docs/benchmarks.md."""
    mine, peer, stats, spec = results["mine"], results["peer"], results["stats"], results["spec"]
    load, people = results["load"], results["people"]
    title = f"DP-SELECT over joins, {people:,} people, ε = 1 (best of {spec['repeats']})"
    console.print(report.rich_table(title, COLUMNS, table_rows(mine, peer)))
    if part_rows(mine):
        console.print(report.rich_table("privdb by stage (s)", PART_COLUMNS, part_rows(mine)))
    for key in (q.key for q in QUERIES):
        if _get(mine, key, "error"):
            console.print(f"privdb {key}: {_get(mine, key, 'error')}")
    if "error" in mine:
        console.print(f"privdb: {mine['error']}")
    notes = map(report.plain, (*targets(mine), *peer_notes(peer, spec)))
    console.print(machine_line(mine, load), data_notes(stats), *notes, sep="\n")
    if write:
        report.write_section("joins", markdown(mine, peer, stats, spec, results["command"], load))
        console.print(f"Wrote the joins section of {report.DOC}")


if __name__ == "__main__":
    main()
