"""Regression tests for the privacy review of the engine (each names the finding it pins down)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.backends.names import unit_rows_column
from privdb.database import Database
from privdb.errors import InvalidParameter, PrivdbError
from privdb.sql import engine


def _db(path: Path, frame: pd.DataFrame, meta: dict[str, Any]) -> Database:
    db = Database(path)
    db.backend.load_frame("t", frame)
    db.set_metadata("t", meta)
    db.grant("eve", epsilon=1000, delta=1e-3)
    db.noise_source = seeded(1)
    return db


ORACLES = [
    "DP-SELECT 1 COUNT(*) FROM t WHERE CASE WHEN s = 37 THEN 9223372036854775807 + s ELSE 0 END = 0",
    "DP-SELECT 1 COUNT(*) FROM t WHERE 1 // (s - 37) >= 0",
    "DP-SELECT 1 COUNT(*) FROM t WHERE CASE WHEN s = 37 THEN CAST(a AS INT) ELSE 0 END = 0",
    "DP-SELECT 1 COUNT(*) FROM t WHERE regexp_matches('a', CASE WHEN s = 37 THEN '(' ELSE 'a' END)",
    "DP-SELECT 1 DELTA 1e-6 1 // (s - 37) AS k, COUNT(*) FROM t GROUP BY 1 // (s - 37)",
]


@pytest.mark.parametrize("query", ORACLES)
def test_a_row_cannot_make_the_query_fail(tmp_path: Path, query: str) -> None:
    """Finding 1: whether a query fails must not depend on whether some row exists. Each form either
    answers in both neighbours or is refused (before reading) with the same error in both."""
    meta = {"columns": {"s": {"type": "int", "lower": 0, "upper": 100}, "a": {"type": "text"}}}
    outcomes = []
    for i, present in enumerate((False, True)):
        values = list(range(100)) if present else [v for v in range(100) if v != 37]
        frame = pd.DataFrame({"s": values, "a": ["x"] * len(values)})
        db = _db(tmp_path / f"d{i}", frame, meta)
        try:
            result = engine.run(db, "eve", query)
            outcomes.append(("answered", str(len(result.rows))))
        except PrivdbError as err:
            outcomes.append((err.code, err.message))
        finally:
            db.close()
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] not in ("query_failed", "internal_error")  # refused before reading, if at all


def test_bool_declared_on_text_data_is_refused(tmp_path: Path) -> None:
    with Database(tmp_path / "d") as db:
        db.backend.load_frame("t", pd.DataFrame({"flag": ["yes", "no"]}))
        with pytest.raises(InvalidParameter, match="declared bool"):
            db.set_metadata("t", {"columns": {"flag": {"type": "bool", "lower": 0, "upper": 1}}})


def test_substituted_sum_under_where_stays_within_its_sensitivity(tmp_path: Path) -> None:
    """Finding 2: a row moving 1950 → 1999 under WHERE year > 1990 changes the sum by 1999."""
    meta = {"neighbouring": "substitute", "columns": {"year": {"type": "int", "lower": 1900, "upper": 2024}}}
    query = "DP-SELECT 1 SUM(year) FROM t WHERE year > 1990"
    sums = []
    for i, moved in enumerate((1950, 1999)):
        db = _db(tmp_path / f"d{i}", pd.DataFrame({"year": [2000, 2010, moved]}), meta)
        try:
            plan, sql = engine.prepare(db, query)
            sums.append(float(db.backend.fetch(sql).iloc[0, 0]))
            sensitivity = plan.statistics[0].sensitivity  # type: ignore[union-attr]
        finally:
            db.close()
    assert abs(sums[1] - sums[0]) == 1999 <= sensitivity == 2024


def test_a_failed_multi_statement_still_rebuilds_unit_counts(tmp_path: Path) -> None:
    """Finding 3: the UPDATE commits though the next statement fails; bounding must see it."""
    meta = {
        "privacy_unit": "pid",
        "max_contributions": 1,
        "columns": {"pid": {"type": "int", "private_id": True}, "x": {"type": "int", "lower": 0, "upper": 1}},
    }
    db = _db(tmp_path / "d", pd.DataFrame({"pid": np.arange(1000), "x": 1}), meta)
    try:
        with pytest.raises(Exception, match="no_such_column"):
            db.owner_sql("UPDATE t SET pid = 7; SELECT no_such_column FROM t")
        _, sql = engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM t")
        assert float(db.backend.fetch(sql).iloc[0, 0]) == 1  # one unit now: it counts once
        counts = db.backend.raw(f"SELECT DISTINCT {unit_rows_column('pid')} AS n FROM t")
        assert counts["n"].tolist() == [1000]
    finally:
        db.close()


def test_released_records_come_in_a_random_order(tmp_path: Path) -> None:
    """Finding 4: storage order (here sorted by an unreleased column) must not show in the release.
    With ε = 10 almost every record keeps its value, so storage order would put every 'hi' last; in a
    random order the two halves' shares differ by ≤ 0.1 (6 standard deviations: false failure < 1e-8)."""
    n = 4000
    frame = pd.DataFrame({"s": np.arange(n), "c": np.where(np.arange(n) < n // 2, "lo", "hi")})
    meta = {"columns": {"s": {"type": "int"}, "c": {"type": "category", "values": ["lo", "hi"]}}}
    db = _db(tmp_path / "d", frame, meta)
    try:
        rows = engine.run(db, "eve", "DP-SELECT 10 c FROM t").rows
    finally:
        db.close()
    hi = np.array([r[0] == "hi" for r in rows])
    assert abs(hi[: n // 2].mean() - hi[n // 2 :].mean()) <= 0.1


def test_thresholded_keys_come_sorted(tmp_path: Path) -> None:
    frame = pd.DataFrame({"city": np.repeat(["Zug", "Bern", "Aarau", "Chur"], 500)})
    db = _db(tmp_path / "d", frame, {"columns": {"city": {"type": "text"}}})
    try:
        rows = engine.run(db, "eve", "DP-SELECT 5 DELTA 1e-6 city, COUNT(*) FROM t GROUP BY city").rows
    finally:
        db.close()
    assert [r[0] for r in rows] == ["Aarau", "Bern", "Chur", "Zug"]
