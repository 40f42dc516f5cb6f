"""A quantile or a mode over a group of billions of rows answers: its outcome does not depend on the size.

The exponential mechanism refuses utilities beyond its float range (``max_span``, about 1.1e9·Δ, 5.6e8·Δ
monotone, whatever ε); a quantile's rank distances and a mode's counts grow with the rows, so before the
public clamp a group of ~10^9 rows was refused after reading: an outcome that depended on the data. The
tests feed the answer stage (``choose``, the code that turns the engine's per-cell counts into utilities
and draws) the per-cell counts of two neighbouring databases of ~2·10^9 rows (the engine's aggregated frame:
no rows are materialised), check both answer, that the utilities moved by at most Δ (the clamp keeps the
sensitivity), and that the draws follow the exact exponential mechanism of the clamped utilities, which the
test computes on its own from the counts (chi-square, false-failure rate ≤ 1e-6 per check).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from conftest import ALPHA, seeded
from privdb.database import Database
from privdb.mechanisms import ExponentialMechanism
from privdb.sql import engine
from privdb.sql.answer import choose
from privdb.sql.plan.order import bracket, end_mechanism
from privdb.sql.plan.types import Histogram, Plan

META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "city": {"type": "text", "values": ["a", "b", "c", "d"]},
    }
}
DRAWS = 3000
EPSILON = 1e-6  # a few times the planner's least ε for a quantile on 101 cells: the draws spread out


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    root = tmp_path_factory.mktemp("large")
    pd.DataFrame({"age": [1, 50, 99], "city": ["a", "b", "c"]}).to_csv(root / "t.csv", index=False)
    database = Database(root / "db")
    database.load("t", root / "t.csv", META)
    yield database
    database.close()


def _plan(db: Database, query: str) -> tuple[Plan, Histogram]:
    plan, _ = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    return plan, plan.histograms[0]


def _median_counts(extra: int) -> dict[int, float]:
    """Per age cell: 10^8 rows in each of cells 0–9 and 91–100 (2·10^9 rows far from the median), 10^6 in
    each of cells 40–60 (where the median lies), and ``extra`` more at the top (the neighbour)."""
    counts = dict.fromkeys([*range(10), *range(91, 101)], 100000000.0)
    counts |= dict.fromkeys(range(40, 61), 1000000.0)
    counts[100] += extra
    return counts


def _frame(counts: dict[Any, float]) -> pd.DataFrame:
    """The engine's per-cell frame (cell, weight) for one group without keys."""
    return pd.DataFrame({"c": list(counts), "n": list(counts.values())})


def _em(utilities: np.ndarray, mech: ExponentialMechanism) -> np.ndarray:
    w = np.exp(mech.sampled * (utilities - utilities.max()))
    return np.asarray(w / w.sum())


def _quantile_expected(hist: Histogram, counts: dict[int, float], q: float) -> list[np.ndarray]:
    """The three draws' exact distributions, from the counts by the test's own arithmetic: minus the
    distance from q·n (q·n ∓ t for the ends) to each cell's rank interval, the extreme candidates floored at
    −s₀, then everything floored at the public −max_span/2."""
    per = np.array([counts.get(c, 0.0) for c in range(hist.cells)])
    below = np.concatenate([[0.0], np.cumsum(per)])[:-1]
    upto = below + per
    n = per.sum()
    mech, ends = hist.mechanism(), end_mechanism(hist)
    t, s0 = bracket(hist)
    out = []
    for target, m, extreme in [(q * n, mech, None), (q * n - t, ends, 0), (q * n + t, ends, -1)]:
        u = -np.maximum(np.maximum(below - target, target - upto), 0.0)
        if extreme is not None:
            u[extreme] = max(u[extreme], -s0)
        out.append(_em(np.maximum(u, -m.max_span / 2.0), m))
    return out


def _chi2_ok(draws: np.ndarray, p: np.ndarray) -> bool:
    """Whether ``draws`` fit ``p`` (cells expecting fewer than 5 pooled), at false-failure rate ALPHA."""
    observed = np.bincount(draws, minlength=p.size).astype(float)
    expected = p * draws.size
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    if obs.size < 2:
        return bool(obs.sum() == exp.sum())
    return bool(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA)


@pytest.mark.parametrize("extra", [0, 1])
def test_median_of_two_billion_rows_answers_with_the_clamped_distribution(db: Database, extra: int) -> None:
    plan, hist = _plan(db, f"DP-SELECT {EPSILON} MEDIAN(age) FROM t")
    counts = _median_counts(extra)
    assert sum(counts.values()) > 2e9  # beyond the unclamped float range (refused before the clamp)
    frame = _frame(counts)
    source = seeded(20261123 + extra)
    answers, lows, highs = [], [], []
    for _ in range(DRAWS):
        values, intervals = choose.choose(plan, hist, frame, [()], 0.5, source)
        assert intervals is not None
        answers.append(int(values[0]))
        lows.append(int(intervals[0][0]))
        highs.append(int(intervals[0][1]))
    answer_p, low_p, high_p = _quantile_expected(hist, counts, 0.5)
    assert _chi2_ok(np.array(answers), answer_p)
    # the interval is the hull of the answer and the ends (an int grid: no padding)
    assert _chi2_ok(np.array(lows), _hull_low(answer_p, low_p, high_p))
    assert _chi2_ok(np.array(highs), _hull_high(answer_p, low_p, high_p))


def _hull_low(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The distribution of min(answer, low end, high end) for independent draws (an int grid: no padding)."""
    survive = [1 - np.cumsum(p) + p for p in (a, lo, hi)]  # P(X ≥ k)
    s = survive[0] * survive[1] * survive[2]
    return np.asarray(s - np.append(s[1:], 0.0))


def _hull_high(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The distribution of max(answer, low end, high end) for independent draws."""
    cdf = np.cumsum(a) * np.cumsum(lo) * np.cumsum(hi)
    return np.asarray(np.diff(np.concatenate([[0.0], cdf])))


def test_neighbouring_medians_move_by_at_most_delta_and_epsilon(db: Database) -> None:
    _, hist = _plan(db, f"DP-SELECT {EPSILON} MEDIAN(age) FROM t")
    pair = [choose.utilities(hist, _median_counts(extra), 0.5) for extra in (0, 1)]
    for u, v, m in zip(*pair, [hist.mechanism(), end_mechanism(hist), end_mechanism(hist)], strict=True):
        assert u.min() == -m.max_span / 2.0  # the floor is reached: the clamp is what makes it answer
        assert np.max(np.abs(u - v)) <= hist.sensitivity
        ratio = np.abs(np.log(_em(u, m)) - np.log(_em(v, m)))
        assert ratio.max() <= m.sampled * 2 * hist.sensitivity * (1 + 1e-9)


@pytest.mark.parametrize("extra", [0, 1])
def test_mode_of_billions_answers_with_the_capped_distribution(db: Database, extra: int) -> None:
    plan, hist = _plan(db, f"DP-SELECT {EPSILON} MODE(city) FROM t")
    mech = hist.mechanism()
    cap = mech.max_span / 2.0
    assert hist.monotone and 2e8 < cap < 4e8
    # two values past the cap (tied once capped), one 2·10^6 below it, one small: the neighbour adds a row
    counts = {"a": 2e9 + extra, "b": 1.5e9, "c": float(int(cap) - 2_000_000), "d": 10.0}
    frame = _frame(counts)
    source = seeded(20261125 + extra)
    draws = [choose.choose(plan, hist, frame, [()], None, source)[0][0] for _ in range(DRAWS)]
    index = {v: i for i, v in enumerate(hist.values or ())}
    capped = np.minimum(np.array([counts[v] for v in hist.values or ()]), cap)
    assert _chi2_ok(np.array([index[d] for d in draws]), _em(capped, mech))


@pytest.fixture(scope="module")
def hists(db: Database) -> tuple[Histogram, Histogram]:
    """The public histograms of a lower quartile and of a mode (from the plan: no data read)."""
    return (
        _plan(db, f"DP-SELECT {EPSILON} QUANTILE(age, 0.25) FROM t")[1],
        _plan(db, f"DP-SELECT {EPSILON} MODE(city) FROM t")[1],
    )


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(st.integers(0, 3_000_000_000), min_size=101, max_size=101),
    where=st.integers(0, 100),
    q=st.sampled_from([0.5, 0.25, 0.75]),
)
def test_clamped_quantile_utilities_keep_the_sensitivity(
    hists: tuple[Histogram, Histogram], cells: list[int], where: int, q: float
) -> None:
    hist = hists[0]  # Δ = 0.75: QUANTILE(age, 0.25), which covers q and 1 − q ∈ {0.25, 0.5, 0.75}
    counts = {c: float(n) for c, n in enumerate(cells)}
    more = dict(counts)
    more[where] += 1.0
    floors = [hist.mechanism().max_span / 2.0] + [end_mechanism(hist).max_span / 2.0] * 2
    pairs = zip(choose.utilities(hist, counts, q), choose.utilities(hist, more, q), floors, strict=True)
    for u, v, floor in pairs:
        assert u.min() >= -floor and v.min() >= -floor and u.max() <= 0  # the public range
        assert np.max(np.abs(u - v)) <= hist.sensitivity


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(0, 2_000_000_000), min_size=4, max_size=4), where=st.integers(0, 3))
def test_capped_mode_utilities_keep_the_sensitivity_and_monotonicity(
    hists: tuple[Histogram, Histogram], counts: list[int], where: int
) -> None:
    hist = hists[1]
    assert hist.values is not None
    index = {v: i for i, v in enumerate(hist.values)}
    before = {v: float(n) for v, n in zip(hist.values, counts, strict=True)}
    after = dict(before)
    after[hist.values[where]] += 1.0
    low, high = choose.mode_utilities(hist, index, before), choose.mode_utilities(hist, index, after)
    assert low.min() >= 0 and high.max() <= hist.mechanism().max_span / 2.0  # the public range
    moved = high - low
    assert moved.min() >= 0 and moved.max() <= hist.sensitivity  # monotone, within Δ
