"""Order statistics and modes in DP-SELECT: MEDIAN, QUANTILE, MIN, MAX by the exponential mechanism over a
grid of the bounds (Smith 2011), MODE over a public domain. Fixed seeds; false-failure rates stated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.mechanisms import ExponentialMechanism
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 200_000},
        "city": {"type": "category", "values": ["Bern", "Basel", "Chur"]},
        "note": {"type": "text"},
    }
}


def _db(path: Path, frame: pd.DataFrame, meta: dict[str, Any] = META) -> Database:
    db = Database(path)
    db.backend.load_frame("t", frame)
    db.set_metadata("t", meta)
    db.grant("eve", epsilon=1000, delta=1e-3)
    db.noise_source = seeded(5)
    return db


def _people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": np.arange(n),
            "age": rng.integers(18, 90, n),
            "income": rng.lognormal(10.5, 0.6, n),
            "city": rng.choice(["Bern", "Basel", "Chur"], n, p=[0.5, 0.3, 0.2]),
            "note": "x",
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = _db(tmp_path / "db", _people(20_000, seed=1))
    yield database
    database.close()


def _rank_distance(values: np.ndarray, y: float, target: float) -> float:
    """How far the target rank q·n lies from y's rank interval [#{x < y}, #{x ≤ y}] (the utility's loss)."""
    return max(float((values < y).sum()) - target, target - float((values <= y).sum()), 0.0)


@pytest.mark.parametrize(("aggregate", "q"), [("MEDIAN(age)", 0.5), ("QUANTILE(income, 0.9)", 0.9),
                                             ("MIN(age)", 0.0), ("MAX(income)", 1.0)])  # fmt: skip
def test_answers_are_within_the_stated_rank_error(db: Database, aggregate: str, q: float) -> None:
    """With probability ≥ 1 − 1e-6 the chosen candidate's utility is within the McSherry–Talwar bound."""
    column = aggregate.split("(")[1].split(")")[0].split(",")[0]
    data = db.backend.raw(
        f"SELECT LEAST(GREATEST({column}, 0), {200_000 if column == 'income' else 100}) AS v FROM t"
    )
    values = data["v"].to_numpy()
    plan, _ = engine.prepare(db, f"DP-SELECT 1 {aggregate} FROM t")
    assert isinstance(plan, Plan)
    hist = plan.aggregates[0].histogram
    assert hist is not None
    bound = hist.mechanism().utility_loss(hist.points, ALPHA) + 1
    res = engine.run(db, "eve", f"DP-SELECT 1 {aggregate} FROM t")
    y = res.rows[0][0]
    assert _rank_distance(values, y, q * len(values)) <= bound, (y, bound)
    assert res.accuracy[0]["mechanism"] == "exponential" and res.accuracy[0]["rank_error95"] > 0


def test_the_engine_draws_from_the_exact_exponential_distribution(tmp_path: Path) -> None:
    """Chi-square of 20,000 draws against exp(ε·u/(2Δ)) (ε: the answer's half) over every candidate of a
    small int column (p-value threshold 1e-6)."""
    frame = pd.DataFrame({"age": [1, 2, 2, 3, 7, 9, 9, 9], "income": 0.0, "city": "Bern", "note": "x"})
    meta = {**META, "columns": {**META["columns"], "age": {"type": "int", "lower": 0, "upper": 10}}}
    db = _db(tmp_path / "d", frame, meta)
    try:
        plan, _ = engine.prepare(db, "DP-SELECT 1 MEDIAN(age) FROM t")
        assert isinstance(plan, Plan)
        hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
        source = seeded(7)
        draws = [add_noise(plan, None, source, hists).rows[0][0] for _ in range(20_000)]
    finally:
        db.close()
    candidates = np.arange(0, 11)
    below = np.array([(frame["age"] < y).sum() for y in candidates])
    upto = np.array([(frame["age"] <= y).sum() for y in candidates])
    target = 0.5 * len(frame)  # utility: distance from q·n to the rank interval; Δ = max(q, 1 − q) = 1/2
    utility = -np.maximum(np.maximum(below - target, target - upto), 0)
    # the answer gets half the group's ε; the other half chooses its interval's ends (privdb.sql.plan.order)
    expected = ExponentialMechanism(epsilon=0.5, sensitivity=0.5).probabilities(utility)
    observed = np.array([draws.count(float(y)) for y in candidates])
    keep = expected * len(draws) >= 5
    chi = stats.chisquare(observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum())
    assert chi.pvalue > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("extra", [0, 100])
def test_median_on_neighbours_stays_within_the_claim(tmp_path: Path, extra: int) -> None:
    """The notes' worst case: half the values at 0, half at the top; one person added at either end."""
    base = pd.DataFrame({"age": [0] * 20 + [100] * 20, "income": 0.0, "city": "Bern", "note": "x"})
    bigger = pd.concat([base, base.iloc[:1].assign(age=extra)], ignore_index=True)
    draws = []
    for i, frame in enumerate((base, bigger)):
        db = _db(tmp_path / f"d{i}", frame)
        try:
            plan, _ = engine.prepare(db, "DP-SELECT 1 MEDIAN(age) FROM t")
            assert isinstance(plan, Plan)
            hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
        finally:
            db.close()
        source = seeded(11 + i)

        def draw(n: int, plan: Plan = plan, hists: Any = hists, source: Any = source) -> np.ndarray:
            return np.array([add_noise(plan, None, source, hists).rows[0][0] for _ in range(n)])

        draws.append(draw)
    result = audit("median", draws[0], draws[1], epsilon=1.0, samples=20_000, confidence=1 - ALPHA)
    assert result.passed, result


def test_grouped_median_and_mode(db: Database) -> None:
    res = engine.run(db, "eve", "DP-SELECT 2 city, MEDIAN(age), MODE(city) AS top FROM t GROUP BY city")
    assert [r[0] for r in res.rows] == ["Bern", "Basel", "Chur"]
    assert all(40 <= r[1] <= 70 for r in res.rows)  # ages 18..89, median ≈ 53 (rank error ≈ 12 of 2,000+)
    assert [r[2] for r in res.rows] == ["Bern", "Basel", "Chur"]  # each group's only value wins
    mode = engine.run(db, "eve", "DP-SELECT 1 MODE(city) FROM t")
    assert mode.rows[0][0] == "Bern"  # 10,000 against 6,000: the gap dwarfs the noise (loss ≈ 8)


def test_a_person_with_many_rows_moves_a_median_by_at_most_m_ranks(tmp_path: Path) -> None:
    meta = {**META, "privacy_unit": "pid", "max_contributions": 1,
            "columns": {**META["columns"], "pid": {"type": "int", "private_id": True}}}  # fmt: skip
    frame = _people(2000, seed=3)
    heavy = pd.DataFrame(
        {"pid": 99_999, "age": 100, "income": 0.0, "city": "Bern", "note": "x"}, index=range(5000)
    )
    db = _db(tmp_path / "u", pd.concat([frame, heavy], ignore_index=True), meta)
    try:
        plan, _ = engine.prepare(db, "DP-SELECT 1 MEDIAN(age) FROM t")
        assert isinstance(plan, Plan)
        hist_frame = db.backend.fetch(histogram_queries(db, plan)[plan.histograms[0].name])
    finally:
        db.close()
    assert hist_frame["n"].sum() == pytest.approx(2001)  # the heavy person counts as one row
    res_rank_weight = hist_frame.loc[hist_frame["c"] == 100, "n"].sum()
    assert res_rank_weight <= (frame["age"] == 100).sum() + 1


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("DP-SELECT 1 QUANTILE(age, 1.5) FROM t", "between 0 and 1"),
        ("DP-SELECT 1 QUANTILE(age, 'x') FROM t", "level is a number"),
        ("DP-SELECT 1 MEDIAN(note) FROM t", "not numeric"),
        ("DP-SELECT 1 MODE(note) FROM t", "public values"),
    ],
)
def test_bad_order_statistics_are_refused_for_free(db: Database, query: str, needle: str) -> None:
    with pytest.raises(PrivdbError, match=needle):
        engine.run(db, "eve", query)
    assert db.budget("eve").epsilon_spent == 0
