"""Qrlew's worker: runs inside the peer venv (``python -m bench.joins.qrlew_worker``), which has pyqrlew,
duckdb and SQLAlchemy but not privdb: imports beyond the standard library stay inside the functions."""

from __future__ import annotations

import importlib.metadata
import math
import platform
import sys
import time
from typing import Any

from bench.harness import memory, timing
from bench.harness.peers import worker_main
from bench.harness.query import EPS, Query
from bench.joins.spec import qrlew_sql

UNIT = [("people", [], "pid"), ("visits", [("pid", "people", "pid")], "pid")]  # Qrlew's; regions: public


def _gaussian_multiplier(epsilon: float, delta: float) -> float:
    """The classical Gaussian mechanism's σ / sensitivity for (ε, δ), ε ≤ 1 (Dwork and Roth, Thm A.1)."""
    return math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def qrlew_dataset(path: str, metadata: dict[str, Any]) -> Any:
    """Qrlew's ``Dataset`` of the file, with privdb's bounds and key values declared."""
    import pyqrlew  # type: ignore[import-not-found, unused-ignore]  # only in the peer venv
    import sqlalchemy  # type: ignore[import-not-found, unused-ignore]

    sql_engine = sqlalchemy.create_engine(f"duckdb:///{path}", connect_args={"read_only": True})
    dataset = pyqrlew.Dataset.from_database("bench", sql_engine, "main")
    sql_engine.dispose()  # one DuckDB configuration per file and process: the worker's connection opens later
    for table, meta in metadata.items():
        for column, col in meta["columns"].items():
            if "lower" in col:
                dataset = dataset.with_range("main", table, column, col["lower"], col["upper"])
            if "values" in col:
                dataset = dataset.with_possible_values("main", table, column, [str(v) for v in col["values"]])
    return dataset.with_constraint("main", "people", "pid", "Unique")


class QrlewQuery:
    """One query through Qrlew, held to ε = 1 and δ in total: its k mechanisms get (1/k, δ/k) each."""

    def __init__(self, dataset: Any, q: Query, delta: float, bounds: dict[str, Any]) -> None:
        self.dataset, self.q, self.bounds = dataset, q, bounds
        _, event = self.rewrite(EPS, delta)
        self.mechanisms = len(event.get("events", [event]))  # each is charged the full (ε, δ) it is given
        self.epsilon, self.delta = EPS / self.mechanisms, delta / self.mechanisms
        self.sql, event = self.rewrite(self.epsilon, self.delta)
        events = event.get("events", [event])
        self.multiplier = _gaussian_multiplier(self.epsilon, self.delta)
        if {e["class_name"] for e in events} != {"GaussianDpEvent"} or any(
            not math.isclose(e["noise_multiplier"], self.multiplier, rel_tol=1e-9) for e in events
        ):
            raise RuntimeError(f"unexpected DP events for {q.key}: {events}")

    def rewrite(self, epsilon: float, delta: float) -> tuple[str, dict[str, Any]]:
        """Qrlew's DP rewrite of the query (its SQL, PostgreSQL dialect) and its DpEvent."""
        relation = self.dataset.relation(qrlew_sql(self.q))
        private = relation.rewrite_with_differential_privacy(
            self.dataset, UNIT, {"epsilon": epsilon, "delta": delta}, **self.bounds
        )
        event: dict[str, Any] = private.dp_event().to_dict()
        return private.relation().to_query(), event


def _qrlew_query(con: Any, dataset: Any, q: Query, spec: dict[str, Any]) -> dict[str, Any]:
    """The floor (on the worker's connection) and Qrlew on one query, interleaved; then Qrlew by stage."""
    repeats = int(spec["repeats"])
    bounds = {"max_multiplicity": spec["max_multiplicity"], "max_privacy_unit_groups": spec["max_groups"]}
    answers: list[Any] = []

    def raw(i: int) -> object:
        return con.execute(q.raw()).fetchall()

    try:
        query = QrlewQuery(dataset, q, float(spec["delta"]), bounds)

        def qrlew(i: int) -> None:
            sql, _ = query.rewrite(query.epsilon, query.delta)
            answers.append(con.execute(sql).fetchall())

        best, peak = timing.best_of_with_peak({"raw": raw, "qrlew": qrlew}, repeats)
    except Exception as err:  # refused by Qrlew, or its SQL failed on DuckDB: reported
        best, peak = timing.best_of_with_peak({"raw": raw}, repeats)
        return {"error": f"{type(err).__name__}: {err}", "seconds": best, "peak_mib": peak}
    parts, _ = timing.best_of_with_peak(
        {
            "rewrite": lambda i: query.rewrite(query.epsilon, query.delta),
            "engine SQL": lambda i: con.execute(query.sql).fetchall(),
        },
        repeats,
    )
    return {
        "seconds": best,
        "peak_mib": peak,
        "parts": parts,
        "mechanisms": query.mechanisms,
        "epsilon_each": query.epsilon,
        "delta_each": query.delta,
        "noise_multiplier": query.multiplier,
        "rows_out": len(answers[-1]),
        "sql_chars": len(query.sql),
    }


def qrlew_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time Qrlew on the DuckDB file ``spec["data"]`` (read-only); returns figures and settings."""
    import duckdb

    names = ("pyqrlew", "duckdb", "duckdb-sqlalchemy", "sqlalchemy", "numpy")
    out: dict[str, Any] = {
        "versions": {n: importlib.metadata.version(n) for n in names},
        "python": platform.python_version(),
        "queries": {},
    }
    t0 = time.perf_counter()
    dataset = qrlew_dataset(spec["data"], spec["metadata"])
    out["dataset_seconds"] = time.perf_counter() - t0
    con = duckdb.connect(spec["data"], read_only=True)
    out["setup_peak_mib"], out["resident_mib"] = memory.peak_mib(), memory.status_mib("VmRSS")
    for q in (Query(**q) for q in spec["queries"]):
        print(f"  qrlew: {q.key}", file=sys.stderr, flush=True)
        out["queries"][q.key] = _qrlew_query(con, dataset, q, spec)
    con.close()
    out["per_run_peak"] = memory.reset_peak()
    return out


if __name__ == "__main__":
    worker_main(qrlew_worker)
