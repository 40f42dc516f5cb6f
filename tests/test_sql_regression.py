"""CORR, COVAR_POP, REGR_SLOPE, REGR_INTERCEPT in DP-SELECT from noisy sufficient statistics: they
converge to the truth as n grows, their plug-in intervals cover, and one person moves each sufficient
statistic by no more than its sensitivity. Fixed seeds; false-failure rates stated per test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.types import Plan

META: dict[str, Any] = {
    "columns": {
        "x": {"type": "float", "lower": 0, "upper": 10},
        "y": {"type": "float", "lower": -10, "upper": 40},
    }
}
QUERY = "DP-SELECT 2 REGR_SLOPE(y, x), REGR_INTERCEPT(y, x), CORR(x, y), COVAR_POP(x, y) FROM t"


def _data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "y": 3 + 2 * x + rng.normal(0, 2, n)})


def _db(path: Path, frame: pd.DataFrame, meta: dict[str, Any] = META) -> Database:
    db = Database(path)
    db.backend.load_frame("t", frame)
    db.set_metadata("t", meta)
    db.grant("eve", epsilon=1e6)
    return db


def _truth(db: Database) -> list[float]:
    row = db.backend.raw(
        "SELECT REGR_SLOPE(y, x), REGR_INTERCEPT(y, x), CORR(x, y), COVAR_POP(x, y) FROM t"
    ).iloc[0]
    return [float(v) for v in row]


def _repeat(db: Database, times: int, seed: int) -> tuple[np.ndarray, list[list[Any]]]:
    plan, sql = engine.prepare(db, QUERY)
    assert isinstance(plan, Plan)
    frame = db.backend.fetch(sql)
    source = seeded(seed)
    answers = [add_noise(plan, frame, source) for _ in range(times)]
    values = np.array([a.rows[0] for a in answers], dtype=float)
    return values, [a.accuracy for a in answers]


def test_estimates_converge_to_the_data_as_n_grows(tmp_path: Path) -> None:
    """Mean absolute error over 30 draws falls by more than 5x from n = 2,000 to n = 200,000 (the noise
    on each sufficient statistic is fixed while the statistics grow 100x)."""
    errors = []
    for n in (2_000, 200_000):
        db = _db(tmp_path / f"n{n}", _data(n, seed=n))
        try:
            values, _ = _repeat(db, 30, seed=3)
            errors.append(np.nanmean(np.abs(values - np.array(_truth(db))), axis=0))
        finally:
            db.close()
    assert (errors[1] * 5 < errors[0]).all(), errors
    assert errors[1][0] < 0.01 and errors[1][2] < 0.005  # slope 2 and correlation to 2-3 decimals


def test_plug_in_intervals_cover(tmp_path: Path) -> None:
    """Coverage of the approximate 95% intervals over 200 draws lies in [0.85, 1] for every aggregate
    (at true coverage 0.95 the chance of < 0.85 is below 1e-6)."""
    db = _db(tmp_path / "c", _data(5_000, seed=1))
    try:
        _, accuracy = _repeat(db, 200, seed=4)
        truth = _truth(db)
    finally:
        db.close()
    for j, true in enumerate(truth):
        covered = [acc[j]["ci95"][0] <= true <= acc[j]["ci95"][1] for acc in accuracy]
        assert 0.85 <= np.mean(covered) <= 1.0, (j, np.mean(covered))


@pytest.mark.parametrize("neighbouring", ["add_remove", "substitute"])
@pytest.mark.parametrize(
    "extra",
    [{"x": 10.0, "y": 40.0}, {"x": 10.0, "y": -10.0}, {"x": 0.0, "y": -10.0}, {"x": 1e9, "y": -1e9}],
)
def test_one_person_moves_each_statistic_within_its_sensitivity(
    tmp_path: Path, neighbouring: str, extra: dict[str, float]
) -> None:
    base = _data(200, seed=5)
    meta = {**META, "neighbouring": neighbouring}
    if neighbouring == "add_remove":
        other = pd.concat([base, pd.DataFrame([extra])], ignore_index=True)
    else:
        other = base.copy()
        other.iloc[0] = [extra["x"], extra["y"]]
    frames = []
    for i, frame in enumerate((base, other)):
        db = _db(tmp_path / f"d{i}", frame, meta)
        try:
            plan, sql = engine.prepare(db, QUERY)
            frames.append(db.backend.fetch(sql))
        finally:
            db.close()
    assert isinstance(plan, Plan)
    for stat in plan.statistics:
        change = abs(float(frames[1][stat.name].iloc[0]) - float(frames[0][stat.name].iloc[0]))
        assert change <= stat.sensitivity + 1e-9, (stat.kind, change, stat.sensitivity)
