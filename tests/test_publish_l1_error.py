"""The synthetic-data selections' float scores and the error they declare (privdb.publish.l1).

MWEM's, MST's and AIM's selections score candidates by L1 distances between exact integer counts and a
public float estimate (AIM: weighted, less a public noise term). ``l1_score`` rounds the real score once
(TwoSum + fsum), so its error is bounded by the clip range alone; ``selector`` builds the exponential
mechanism with that bound as ``utility_error``. The checks below compute the real scores with Fractions: the
float scores near the clip's edge do differ from them (a bound of 0 fails), by no more than the declared
bound; and each selection runs its draws on a mechanism built by ``selector``
(docs/proofs/exponential.md, "Float scores" and the callers table)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import privdb.publish.aim as aim_module
import privdb.publish.mst as mst_module
import privdb.publish.mwem as mwem_module
from conftest import seeded
from privdb.mechanisms import ExponentialMechanism, RandomSource
from privdb.publish.aim import aim_round, score
from privdb.publish.l1 import l1_score, selector


def _exact_l1(x: np.ndarray, e: np.ndarray, offset: float = 0.0) -> Fraction:
    return sum(
        (abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(x, e, strict=True)), Fraction(0)
    ) - Fraction(offset)


def _awkward(rng: np.random.Generator, k: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """k integer counts and a float estimate whose L1 distance to them is about ``scale`` (irrational-looking
    fractions, errors of both signs)."""
    x = rng.integers(0, 1000, size=k).astype(np.float64)
    return x, x + rng.choice([-1.0, 1.0], size=k) * rng.uniform(0.5, 1.5, size=k) * (scale / k) * math.pi / 3


def test_l1_score_is_the_real_score_rounded_once() -> None:
    rng = np.random.default_rng(3)
    plain_off = 0
    for k in (1, 7, 1000, 20_000):
        x, e = _awkward(rng, k, 1e8)
        for offset in (0.0, 0.1 * k, math.sqrt(2 / math.pi) * 3.7 * k):
            real = _exact_l1(x, e, offset)
            assert l1_score(x, e, offset) == float(real)  # float(Fraction) rounds to nearest
            plain_off += float(np.abs(x - e).sum()) - offset != float(real)
    assert plain_off > 0  # the plain float sum is not the rounded real score: its error is real
    assert l1_score([0.0, 5.0], [0.0, 5.0]) == 0.0
    assert l1_score([1.0], [1e308 * 10]) == math.inf  # overflow stays non-finite (refused by the mechanism)


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(0.3, 1.0), (2.0, 4.0)])
def test_unweighted_scores_err_by_more_than_zero_and_within_the_declared_bound(
    epsilon: float, sensitivity: float
) -> None:
    """Scores just under the clip's top (where the rounding is largest): the clipped float score is off the
    clipped real one by > 0 for some, ≤ utility_error for all; scores above the top clip exactly."""
    em, lo, hi = selector(epsilon, sensitivity, seeded(1))
    assert lo == 0.0 and em.utility_error > 0.0
    assert em.accepts(lo, hi)
    rng = np.random.default_rng(5)
    worst = Fraction(0)
    for target in (0.999 * hi, 0.7 * hi, 1.001 * hi, 3 * hi):
        for _ in range(20):
            x, e = _awkward(rng, 9, target)
            real = _exact_l1(x, e)
            clipped_real = min(max(real, Fraction(lo)), Fraction(hi))
            clipped = float(em.clamp([l1_score(x, e)], lo, hi)[0])
            worst = max(worst, abs(Fraction(clipped) - clipped_real))
    assert 0 < worst <= Fraction(em.utility_error)


@pytest.mark.parametrize("weight", [1.0, 3.0, 17.0])
def test_aims_weighted_scores_err_within_the_declared_bound(weight: float) -> None:
    em, lo, hi = selector(0.4, weight, seeded(2), weighted=True)
    assert lo == -hi and em.utility_error > 0.0
    assert em.accepts(lo, hi)
    rng = np.random.default_rng(7)
    worst = Fraction(0)
    for target in (0.999 * hi, -0.999 * hi, 0.4 * hi, 2 * hi, -2 * hi):
        for _ in range(20):
            x, e = _awkward(rng, 8, 1e6)
            std = 2 * abs(target) / weight / (math.sqrt(2 / math.pi) * x.size)  # b = 2|target|/w
            b = math.sqrt(2 / math.pi) * std * x.size
            # move the estimate's first cell away from its count so that w·(L1 − b) lands near the target
            gap = target / weight + b - float(np.abs(x - e).sum())
            assert gap > 0
            e[0] = e[0] - gap if e[0] <= x[0] else e[0] + gap
            real = Fraction(weight) * _exact_l1(x, e, b)
            clipped_real = min(max(real, Fraction(lo)), Fraction(hi))
            clipped = float(em.clamp([score(x, e, weight, std)], lo, hi)[0])
            worst = max(worst, abs(Fraction(clipped) - clipped_real))
    assert 0 < worst <= Fraction(em.utility_error)


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[ExponentialMechanism]:
    """Record the mechanisms the module's selections are built with (the real ones, drawing for real)."""
    built: list[ExponentialMechanism] = []

    def recording(
        epsilon: float, sensitivity: float, rng: RandomSource, *, weighted: bool = False
    ) -> tuple[ExponentialMechanism, float, float]:
        em, lo, hi = selector(epsilon, sensitivity, rng, weighted=weighted)
        built.append(em)
        return em, lo, hi

    monkeypatch.setattr(module, "selector", recording)
    return built


def _codes() -> np.ndarray:
    rng = np.random.default_rng(11)
    a = rng.integers(0, 3, size=400)
    return np.stack([a, (a + rng.integers(0, 2, size=400)) % 4, rng.integers(0, 2, size=400)], axis=1)


def _declares(em: ExponentialMechanism, sensitivity: float, weighted: bool) -> None:
    plain = ExponentialMechanism(epsilon=1.0, sensitivity=sensitivity)  # max_span is ε-free
    hi = plain.max_span / (8.0 if weighted else 4.0)
    assert em.utility_error == (2.0**-50 if weighted else 2.0**-52) * hi > 0.0


def test_mwem_declares_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _spy(monkeypatch, mwem_module)
    mwem_module.mwem(_codes(), ["a", "b", "c"], [3, 4, 2], 1.0, 1, 1e-9, seeded(3), [(0, 1), (1, 2), (0, 2)])
    assert built
    for em in built:
        _declares(em, 1.0, weighted=False)


def test_mst_declares_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _spy(monkeypatch, mst_module)
    mst_module.mst(_codes(), ["a", "b", "c"], [3, 4, 2], 1.0, 1, 1e-9, seeded(4), compress=False)
    assert len(built) == 1
    _declares(built[0], 1.0, weighted=False)


def test_aim_round_declares_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _spy(monkeypatch, aim_module)
    x = [np.array([3.0, 5.0, 0.0]), np.array([[1.0, 2.0], [4.0, 1.0]])]
    e = [np.array([2.5, 5.25, 0.125]), np.array([[1.0, 1.5], [3.0, 2.5]])]
    pick, _, _ = aim_round(x, e, [2.0, 3.0], 4.0, 0.5, 1, 1e-9, seeded(5))
    assert pick in (0, 1) and len(built) == 1
    _declares(built[0], 3.0, weighted=True)
