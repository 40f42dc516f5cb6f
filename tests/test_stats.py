"""privdb.stats.linear_regression: several regressors from noisy sufficient statistics. Converges to the
true coefficients as n grows; one person moves each statistic by no more than its sensitivity (so the
Laplace noise on it is ε_i-DP and the release ε-DP by composition); charged once, stored, refused cleanly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import privdb
from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.stats import linear_regression

META: dict[str, Any] = {
    "columns": {
        "x1": {"type": "float", "lower": 0, "upper": 10},
        "x2": {"type": "float", "lower": -5, "upper": 5},
        "y": {"type": "float", "lower": -30, "upper": 40},
        "free": {"type": "float"},
    }
}


def _data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0, 10, n), rng.uniform(-5, 5, n)
    y = 1 + 2 * x1 - 3 * x2 + rng.normal(0, 1, n)
    return pd.DataFrame({"x1": x1, "x2": x2, "y": y, "free": y})


def _connect(path: Path, frame: pd.DataFrame, meta: dict[str, Any] = META) -> privdb.Connection:
    with Database(path) as db:
        db.backend.load_frame("t", frame)
        db.set_metadata("t", meta)
        db.grant("eve", epsilon=100)
    conn = privdb.connect(path, analyst="eve")
    assert isinstance(conn, privdb.Connection)
    conn._db.noise_source = seeded(9)
    return conn


def test_coefficients_converge_as_n_grows(tmp_path: Path) -> None:
    """At n = 1,000 and n = 200,000 (ε = 1): the error of the slope falls, and at 200,000 every
    coefficient is within 0.05 of the truth (the noise sd there is about 0.005: false failure < 1e-6)."""
    errors = []
    for n in (1_000, 200_000):
        conn = _connect(tmp_path / f"n{n}", _data(n, seed=n))
        try:
            fit = linear_regression(conn, "t", "y", ["x1", "x2"], 1.0)
        finally:
            conn.close()
        truth = {"intercept": 1.0, "x1": 2.0, "x2": -3.0}
        errors.append(max(abs(fit.coefficients[k] - v) for k, v in truth.items()))
        assert all(fit.ci95[k][0] < fit.ci95[k][1] for k in truth)
    assert errors[1] < errors[0] and errors[1] < 0.05, errors


def test_charged_once_and_stored(tmp_path: Path) -> None:
    conn = _connect(tmp_path / "c", _data(2_000, seed=1))
    try:
        first = linear_regression(conn, "t", "y", ["x1"], 0.5)
        again = linear_regression(conn, "t", "y", ["x1"], 0.5)
        assert first.epsilon_spent == 0.5 and again.result.cached
        assert first.coefficients == again.coefficients
        assert conn.budget()["epsilon_spent"] == pytest.approx(0.5)
        assert any(e["query"].startswith("REGRESSION") for e in conn.log())
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("y", ["free"]), "bounds"),
        (("y", []), "regressors"),
        (("y", ["y"]), "regressors"),
        (("y", ["nosuch"]), "no column"),
    ],
)
def test_bad_requests_are_refused_for_free(tmp_path: Path, args: tuple[str, list[str]], needle: str) -> None:
    conn = _connect(tmp_path / "r", _data(100, seed=2))
    try:
        with pytest.raises(PrivdbError, match=needle):
            linear_regression(conn, "t", args[0], args[1], 1.0)
        assert conn.budget()["epsilon_spent"] == 0
    finally:
        conn.close()


@pytest.mark.parametrize("extra", [(10.0, 5.0, 40.0), (0.0, -5.0, -30.0), (1e9, -1e9, 1e9)])
def test_one_person_moves_each_statistic_within_its_sensitivity(
    tmp_path: Path, extra: tuple[float, float, float]
) -> None:
    """Add/remove neighbours computed for real by the engine (clamping included)."""
    from privdb.sql import engine
    from privdb.sql.plan.sensitivity import make_statistic
    from privdb.sql.plan.types import Plan
    from privdb.sql.run.rewrite import engine_sql

    base = _data(300, seed=3)
    other = pd.concat([base, pd.DataFrame([{"x1": extra[0], "x2": extra[1], "y": extra[2], "free": 0.0}])])
    values = []
    for i, frame in enumerate((base, other)):
        with Database(tmp_path / f"d{i}") as db:
            db.backend.load_frame("t", frame)
            db.set_metadata("t", META)
            plan, _ = engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM t")
            assert isinstance(plan, Plan)
            meta = plan.table
            stats = [
                make_statistic("s0", "pprod", meta.column("x1"), 1.0, meta, False, meta.column("y")),
                make_statistic("s1", "pprod", meta.column("x1"), 1.0, meta, False, meta.column("x2")),
                make_statistic("s2", "sumsq", meta.column("x2"), 1.0, meta, False),
                make_statistic("s3", "sum", meta.column("y"), 1.0, meta, False),
            ]
            import dataclasses

            sql = engine_sql(dataclasses.replace(plan, statistics=tuple(stats)), "t")
            values.append(db.backend.fetch(sql))
    for stat in stats:
        change = abs(float(values[1][stat.name].iloc[0]) - float(values[0][stat.name].iloc[0]))
        assert change <= stat.sensitivity + 1e-6, (stat.kind, change, stat.sensitivity)
