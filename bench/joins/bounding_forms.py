"""``python -m bench.joins.bounding_forms PEOPLE REPEATS``: raw, the window form of user-level bounding
(before issue 30), the arg_max form and what privdb sends (J1: visits aggregated per person before the
join, privdb.sql.run.eager) of J1 and J3's engine SQL, interleaved on one connection."""

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
path = ensure_data(people, print)
work = Path(tempfile.mkdtemp(dir="/tmp/ub"))
shutil.copyfile(path, work / "data.duckdb")
load0 = os.getloadavg()
with Database(work) as db:
    for t, m in METADATA.items():
        db.set_metadata(t, m)
    runs = {}
    for q in QUERIES:
        if q.key not in ("J1", "J3"):
            continue
        plan, new = engine.prepare(db, q.dp(EPS))
        _, source, unit_rows, from_ = targets.plan_target(db, plan)
        old = engine_sql(plan, source, unit_rows, from_, dialect="window")
        assert "OVER" in old and "OVER" not in new
        new = engine_sql(plan, source, unit_rows, from_, dialect="duckdb")  # the join-then-bound form
        sent = targets.statistics_sql(db, plan)
        runs |= {(q.key, "raw"): q.raw(), (q.key, "window"): old, (q.key, "arg_max"): new}
        runs[(q.key, "sent")] = sent
    best = {}
    for _ in range(repeats):
        for k, s in runs.items():
            t0 = time.perf_counter()
            db.backend.fetch(s)
            best[k] = min(best.get(k, 1e9), time.perf_counter() - t0)
load1 = os.getloadavg()[0]
print(f"people {people:,}, visits {3 * people:,}; best of {repeats}; load {load0[0]:.2f} -> {load1:.2f}")
for key in ("J1", "J3"):
    r, w, a, e = (best[(key, f)] for f in ("raw", "window", "arg_max", "sent"))
    print(
        f"{key}: raw {r:.3f} s; window {w:.3f} s ({w / r:.1f}x); arg_max {a:.3f} s ({a / r:.1f}x); "
        f"sent {e:.3f} s ({e / r:.1f}x)"
    )
shutil.rmtree(work)
