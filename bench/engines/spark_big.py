"""Spark at scale: Q1 through privdb on ``spark://local[2]`` over a big Parquet file, in a fresh process
(``python -m bench.engines.spark_big``) whose memory is its own: peak RSS of the Python driver, of Spark's
JVM and of the whole process tree."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, cast

from bench.harness import memory
from bench.harness.data import row_metadata
from bench.harness.peers import module_argv, run_json_worker, worker_main
from bench.harness.query import ANALYST, EPS
from bench.sql.spec import QUERIES


def spark_big_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: attach the big Parquet file on ``spark://local[2]`` and run Q1 through privdb."""
    from privdb.data.census import METADATA
    from privdb.database import Database
    from privdb.sql import engine

    q1 = QUERIES[0]
    out: dict[str, Any] = {"rows": spec["rows"]}
    with memory.TreeSampler(os.getpid()) as sampler:
        db = Database(Path(spec["dir"]))
        t0 = time.perf_counter()
        db.attach("people_big", "spark://local[2]", source=spec["parquet"], metadata=row_metadata(METADATA))
        out["attach_s"] = time.perf_counter() - t0  # Spark's start, the view, the schema
        db.grant(ANALYST, epsilon=1e6, delta=1e-3)
        backend, source = db.backend_for("people_big")
        raw_sql = q1.raw().replace("FROM people", f"FROM {source}")
        t0 = time.perf_counter()
        backend.fetch(raw_sql)  # the session's first scan (JIT, file footers): a warm-up for both
        out["cold_s"] = time.perf_counter() - t0
        privdb_s, raw_s = [], []
        for i in range(int(spec["repeats"])):
            t0 = time.perf_counter()
            result = engine.run(db, ANALYST, q1.dp(EPS + i * 1e-9).replace("FROM people", "FROM people_big"))
            privdb_s.append(time.perf_counter() - t0)
            assert not result.cached
            t0 = time.perf_counter()
            exact = backend.fetch(raw_sql)
            raw_s.append(time.perf_counter() - t0)
        out |= {"privdb_s": privdb_s, "raw_s": raw_s, "noisy": float(result.rows[0][0])}
        out["exact"] = int(exact.to_numpy()[0, 0])
        hwm = memory.tree_peaks(os.getpid())
        out["python_hwm_kib"] = hwm[os.getpid()][1]
        out["jvm_hwm_kib"] = sum(k for line, k in hwm.values() if Path(line.split(" ", 1)[0]).name == "java")
        spark = cast(Any, backend)._spark
        conf = spark.sparkContext.getConf()  # the settings Spark ran with
        out["driver_memory"] = conf.get("spark.driver.memory", "1g (default)")
        out["spark"] = spark.version
        db.close()
    out["tree_peak_kib"] = sampler.peak_kib
    return out


def run_spark_big(parquet: Path, rows: int, repeats: int, work: Path) -> dict[str, Any]:
    """The worker as a subprocess; its figures, or ``{"error": why}``."""
    spec = {"parquet": str(parquet), "rows": rows, "repeats": repeats, "dir": str(work / "big-db")}
    t0 = time.perf_counter()
    result = run_json_worker(
        module_argv(sys.executable, "bench.engines.spark_big"),
        spec,
        "the Spark worker failed (exit {code}); see its output above",
    )
    result["wall_s"] = time.perf_counter() - t0
    return result


if __name__ == "__main__":
    worker_main(spark_big_worker)
