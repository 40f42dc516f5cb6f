"""The 95% intervals of MEDIAN, QUANTILE, MIN and MAX in the answer's units (privdb.sql.plan.order).

Coverage on the census sample (data/pums, 1,000 rows): many seeded releases from the engine's own
histograms, each checked against the true quantile set of the clamped values. Each coverage test fails
with probability ≤ 1e-6 when the true coverage is exactly 95% (binomial tail); the construction is
conservative, so in practice it misses far less often.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import ALPHA, seeded
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.answer.choose import interval_of
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.order import bracket
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries
from sqlfixtures import DATA

PUMS_CSV = DATA / "pums" / "PUMS.csv"
META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},  # one candidate per year: an exact grid
        "sex": {"type": "int", "values": [0, 1]},
        "income": {"type": "int", "lower": 0, "upper": 500_000},  # too wide: 2^14 cells of ≈ 30.5
    }
}
RUNS = 300
MISSES_ALLOWED = int(stats.binom.isf(ALPHA, RUNS, 0.05))  # P(more misses | 95% coverage) ≤ 1e-6


@pytest.fixture(scope="module")
def pums(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = Database(tmp_path_factory.mktemp("pums") / "db")
    db.load("PUMS", PUMS_CSV, META)
    db.grant("eve", epsilon=100)
    yield db
    db.close()


def quantile_set(values: np.ndarray, q: float, lower: float, upper: float) -> tuple[float, float]:
    """Every value ``v`` with ``#{x < v} ≤ q·n ≤ #{x ≤ v}`` lies in this closed range (the quantiles the
    mechanism aims at: for q = 1/2 and even n, from the lower to the upper middle value)."""
    s = np.sort(values)
    target = q * s.size
    low = lower if target <= 0 else float(s[math.ceil(target) - 1])
    high = upper if math.floor(target) >= s.size else float(s[math.floor(target)])
    return low, high


def releases(db: Database, query: str, runs: int, seed: int) -> tuple[Plan, list[Any]]:
    """``runs`` independent answers to ``query`` from one read of the engine (add_noise on its frames)."""
    plan, sql = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    frame = db.backend.fetch(sql) if sql else None
    hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
    source = seeded(seed)
    return plan, [add_noise(plan, frame, source, hists) for _ in range(runs)]


CASES = [
    ("MEDIAN(age)", "age", 0.5),
    ("MEDIAN(income)", "income", 0.5),
    ("QUANTILE(income, 0.9)", "income", 0.9),
    ("QUANTILE(age, 0.25)", "age", 0.25),
    ("MIN(age)", "age", 0.0),
    ("MAX(income)", "income", 1.0),
]


@pytest.mark.parametrize(("aggregate", "column", "q"), CASES)
def test_the_interval_covers_the_true_quantile(pums: Database, aggregate: str, column: str, q: float) -> None:
    bounds = META["columns"][column]
    values = pums.backend.raw(f"SELECT {column} AS v FROM PUMS WHERE {column} IS NOT NULL")["v"].to_numpy()
    values = np.clip(values.astype(float), bounds["lower"], bounds["upper"])
    low, high = quantile_set(values, q, bounds["lower"], bounds["upper"])
    plan, answers = releases(pums, f"DP-SELECT 1 {aggregate} FROM PUMS", RUNS, seed=len(aggregate))
    intervals = np.array([answer.accuracy[0]["ci95"] for answer in answers])
    released = np.array([answer.rows[0][0] for answer in answers])
    assert ((intervals[:, 0] <= released) & (released <= intervals[:, 1])).all()  # it holds the answer
    misses = int(((intervals[:, 0] > low) | (intervals[:, 1] < high)).sum())
    assert misses <= MISSES_ALLOWED, (misses, RUNS)
    hist = plan.aggregates[0].histogram
    assert hist is not None
    t, _ = bracket(hist)
    # both ends aimed inside the data: far narrower than the bounds (an end aimed beyond it, as for MIN,
    # MAX or the 90th percentile of 1,000 rows ± 123 ranks, lands among the extreme values or beyond)
    if 0 < q < 1 and t < min(q, 1 - q) * values.size:
        span = bounds["upper"] - bounds["lower"]
        assert float(np.median(intervals[:, 1] - intervals[:, 0])) < 0.1 * span


def test_each_group_gets_its_own_interval(pums: Database) -> None:
    frame = pums.backend.raw("SELECT sex, income FROM PUMS")
    truth = {s: quantile_set(g["income"].to_numpy(float), 0.5, 0, 500_000) for s, g in frame.groupby("sex")}
    _, answers = releases(pums, "DP-SELECT 1 sex, MEDIAN(income) FROM PUMS GROUP BY sex", RUNS, seed=3)
    misses = {0: 0, 1: 0}
    for answer in answers:
        (entry,) = answer.accuracy
        assert len(entry["ci95_rows"]) == len(answer.rows) == 2
        for (sex, _), (a, b) in zip(answer.rows, entry["ci95_rows"], strict=True):
            misses[sex] += not (a <= truth[sex][0] and truth[sex][1] <= b)
    assert max(misses.values()) <= MISSES_ALLOWED, misses


def test_the_notes_worst_case_is_covered(tmp_path: Path) -> None:
    """Half the values at 0 and one more than half at 100: the median is 100, but the answer is almost
    uniform over 0..100 (every candidate in between misses q·n by half a rank). An interval around the
    answer misses; the bracket holds 100 (and 0: the ranks near q·n hold both)."""
    frame = pd.DataFrame({"age": [0] * 2000 + [100] * 2001, "sex": 0, "income": 0})
    db = Database(tmp_path / "db")
    try:
        db.backend.load_frame("t", frame)
        db.set_metadata("t", META)
        _, answers = releases(db, "DP-SELECT 1 MEDIAN(age) FROM t", RUNS, seed=9)
    finally:
        db.close()
    inside = [0 < a.rows[0][0] < 100 for a in answers]
    assert sum(inside) > RUNS // 2  # the answer itself is rarely the median
    misses = sum(not (a.accuracy[0]["ci95"][0] <= 100 <= a.accuracy[0]["ci95"][1]) for a in answers)
    assert misses <= MISSES_ALLOWED, misses


def test_the_entry_states_the_split_and_the_offset(pums: Database) -> None:
    plan, (answer,) = releases(pums, "DP-SELECT 1 MEDIAN(age) FROM PUMS", 1, seed=1)
    (entry,) = answer.accuracy
    hist = plan.aggregates[0].histogram
    assert hist is not None
    assert entry["epsilon_shares"] == {"answer": 0.5, "interval_low": 0.25, "interval_high": 0.25}
    assert entry["interval_rank_offset"] == pytest.approx(bracket(hist)[0])
    # the answer's own rank error is that of half the group's ε: twice the full-ε bound (at the sampler's
    # coefficient, 1e-6 below ε/(2Δ): docs/proofs/exponential.md, "Float scores")
    full = 2 * (math.log(101) + math.log(20)) / (1.0 - 1e-6)
    assert entry["rank_error95"] == pytest.approx(full, rel=1e-12)
    assert entry["ci95"] == entry["ci95_rows"][0]


def test_interval_of_is_the_hull_widened_on_a_float_grid(pums: Database) -> None:
    plan, _ = engine.prepare(pums, "DP-SELECT 1 MEDIAN(age), MEDIAN(income) FROM PUMS")
    assert isinstance(plan, Plan)
    ages, incomes = (a.histogram for a in plan.aggregates)
    assert ages is not None and incomes is not None
    assert interval_of(ages, 40, 35, 44) == (35, 44)  # exact integer grid: no widening
    assert interval_of(ages, 40, 0, 100) == (0, 100)
    assert interval_of(ages, 50, 44, 35) == (35, 50)  # crossed ends: the hull, and the answer inside
    step = incomes.width
    assert interval_of(incomes, 30_000, 20_000, 40_000) == (20_000 - step, 40_000 + step)
    assert interval_of(incomes, 0, 0, 500_000) == (0, 500_000)  # within the bounds
