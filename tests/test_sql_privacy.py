"""Privacy of whole DP-SELECT queries on neighbouring databases (one person added or removed).

The engine's statistics are computed for real on both neighbours (clamping and contribution bounding in
SQL); their difference must stay within the declared sensitivity; the query's noise on those exact values
is then audited (Clopper–Pearson lower bound at confidence 1 − 1e-6) and must not exceed the claimed ε.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise

BASE = pd.DataFrame(
    {
        "pid": np.arange(1, 201),
        "age": np.tile(np.arange(20, 70), 4),
        "income": np.linspace(1000, 90_000, 200),
        "city": np.repeat(["Bern", "Basel", "Genf", "Chur"], 50),
    }
)
META: dict[str, Any] = {
    "columns": {
        "pid": {"type": "int", "identifier": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 100_000},
        "city": {"type": "text"},
    }
}


def _db(path: Path, frame: pd.DataFrame, meta: dict[str, Any]) -> Database:
    db = Database(path)
    db.backend.load_frame("people", frame)
    db.set_metadata("people", meta)
    db.grant("alice", epsilon=10, delta=1e-3)
    return db


def _statistics(db: Database, query: str) -> tuple[Any, pd.DataFrame]:
    plan, sql = engine.prepare(db, query)
    return plan, db.backend.fetch(sql)


NEIGHBOURS = {
    "at the upper bound": pd.DataFrame({"pid": [999], "age": [100], "income": [100_000.0], "city": ["Bern"]}),
    "far above the bound": pd.DataFrame({"pid": [999], "age": [500], "income": [1e12], "city": ["Bern"]}),
    "at the lower bound": pd.DataFrame({"pid": [999], "age": [0], "income": [0.0], "city": ["Bern"]}),
}


@pytest.mark.slow
@pytest.mark.parametrize("who", list(NEIGHBOURS))
@pytest.mark.parametrize(
    ("query", "column"),
    [
        ("DP-SELECT 1 COUNT(*) FROM people WHERE age >= 0", 0),
        ("DP-SELECT 1 SUM(income) FROM people", 0),
        ("DP-SELECT 1 SUM(age) FROM people WHERE income > 500", 0),
    ],
)
def test_neighbouring_databases_stay_within_the_claim(
    tmp_path: Path, who: str, query: str, column: int
) -> None:
    small = _db(tmp_path / "d0", BASE, META)
    large = _db(tmp_path / "d1", pd.concat([BASE, NEIGHBOURS[who]], ignore_index=True), META)
    try:
        plan, f0 = _statistics(small, query)
        _, f1 = _statistics(large, query)
        stat = plan.statistics[column]
        difference = abs(float(f1[stat.name].iloc[0]) - float(f0[stat.name].iloc[0]))
        assert difference <= stat.sensitivity + 1e-9
        mech = stat.mechanism(seeded(5))
        v0, v1 = float(f0[stat.name].iloc[0]), float(f1[stat.name].iloc[0])
        result = audit(
            query,
            lambda n: mech.release(np.full(n, v0)),
            lambda n: mech.release(np.full(n, v1)),
            epsilon=stat.epsilon,
            samples=50_000,
            confidence=1 - ALPHA,
        )
        assert result.passed, result
    finally:
        small.close()
        large.close()


def test_a_person_with_many_rows_moves_counts_by_at_most_max_contributions(tmp_path: Path) -> None:
    meta = {**META, "privacy_unit": "pid", "max_contributions": 2}
    meta["columns"] = {**META["columns"], "pid": {"type": "int", "private_id": True}}
    heavy = pd.DataFrame(
        {"pid": [999] * 40, "age": [30] * 40, "income": [99_000.0] * 40, "city": ["Bern"] * 40}
    )
    small = _db(tmp_path / "d0", BASE, meta)
    large = _db(tmp_path / "d1", pd.concat([BASE, heavy], ignore_index=True), meta)
    try:
        for query in (
            "DP-SELECT 1 COUNT(*), SUM(income), AVG(age) FROM people",
            "DP-SELECT 1 DELTA 1e-6 city, COUNT(*), SUM(income) FROM people GROUP BY city",
        ):
            plan, f0 = _statistics(small, query)
            _, f1 = _statistics(large, query)
            keys = [c for c in f0.columns if c.startswith("k")]
            merged = f0.merge(f1, on=keys, how="outer", suffixes=("_0", "_1")).fillna(0.0) if keys else None
            for stat in plan.statistics:
                if merged is not None:
                    l1 = float((merged[f"{stat.name}_1"] - merged[f"{stat.name}_0"]).abs().sum())
                else:
                    l1 = abs(float(f1[stat.name].iloc[0]) - float(f0[stat.name].iloc[0]))
                assert l1 <= stat.sensitivity + 1e-6, (query, stat.kind, l1, stat.sensitivity)
    finally:
        small.close()
        large.close()


@pytest.mark.slow
def test_a_group_key_present_in_one_neighbour_only_is_not_released(tmp_path: Path) -> None:
    """One person from a new city: without a public domain the key passes the threshold w.p. ≤ δ."""
    newcomer = pd.DataFrame({"pid": [999], "age": [40], "income": [50_000.0], "city": ["Lugano"]})
    large = _db(tmp_path / "d1", pd.concat([BASE, newcomer], ignore_index=True), META)
    try:
        plan, frame = _statistics(large, "DP-SELECT 1 DELTA 1e-10 city, COUNT(*) FROM people GROUP BY city")
        assert plan.threshold is not None
        source = seeded(9)
        released = 0
        trials = 3000
        for _ in range(trials):
            answer = add_noise(plan, frame, source)
            cities = {row[0] for row in answer.rows}
            released += "Lugano" in cities
        # P(any release in 3000 trials) ≤ 3000 · 1e-10: a failure here is a real leak
        assert released == 0
        # and the frequent cities do get through
        assert {"Bern", "Basel", "Genf", "Chur"} <= {r[0] for r in add_noise(plan, frame, source).rows}
    finally:
        large.close()
