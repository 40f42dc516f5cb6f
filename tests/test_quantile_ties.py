"""Order statistics on tied data (issue 26, item 4): a point mass must win the exponential mechanism.

Before the fix a float grid put a value into the cell *between* two candidates and scored each candidate by
the rank interval of the point itself (``#{x < y} = #{x ≤ y}``), so 100 copies of 10.0 gave every candidate
the same utility and the median was uniform over the bounds. Values now go to their nearest grid point and
candidates are scored by ``[#{x < y}, #{x ≤ y}]`` of those points (docs/proofs/sql.md, "Order statistics").
Fixed seeds; false-failure rates stated per test."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.catalog.metadata import ColumnMeta
from privdb.database import Database
from privdb.mechanisms import ExponentialMechanism
from privdb.sql import engine
from privdb.sql.answer import choose
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan import types
from privdb.sql.plan.sensitivity import make_histogram
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

RUNS = 200


def _draws(tmp_path: Path, frame: pd.DataFrame, meta: dict[str, Any], query: str, seed: int) -> np.ndarray:
    """``RUNS`` releases of ``query`` (answer and interval ends) from one engine read, each with fresh
    noise from a seeded source: ``[answer, ci_low, ci_high]`` per run."""
    db = Database(tmp_path / f"db{seed}")
    try:
        db.backend.load_frame("t", frame)
        db.set_metadata("t", meta)
        plan, _ = engine.prepare(db, query)
        assert isinstance(plan, Plan)
        hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
    finally:
        db.close()
    source = seeded(seed)
    out = []
    for _ in range(RUNS):
        answer = add_noise(plan, None, source, hists)
        low, high = answer.accuracy[0]["ci95"]
        out.append([answer.rows[0][0], low, high])
    return np.array(out, dtype=float)


def _mostly_zeros(n: int = 1000, seed: int = 2) -> pd.DataFrame:
    """Capital gains: 90% zeros, the rest spread over 1 … 99,999 (as UCI Adult's capital-gain)."""
    rng = np.random.default_rng(seed)
    gain = np.where(rng.random(n) < 0.9, 0, rng.integers(1, 100_000, n))
    return pd.DataFrame({"gain": gain})


GAIN_META: dict[str, Any] = {"columns": {"gain": {"type": "int", "lower": 0, "upper": 99_999}}}
TENS_META: dict[str, Any] = {"columns": {"v": {"type": "float", "lower": 0, "upper": 100}}}


def test_a_column_of_mostly_zeros_has_median_zero(tmp_path: Path) -> None:
    """90% zeros on a grid of 2^14 cells over [0, 99999] (an int column too wide for one cell per integer):
    the median is exactly 0 in every run. The zero point has utility 0, every other candidate ≤ −400 ranks
    at Δ = 1/2 and c = 1/2 (half of ε = 1 chooses the answer): any other answer has probability
    ≤ 2^14·e^−200 per run; over 200 runs the false-failure rate is below 1e-80."""
    frame = _mostly_zeros()
    assert (frame["gain"] == 0).mean() > 0.88
    draws = _draws(tmp_path, frame, GAIN_META, "DP-SELECT 1 MEDIAN(gain) FROM t", seed=21)
    assert (draws[:, 0] == 0).all(), np.unique(draws[:, 0])
    assert (draws[:, 1] <= 0).all() and (draws[:, 2] >= 0).all()  # the interval holds the true median


def test_a_point_mass_inside_a_float_cell_wins(tmp_path: Path) -> None:
    """100 copies of 10.0 on [0, 100] (float, cell 100/2^14 ≈ 0.0061, 10.0 not a grid point): the answer
    is the grid point nearest 10.0, within half a cell. Every other candidate is 50 ranks from the target
    (utility −50, c = 1/2 per unit of rank at Δ = 1/2): probability ≤ 2^14·e^−25 ≈ 2e-7 per run, ≤ 5e-5
    for any of 200 runs."""
    frame = pd.DataFrame({"v": [10.0] * 100})
    draws = _draws(tmp_path, frame, TENS_META, "DP-SELECT 1 MEDIAN(v) FROM t", seed=22)
    width = 100 / 2**14
    assert (np.abs(draws[:, 0] - 10.0) <= width / 2 + 1e-12).all(), np.unique(draws[:, 0])
    # each interval covers 10 (its ends aim t ≈ 68 ranks beyond q·n = 50, past the data: wide by design)
    assert (draws[:, 1] <= 10.0).all() and (draws[:, 2] >= 10.0).all()


@pytest.mark.parametrize(("q", "expected"), [(0.25, 10.0), (0.75, 10.0), (0.0, None), (1.0, None)])
def test_every_level_and_end_scores_a_point_mass(tmp_path: Path, q: float, expected: float | None) -> None:
    """QUANTILE at other levels, MIN and MAX on 1,000 copies of 10.0: the point mass holds every rank, so
    the quartiles are within half a cell of 10: every other candidate is ≥ 250 ranks off at Δ = 3/4
    (c = 1/3), probability ≤ 2^14·e^−83 per run (false-failure rate < 1e-30). MIN can answer anything in
    [0, 10] and MAX in [10, 100] by design (no candidate below the smallest value is worse than it), but
    each interval covers 10 (up to its one-cell widening)."""
    frame = pd.DataFrame({"v": [10.0] * 1000})
    query = f"DP-SELECT 1 QUANTILE(v, {q}) FROM t"
    draws = _draws(tmp_path, frame, TENS_META, query, seed=23)
    width = 100 / 2**14
    if expected is not None:
        assert (np.abs(draws[:, 0] - expected) <= width / 2 + 1e-12).all(), np.unique(draws[:, 0])
        # the ends aim q·n ± t (t ≈ 102 ranks at Δ = 3/4), inside the point mass: each lands on it unless
        # it takes its floored bound (weight e^−ln 40 against the point's 1: ≤ 1/41), so an interval is the
        # point widened by one cell with probability ≥ (40/41)² ≈ 0.952 (other candidates, ≥ 148 ranks off
        # at c = 1/6: ≤ 2^14·e^−24). Fewer than 170 of 200: binomial tail ≤ 1.1e-8
        narrow = (draws[:, 2] - draws[:, 1] <= 2 * width + 1e-9).sum()
        assert narrow >= 170, narrow
    assert (draws[:, 1] <= 10.0 + width).all() and (draws[:, 2] >= 10.0 - width).all()


def _neighbours(m: int, substitute: bool, cells: tuple[int, ...]) -> list[dict[int, float]]:
    """The changes one unit of at most ``m`` rows can make to a histogram over ``cells``: added weight
    (add/remove: the removed direction is the same pair read backwards), or moved weight (substitute)."""
    if substitute:
        return [{a: -1.0, b: 1.0} for a in cells for b in cells if a != b] + (
            [{a: -2.0, b: 1.0, c: 1.0} for a in cells for b in cells for c in cells if a not in (b, c)]
            if m == 2
            else []
        )
    changes: list[dict[int, float]] = [{a: 1.0} for a in cells]
    if m == 2:
        changes += [{a: 2.0} for a in cells] + [{a: 0.5, b: 1.5} for a in cells for b in cells if a != b]
    return changes


@pytest.mark.parametrize("substitute", [False, True])
@pytest.mark.parametrize("m", [1, 2])
@pytest.mark.parametrize("q", [0.0, 0.3, 0.5])  # 1.0 mirrors 0.0
def test_every_choice_is_epsilon_dp_on_tied_neighbours(m: int, substitute: bool, q: float) -> None:
    """For every histogram with at most 2 rows in each of five cells (the two bounds, a tie's cell and its
    neighbour, the middle) against every neighbour a unit of ``m`` rows makes: each utility (answer and
    both ends) moves by at most the stated Δ, and reaches it (Δ is tight, so a smaller one would fail), and
    the exact probability ratio of every candidate is ≤ e^(share·ε) (up to float rounding). The grid is an
    int column's (21 candidates, for speed): a float grid's cells are scored by the same code, only the
    engine's cell of a value differs. Exact computation, no sampling: cannot fail falsely."""
    column = ColumnMeta("v", "int", 0.0, 20.0)
    hist = make_histogram("h", "quantile", column, 1.0, m, substitute, q)
    cells = (0, 7, 8, 12, 20)
    shares = (types.ANSWER_SHARE, types.END_SHARE, types.END_SHARE)
    mechs = [ExponentialMechanism(epsilon=hist.epsilon * s, sensitivity=hist.sensitivity) for s in shares]
    worst, moved = 0.0, 0.0
    for base in itertools.product(range(3), repeat=len(cells)):
        counts = {c: float(n) for c, n in zip(cells, base, strict=True) if n}
        utils = choose.utilities(hist, counts, q)
        before = [np.log(mech.probabilities(u)) for mech, u in zip(mechs, utils, strict=True)]
        for change in _neighbours(m, substitute, cells):
            other = {c: counts.get(c, 0.0) + change.get(c, 0.0) for c in cells}
            if min(other.values()) < 0:
                continue
            after = choose.utilities(hist, {c: n for c, n in other.items() if n}, q)
            for mech, share, p, u, v in zip(mechs, shares, before, after, utils, strict=True):
                moved = max(moved, float(np.max(np.abs(u - v))) / hist.sensitivity)
                ratio = float(np.max(np.abs(p - np.log(mech.probabilities(u))))) / (hist.epsilon * share)
                worst = max(worst, ratio)
    assert moved == pytest.approx(1.0), moved
    assert worst <= 1.0 + 1e-9, worst
