"""privdb's worker: the floor and privdb on a copy of the data file, in the project's venv
(``python -m bench.joins.privdb_worker``), so that its memory is its own."""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.harness import memory, timing
from bench.harness.peers import worker_main
from bench.harness.query import ANALYST, EPS, Query, check_fresh


def _privdb_query(db: Any, q: Query, repeats: int) -> dict[str, Any]:
    """The floor and privdb on one query, interleaved; then privdb by stage. A refusal is reported."""
    from privdb.errors import PrivdbError
    from privdb.sql import engine
    from privdb.sql.answer.noise import add_noise
    from privdb.sql.plan.types import Plan

    info: dict[str, Any] = {}

    def raw(i: int) -> object:
        return db.backend.fetch(q.raw())

    def dp(i: int) -> None:
        eps = EPS + (i + 1) * 1e-9  # a new ε each run: never an answer from privdb's store
        result = engine.run(db, ANALYST, q.dp(eps))
        check_fresh(result, eps, q.key)
        info["rows_out"], info["delta"] = len(result.rows), result.delta_spent

    try:
        dp(-1)  # ε = 1 exactly; a refusal costs nothing and is reported
    except PrivdbError as err:
        info["error"] = {"code": err.code, "message": str(err)}
        best, peak = timing.best_of_with_peak({"raw": raw}, repeats)
        return info | {"seconds": best, "peak_mib": peak}
    best, peak = timing.best_of_with_peak({"raw": raw, "privdb": dp}, repeats)
    info |= {"seconds": best, "peak_mib": peak}
    try:  # the stage breakdown is extra: an API change must not end the run
        plan, sql = engine.prepare(db, q.dp(EPS))
        if not isinstance(plan, Plan):
            raise TypeError(f"{q.key} planned as {type(plan).__name__}, not an aggregate Plan")
        info["engine_sql"] = sql
        frame = db.backend.fetch(sql)
        parts, _ = timing.best_of_with_peak(
            {
                "prepare": lambda i: engine.prepare(db, q.dp(EPS + i * 1e-9)),
                "engine SQL": lambda i: db.backend.fetch(sql),
                "noise": lambda i: add_noise(plan, frame),
            },
            repeats,
        )
        info["parts"] = parts | {"rest": max(0.0, best["privdb"] - sum(parts.values()))}
    except Exception as err:
        info["parts_error"] = f"{type(err).__name__}: {err}"
    return info


def privdb_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """privdb and the floor on a copy of the data file; runs in the project's venv."""
    from privdb.database import Database

    work = Path(spec["work"])
    work.mkdir(parents=True)
    shutil.copyfile(spec["data"], work / "data.duckdb")
    out: dict[str, Any] = {"queries": {}}
    with Database(work) as db:
        t0 = time.perf_counter()
        for table, meta in spec["metadata"].items():
            db.set_metadata(table, meta)  # with a privacy unit: writes each row's per-unit row count
        out["load_seconds"] = time.perf_counter() - t0
        db.grant(ANALYST, epsilon=1e6, delta=1e-3)
        out["setup_peak_mib"], out["resident_mib"] = memory.peak_mib(), memory.status_mib("VmRSS")
        for q in (Query(**q) for q in spec["queries"]):
            print(f"  privdb: {q.key}: raw DuckDB and privdb", file=sys.stderr, flush=True)
            out["queries"][q.key] = _privdb_query(db, q, int(spec["repeats"]))
    out["per_run_peak"] = memory.reset_peak()
    out["versions"] = {n: importlib.metadata.version(n) for n in ("privdb", "duckdb", "pandas", "numpy")}
    return out


if __name__ == "__main__":
    worker_main(privdb_worker)
