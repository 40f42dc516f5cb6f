"""``python -m bench.engines.spark_user --rows N [--loaded] [--cluster] [--only J1 …]``: user-level
DP-SELECTs on ``spark://local[2]`` (or, ``--cluster``, a standalone master and two workers on loopback)
against Spark's own SQL, interleaved in one session (issues 30, 40).

Two Parquet files written by DuckDB: ``events`` (N rows, 10 per person: pid, amount, item, and band, one of
10 declared values drawn per row, the key of J3 as ``kind`` is bench.joins' J3's) and ``persons``
(N/10 rows, one per person: pid, state, age). Each query runs through privdb end to end (plan, the engine
SQL on Spark, noise on the driver) and as plain Spark SQL, alternately, best of ``--repeats``. Before timing,
every engine query privdb sends is checked: SQL text only (privdb registers no Python UDF; none is named
in it), and what comes back to the driver is the per-group statistics (rows counted against the
query's groups).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from bench.harness import memory
from bench.harness.query import ANALYST, Query
from bench.harness.sparkcluster import spark_cluster
from privdb.database import Database
from privdb.engine_loads import load_engine
from privdb.sql import engine
from privdb.sql.run import targets

PER_PERSON = 10
LOCAL = "spark://local[2]"
STATES = 50
ITEMS = 10_000
BANDS = 10
META: dict[str, dict[str, Any]] = {
    "events": {
        "privacy_unit": "pid", "max_contributions": PER_PERSON, "max_groups": 1,
        "columns": {"pid": {"type": "int", "private_id": True},
                    "amount": {"type": "float", "lower": 0, "upper": 1000},
                    "item": {"type": "int", "lower": 0, "upper": ITEMS},
                    "band": {"type": "int", "values": list(range(BANDS))}},
    },
    "persons": {
        "privacy_unit": "pid", "max_contributions": 1,
        "columns": {"pid": {"type": "int", "private_id": True},
                    "state": {"type": "int", "lower": 0, "upper": STATES - 1},
                    "age": {"type": "int", "lower": 0, "upper": 100}},
    },
}  # fmt: skip
# (query, Spark's own SQL where it differs from the DP-SELECT's body, the most rows it may bring back)
QUERIES: list[tuple[Query, str | None, int]] = [
    (Query("U1", "AVG with a unit, 10 rows per person", "AVG(amount) FROM events"), None, 1),
    (
        Query("J1", "persons ⋈ events on the unit: state, COUNT",
              "state, COUNT(*) FROM persons p JOIN events e ON p.pid = e.pid GROUP BY state"),
        None, STATES,
    ),
    (
        Query("P1", "per-unit subquery: AVG of each person's total",
              "AVG(total) FROM (SELECT pid, SUM(amount) AS total FROM events GROUP BY pid) AS t"),
        None, 1,
    ),
    (
        Query("J3", "events alone, one group per person: band, COUNT, SUM",
              "band, COUNT(*), SUM(amount) FROM events GROUP BY band"),
        None, BANDS,
    ),
    (Query("D1", "COUNT(DISTINCT item)", "COUNT(DISTINCT item) FROM events"), None, 1),
    (Query("M1", "MEDIAN(amount)", "MEDIAN(amount) FROM events"),
     "SELECT percentile_approx(amount, 0.5) FROM events", 1),
]  # fmt: skip


def write_parquet(rows: int, out: Path) -> dict[str, Path]:
    """The two files (module doc), drawn by DuckDB with a fixed seed."""
    people = rows // PER_PERSON
    con = duckdb.connect()
    con.execute("SELECT setseed(0.3)")
    paths = {"events": out / "events.parquet", "persons": out / "persons.parquet"}
    con.execute(
        f"COPY (SELECT (i // {PER_PERSON})::BIGINT AS pid, round(random() * 1000, 2) AS amount, "
        f"(hash(i) % {ITEMS})::BIGINT AS item, (hash(i * 31) % {BANDS})::BIGINT AS band "
        f"FROM range({people * PER_PERSON}) t(i)) "
        f"TO '{paths['events']}' (FORMAT parquet)"
    )
    con.execute(
        f"COPY (SELECT i::BIGINT AS pid, (hash(i * 7) % {STATES})::BIGINT AS state, "
        f"(hash(i * 13) % 90)::BIGINT AS age FROM range({people}) t(i)) "
        f"TO '{paths['persons']}' (FORMAT parquet)"
    )
    con.close()
    return paths


def run(
    rows: int,
    repeats: int,
    work: Path,
    loaded: bool = False,
    master: str = LOCAL,
    only: frozenset[str] | None = None,
) -> list[dict[str, Any]]:
    """Check the engine SQL of each query, then time privdb and Spark's own SQL interleaved. ``loaded``:
    the tables written by privdb (``privdb load --engine``, with the per-unit layout) instead of attached;
    Spark's own SQL then reads privdb's files too. ``master``: the Spark to run on; ``only``: these
    queries (by key)."""
    paths = write_parquet(rows, work)
    db = Database(work / "db")
    for name, path in paths.items():
        if loaded:
            t0 = time.perf_counter()
            load_engine(db, name, str(path), master, META[name])
            print(f"loaded {name} in {time.perf_counter() - t0:.1f} s")
        else:
            db.attach(name, master, source=str(path), metadata=META[name])
    db.grant(ANALYST, epsilon=1e9, delta=1e-3)
    backend, _ = db.backend_for("events")
    views = {name: db.backend_for(name)[1] for name in paths}  # Spark's names of the Parquet views
    out = []
    for q, own, most in QUERIES:
        if only is not None and q.key not in only:
            continue
        plan, _ = engine.prepare(db, q.dp(1.0))
        sent = [
            s for s in (targets.statistics_sql(db, plan), *targets.histogram_queries(db, plan).values()) if s
        ]
        assert not any("udf" in s.lower() for s in sent), q.key
        returned = sum(len(backend.fetch(s)) for s in sent)
        cells = sum(h.cells for h in plan.histograms) or 1
        assert returned <= most * cells + len(sent), (q.key, returned)  # per-group statistics only
        raw = re.sub(r"\b(FROM|JOIN) (events|persons)\b", lambda m: f"{m[1]} {views[m[2]]}", own or q.raw())
        backend.fetch(raw)  # warm-up: file footers, JIT
        best = {"privdb": 1e9, "spark": 1e9}
        for i in range(repeats):
            t0 = time.perf_counter()
            engine.run(db, ANALYST, q.dp(1.0 + i * 1e-9))
            best["privdb"] = min(best["privdb"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            backend.fetch(raw)
            best["spark"] = min(best["spark"], time.perf_counter() - t0)
        out.append({"key": q.key, "label": q.label, **best, "returned": returned, "queries": len(sent),
                    "load": os.getloadavg()[0]})  # fmt: skip
    print(f"peak memory (VmHWM): {_peaks()}")
    db.close()
    return out


def _peaks() -> str:
    """The driver's peak memory (this Python process and its JVM, SparkSubmit) and the executors' (in
    local mode they run in the driver's JVM)."""
    roles = {"driver JVM": "deploy.SparkSubmit", "executors": "CoarseGrainedExecutorBackend"}
    peaks = memory.tree_peaks(os.getpid())
    found = {role: sum(k for line, k in peaks.values() if mark in line) for role, mark in roles.items()}
    python = peaks[os.getpid()][1]
    return f"driver Python {python / 1024:.0f} MiB, " + ", ".join(
        f"{role} {kib / 1024:.0f} MiB" for role, kib in found.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="User-level DP-SELECTs on Spark local[2] against Spark SQL.")
    parser.add_argument("--rows", type=int, default=10_000_000, help="events rows (default 10M)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side (default 3)")
    parser.add_argument("--loaded", action="store_true", help="tables privdb writes (with the layout)")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="a standalone cluster on loopback: a master, two one-core workers (bench.harness.sparkcluster)",
    )
    parser.add_argument(
        "--only", action="append", help="only this query (U1, J1, P1, J3, D1, M1); repeatable"
    )
    args = parser.parse_args()
    print(f"rows {args.rows:,} ({args.rows // PER_PERSON:,} persons); load {os.getloadavg()[0]:.2f}")
    only = frozenset(args.only) if args.only else None
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")))
        master = stack.enter_context(spark_cluster()) if args.cluster else LOCAL
        print(f"Spark: {master}")
        for r in run(args.rows, args.repeats, Path(tmp), args.loaded, master, only):
            print(
                f"{r['key']} {r['label']}: privdb {r['privdb']:.2f} s, Spark SQL {r['spark']:.2f} s "
                f"({r['privdb'] / r['spark']:.1f}x); {r['queries']} engine queries, {r['returned']} rows to "
                f"the driver; load {r['load']:.2f}"
            )


if __name__ == "__main__":
    main()
