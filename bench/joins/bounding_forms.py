"""``python -m bench.joins.bounding_forms PEOPLE REPEATS [FORMS]``: forms of J1 and J3's engine SQL
interleaved on one connection, best of REPEATS: ``raw`` (the plain query), ``window`` (user-level bounding
before issue 30: ROW_NUMBER and SUM/COUNT OVER per unit), ``arg_max`` (the join-then-bound form with one
aggregate per unit) and ``sent`` (what privdb sends: one weighted scan over the tables' stored layout,
privdb.sql.run.layout; for J1 the join of people of one row with visits weighed by their visits per person,
privdb.sql.run.eager). FORMS: a comma-separated subset (default all; ``raw,sent`` at 10M people)."""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.query import EPS
from bench.joins.data import ensure_data
from bench.joins.spec import METADATA, QUERIES
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.run import targets
from privdb.sql.run.rewrite import engine_sql

people, repeats = int(sys.argv[1]), int(sys.argv[2])
forms = sys.argv[3].split(",") if len(sys.argv) > 3 else ["raw", "window", "arg_max", "sent"]
path = ensure_data(people, print)
work = Path(tempfile.mkdtemp(dir=os.environ.get("BENCH_TMP")))
shutil.copyfile(path, work / "data.duckdb")
load0 = os.getloadavg()
with Database(work) as db:
    started = time.perf_counter()
    for t, m in METADATA.items():  # writes each table's layout (privdb.backends.duckdb_layout)
        db.set_metadata(t, m)
    layout_s = time.perf_counter() - started
    runs = {}
    for q in QUERIES:
        if q.key not in ("J1", "J3"):
            continue
        plan, sent = engine.prepare(db, q.dp(EPS))
        _, source, unit_rows, from_ = targets.plan_target(db, plan)
        sql = {
            "raw": q.raw(),
            "window": engine_sql(plan, source, unit_rows, from_, dialect="window"),
            "arg_max": engine_sql(plan, source, unit_rows, from_, dialect="duckdb"),
            "sent": sent,
        }
        assert "OVER" in sql["window"] and "OVER" not in sql["arg_max"] + sql["sent"]
        runs |= {(q.key, f): sql[f] for f in forms}
    best: dict[tuple[str, str], float] = {}
    for _ in range(repeats):
        for k, s in runs.items():
            t0 = time.perf_counter()
            db.backend.fetch(s)
            best[k] = min(best.get(k, 1e9), time.perf_counter() - t0)
load1 = os.getloadavg()[0]
print(
    f"people {people:,}, visits {3 * people:,}; best of {repeats}; load {load0[0]:.2f} -> {load1:.2f}; "
    f"metadata (the layout written) {layout_s:.1f} s"
)
for key in ("J1", "J3"):
    raw = best.get((key, "raw"))
    seconds = [(f, best[(key, f)]) for f in forms]
    parts = [f"{f} {s:.3f} s" + (f" ({s / raw:.1f}x)" if raw else "") for f, s in seconds]
    print(f"{key}: " + "; ".join(parts))
shutil.rmtree(work)
