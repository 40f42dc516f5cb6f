"""Timing audit of the one-scan layout (issue 40): does a person with very many rows change the work by more
than their own rows?

Two neighbouring tables of visits (``--rows`` rows, units of 1–6 rows over five kinds) differ by one person:
with ``--heavy`` rows spread over every kind, or with one row. For each query (ungrouped, GROUP BY kind) and
each form — ``raw`` (the plain aggregate), ``per unit`` (the bounding that groups by unit, what a WHERE or an
attached table gets) and ``layout`` (what privdb sends for a table it loaded, privdb.sql.run.layout) — the
engine query runs ``--runs`` times on each neighbour, interleaved. Reported: the medians, the person's extra
time against what their rows cost at the table's own rate (``extra ÷ (heavy × median / rows)``: 1 means they
cost as much as any rows), and the empirical lower bound on the ε the time leaks (bench.timing's rule).
Results go to docs/benchmarks.md.

    .venv/bin/python -m bench.layout_timing [--rows 1000000] [--heavy 100000] [--runs 200]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from bench.harness import machine, report
from privdb.audit.auditor import clopper_pearson
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run import targets
from privdb.sql.run.rewrite import engine_sql

KINDS = ["checkup", "emergency", "lab", "pharmacy", "specialist"]
META = {
    "privacy_unit": "pid",
    "max_contributions": 10,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "cost": {"type": "float", "lower": 0, "upper": 5000},
        "kind": {"type": "category", "values": KINDS},
    },
}
QUERIES = {
    "COUNT, SUM": "COUNT(*), SUM(cost) FROM visits",
    "kind, COUNT, SUM": "kind, COUNT(*), SUM(cost) FROM visits GROUP BY kind",
}


def build(path: Path, rows: int, person_rows: int) -> Database:
    """The visits table (seeded: DuckDB's hash of the row number) plus pid 0 with ``person_rows`` rows."""
    path.mkdir(parents=True)
    kinds = "[" + ", ".join(f"'{k}'" for k in KINDS) + "]"
    con = duckdb.connect()
    con.execute(
        f"""COPY (
        SELECT 1 + (i // 3.5)::BIGINT AS pid, (hash(i, 1) % 500001) / 100.0 AS cost,
               {kinds}[1 + (hash(i, 2) % 5)::BIGINT] AS kind FROM range({rows}) AS r(i)
        UNION ALL
        SELECT 0, 5000.0, {kinds}[1 + (j % 5)::BIGINT] FROM range({person_rows}) AS r(j)
        ) TO '{path / "visits.parquet"}' (FORMAT parquet)"""
    )
    con.close()
    db = Database(path / "db")
    db.load("visits", path / "visits.parquet", META)
    return db


def epsilon_from_time(times: list[list[float]]) -> float:
    """bench.timing's bound: the event 'slower than the pooled median of the first half', scored on the
    second half, Clopper–Pearson at 95%, both directions."""
    half = len(times[0]) // 2
    cut = statistics.median(times[0][:half] + times[1][:half])
    bound = 0.0
    for a, b in ((0, 1), (1, 0)):
        for slower in (True, False):
            hits_a = sum((t > cut) == slower for t in times[a][half:])
            hits_b = sum((t > cut) == slower for t in times[b][half:])
            lo = clopper_pearson(hits_a, len(times[a]) - half, 0.05)[0]
            hi = clopper_pearson(hits_b, len(times[b]) - half, 0.05)[1]
            if lo > 0:
                bound = max(bound, math.log(lo / hi))
    return bound


def forms(db: Database, query: str) -> dict[str, str]:
    plan, sent = engine.prepare(db, f"DP-SELECT 1 {query}")
    assert isinstance(plan, Plan)
    _, source, unit_rows, from_ = targets.plan_target(db, plan)
    assert "__privdb_" in sent, "the layout form applies to a loaded table without WHERE"
    return {"raw": f"SELECT {query}", "per unit": engine_sql(plan, source, unit_rows, from_), "layout": sent}


def measure(dbs: list[Database], runs: int) -> dict[tuple[str, str], list[list[float]]]:
    sql = [{q: forms(db, text) for q, text in QUERIES.items()} for db in dbs]
    times: dict[tuple[str, str], list[list[float]]] = {}
    for i in range(runs):
        for q in QUERIES:
            for form in ("raw", "per unit", "layout"):
                for side in (0, 1) if i % 2 == 0 else (1, 0):
                    started = time.perf_counter()
                    dbs[side].backend.fetch(sql[side][q][form])
                    times.setdefault((q, form), [[], []])[side].append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--heavy", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    rows_out = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        for label, person in ((f"{args.heavy:,} rows", args.heavy), ("1 row", 1)):
            dbs = [
                build(Path(tmp) / f"{person}-0", args.rows, 0),
                build(Path(tmp) / f"{person}-1", args.rows, person),
            ]
            for (q, form), t in measure(dbs, args.runs).items():
                without, with_ = (1000 * statistics.median(side) for side in t)
                rate = person * without / args.rows  # what the person's rows cost at the table's rate
                cost = f"{(with_ - without) / rate:.2f}" if person > 1 else "–"  # one row: within noise
                rows_out.append(
                    f"| {label} | {q} | {form} | {without:.2f} | {with_:.2f} | {cost} | "
                    f"{epsilon_from_time(t):.3f} |"
                )
            for db in dbs:
                db.close()
    load1 = os.getloadavg()[0]
    lines = [
        f"`.venv/bin/python -m bench.layout_timing --rows {args.rows} --heavy {args.heavy} "
        f"--runs {args.runs}` on {machine.cpu_model()}, {os.cpu_count()} CPUs; 1-minute load {load0:.2f} "
        f"at the start, {load1:.2f} at the end. Two tables of {args.rows:,} visits (units of 1–6 rows) "
        f"differ by one person with {args.heavy:,} rows over every kind, or with 1 row. Each form's engine "
        f"query (the only part that reads the data) runs {args.runs} times per neighbour, interleaved. "
        "'Person's cost' is their extra median time over what as many rows cost at the table's own rate: "
        "about 1 means a person's rows cost what anyone's rows cost, the `c·N + S` bound of "
        "docs/security.md. The ε column is bench.timing's empirical lower bound on what the time alone "
        "tells (95% Clopper–Pearson).",
        "",
        "| person | query | form | median ms without | median ms with | person's cost (×) | ε lower bound |",
        "|---|---|---|---|---|---|---|",
        *rows_out,
        "",
        "A person with very many rows is seen in the running time of every form, the raw aggregate's "
        "included: their rows are work. What matters is that the layout adds nothing beyond it: its "
        "'person's cost' is no larger than the per-unit form's, and a person of one row is not seen.",
    ]
    heading = "Timing audit of the layout: a neighbour with very many rows"
    report.write_section("layout-timing", report.section("layout-timing", heading, lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
