"""Accuracy first on two neighbouring databases (Alice in or out): the released sequence up to step k costs
ε_k, not ε_1 + … + ε_k (an empirical audit, with a negative control that draws each step afresh), and every
outcome besides the noisy values (refusals before reading, columns, rows) is the same on both neighbours."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from adversarial.neighbours import Neighbours, neighbours, same_outcome
from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.mechanisms import Geometric
from privdb.mechanisms.noise_reduction import NoiseReduction
from privdb.sql import engine
from privdb.sql.answer.noise import true_values_by_group
from privdb.sql.plan.types import Plan

QUERY = "DP-SELECT ACCURACY 500 MAX 1 AVG(income) FROM people"
STEPS = (0.5, 1.0)  # the audited prefix: (v_1, v_2) costs ε_2 = 1 ex post; drawn afresh it would cost 1.5
SAMPLES = 200_000


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Neighbours]:
    both = neighbours(tmp_path)
    yield both
    both.close()


def _count(pair: Neighbours) -> tuple[Plan, list[float]]:
    """The accuracy-first plan (the same on both: it is public) and the true count the AVG divides by, read
    by the engine from each neighbour."""
    counts = []
    plans = []
    for db in pair.both():
        plan, sql = engine.prepare(db, QUERY, "eve")
        assert isinstance(plan, Plan) and plan.query.schedule is not None
        backend, _ = db.backend_for("people")
        _, truth = true_values_by_group(plan, backend.fetch(sql))
        (nonnull,) = [s for s in plan.statistics if s.kind == "nonnull"]
        counts.append(float(truth[nonnull.name][0]))
        plans.append(plan)
    assert plans[0].statistics == plans[1].statistics and plans[0].query.schedule == plans[1].query.schedule
    assert abs(counts[1] - counts[0]) == 1  # Alice moves the count by its sensitivity
    return plans[0], counts


def _cells(v1: NDArray[np.float64], v2: NDArray[np.float64], base: float) -> NDArray[np.int64]:
    """The prefix (v_1, v_2) as one of 36 cells (each clipped to base − 2 … base + 3): post-processing."""
    c1 = np.clip(np.rint(v1 - base), -2, 3).astype(np.int64) + 2
    c2 = np.clip(np.rint(v2 - base), -2, 3).astype(np.int64) + 2
    out: NDArray[np.int64] = c1 * 6 + c2
    return out


def test_the_released_prefix_costs_its_last_step(pair: Neighbours) -> None:
    plan, counts = _count(pair)
    (nonnull,) = [s for s in plan.statistics if s.kind == "nonnull"]
    assert nonnull.integer and nonnull.sensitivity == 1
    reduction = NoiseReduction(epsilons=STEPS, sensitivity=1, integer=True, rng=seeded(31))

    def draw(count: float) -> Callable[[int], NDArray[np.int64]]:
        def sample(n: int) -> NDArray[np.int64]:
            v1, v2 = reduction.release(np.full(n, count))
            return _cells(v1, v2, counts[0])

        return sample

    result = audit("noise reduction prefix", draw(counts[0]), draw(counts[1]), epsilon=STEPS[-1],
                   samples=SAMPLES, confidence=1 - ALPHA)  # fmt: skip
    assert result.passed, result
    assert result.epsilon_lower_bound > 0.5  # informative: more than the first step's ε alone


def test_the_audit_catches_steps_drawn_afresh(pair: Neighbours) -> None:
    """Negative control: independent releases at ε_1 and ε_2 cost ε_1 + ε_2 = 1.5; the same audit finds
    more than the noise reduction's claim of 1."""
    _, counts = _count(pair)
    noisier = Geometric(epsilon=STEPS[0], rng=seeded(41))
    sharper = Geometric(epsilon=STEPS[1], rng=seeded(42))

    def draw(count: float) -> Callable[[int], NDArray[np.int64]]:
        def sample(n: int) -> NDArray[np.int64]:
            return _cells(noisier.release(np.full(n, count)), sharper.release(np.full(n, count)), counts[0])

        return sample

    result = audit("fresh steps", draw(counts[0]), draw(counts[1]), epsilon=STEPS[-1],
                   samples=SAMPLES, confidence=1 - ALPHA)  # fmt: skip
    assert not result.passed, result


@pytest.mark.parametrize(
    "query",
    [
        QUERY,
        "DP-SELECT ACCURACY 500 MAX 1 AVG(income), STDDEV(age) FROM people WHERE visits > 3",
        "DP-SELECT ACCURACY 500 AVG(income) FROM people",
        "DP-SELECT ACCURACY 0.0001 MAX 1 AVG(income), COUNT(*) FROM people",
        "DP-SELECT ACCURACY 5 MAX 2000 AVG(age) FROM people",
        "DP-SELECT ACCURACY 5 MAX 1 DELTA 1e-6 disease, AVG(age) FROM people GROUP BY disease",
        "DP-SELECT ACCURACY 5 MAX 1 AVG(age), MEDIAN(age) FROM people",
    ],
)
def test_outcomes_are_the_same_on_both_neighbours(pair: Neighbours, query: str) -> None:
    same_outcome(pair, query)
