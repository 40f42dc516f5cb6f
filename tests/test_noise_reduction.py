"""Laplace noise reduction (privdb.mechanisms.noise_reduction): every step is exactly the discrete Laplace of
its rate, the joint law of the sequence is the one the proof derives (docs/proofs/accuracy-first.md), and the
tests can fail: the continuous formula's keep probability is rejected. Fixed seeds; each test's false-failure
rate ≤ ALPHA = 1e-6."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import chisquare

from conftest import ALPHA, seeded
from privdb.errors import InvalidParameter
from privdb.mechanisms import _exact, noise_reduction
from privdb.mechanisms.noise_reduction import NoiseReduction, keep_probability

N = 200_000


def _pmf(rate: float, z: NDArray[np.int64]) -> NDArray[np.float64]:
    q = math.exp(-rate)
    out: NDArray[np.float64] = (1 - q) / (1 + q) * q ** np.abs(z).astype(np.float64)
    return out


def _cdf(rate: float, k: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P(Z ≤ k)`` of the discrete Laplace of ``rate``, for integers ``k``."""
    q = math.exp(-rate)
    with np.errstate(over="ignore"):
        low = np.exp(rate * np.minimum(k, 0)) / (1 + q)  # q^(−k)/(1+q) for k < 0
        high = 1 - np.exp(-rate * (np.maximum(k, 0) + 1)) / (1 + q)
    out: NDArray[np.float64] = np.where(k < 0, low, high)
    return out


def _gof(observed: NDArray[np.int64], expected: NDArray[np.float64]) -> float:
    """Chi-square p-value of binned counts against expected probabilities (bins with < 5 expected pooled)."""
    exp_counts = expected * observed.sum()
    small = exp_counts < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(exp_counts[~small], exp_counts[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return float(chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def _marginal_p(z: NDArray[np.int64], rate: float, width: int = 40) -> float:
    """Goodness of fit of integer draws to the discrete Laplace of ``rate`` on ``[−width, width]`` + tails."""
    inside = np.arange(-width, width + 1)
    middle = np.bincount(z[np.abs(z) <= width] + width, minlength=2 * width + 1)
    counts = np.array([np.sum(z < -width), *middle, np.sum(z > width)])
    tail = float(_cdf(rate, np.array([-width - 1.0]))[0])
    expected = np.array([tail, *_pmf(rate, inside), tail])
    return _gof(counts, expected)


@pytest.mark.parametrize("epsilons", [(0.5, 1.0, 2.0), (0.05, 0.1, 0.3), (1.0, 3.0)])
def test_every_step_is_exactly_the_discrete_laplace_of_its_rate(epsilons: tuple[float, ...]) -> None:
    reduction = NoiseReduction(epsilons=epsilons, sensitivity=1, integer=True, rng=seeded(5))
    z = reduction.noise(N)
    assert z.shape == (len(epsilons), N)
    for row, rate in zip(z, reduction.rates, strict=True):
        assert _marginal_p(row, rate) > ALPHA / len(epsilons), rate


def test_the_joint_law_of_two_steps_is_the_one_derived() -> None:
    """``P(Z_1 = i, Z_2 = j) = f_2(j)·(p·[i = j] + (1 − p)·f_1(i − j))``: the less noisy step drawn first,
    the noisier one from it; checked on every cell of ``[−8, 8]²`` and the rest pooled."""
    reduction = NoiseReduction(epsilons=(0.7, 1.5), sensitivity=1, integer=True, rng=seeded(6))
    z1, z2 = reduction.noise(N)
    r1, r2 = reduction.rates
    a, b = math.exp(-r1), math.exp(-r2)
    p = b * (1 - a) ** 2 / (a * (1 - b) ** 2)
    grid = np.arange(-8, 9)
    i, j = np.meshgrid(grid, grid, indexing="ij")
    joint = _pmf(r2, j) * (p * (i == j) + (1 - p) * _pmf(r1, i - j))
    inside = (np.abs(z1) <= 8) & (np.abs(z2) <= 8)
    cells = np.bincount((z1[inside] + 8) * 17 + (z2[inside] + 8), minlength=17 * 17)
    observed = np.append(cells, np.sum(~inside))
    expected = np.append(joint.ravel(), 1 - joint.sum())
    assert _gof(observed, expected) > ALPHA


def test_the_earlier_steps_given_a_later_one_do_not_depend_on_it_further() -> None:
    """The Markov property the proof needs: ``Z_1 − Z_2`` is independent of ``Z_2`` and ``Z_3`` (a χ² test of
    independence on a 3 × 3 table of coarse bins)."""
    reduction = NoiseReduction(epsilons=(0.4, 0.8, 1.6), sensitivity=1, integer=True, rng=seeded(7))
    z1, z2, z3 = reduction.noise(N)
    jump = np.digitize(z1 - z2, [-0.5, 0.5])  # below, at, above 0
    later = np.digitize(z3, [-0.5, 0.5])
    table = np.zeros((3, 3))
    np.add.at(table, (jump, later), 1)
    expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
    stat = float(((table - expected) ** 2 / expected).sum())
    from scipy.stats import chi2

    assert chi2.sf(stat, 4) > ALPHA


def test_the_continuous_keep_probability_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: with Koufogiannis' continuous-Laplace keep probability (ε_t/ε_{t+1})² the noisier step is not
    discrete Laplace, and the same test with the same sample size rejects it."""

    def continuous(noisy: float, sharp: float) -> _exact.Bounds:
        p = Fraction(noisy) ** 2 / Fraction(sharp) ** 2
        return _exact.rational(p)

    monkeypatch.setattr(noise_reduction, "keep_probability", continuous)
    reduction = NoiseReduction(epsilons=(1.0, 3.0), sensitivity=1, integer=True, rng=seeded(5))
    z = reduction.noise(N)
    assert _marginal_p(z[0], reduction.rates[0]) < ALPHA


def test_the_keep_probability_is_bounded_tightly() -> None:
    lo, hi = keep_probability(0.5, 1.0)(128)
    a, b = math.exp(-0.5), math.exp(-1.0)
    assert lo <= hi and float(hi - lo) < 1e-30
    assert float(lo) == pytest.approx(b * (1 - a) ** 2 / (a * (1 - b) ** 2), rel=1e-12)
    tiny_lo, tiny_hi = keep_probability(2.0**-40, 2.0**-39)(128)  # a Laplace rate on a fine grid
    assert float(tiny_lo) == pytest.approx(0.25, rel=1e-9) and tiny_lo <= tiny_hi


def test_real_values_share_one_grid_and_each_step_has_its_scale() -> None:
    """Reals: every step on the grid of the last step's Laplace mechanism, ``v_t/g`` an integer, and the
    noise of step t (in grid steps) fits the discrete Laplace of its rate, by deciles of the exact law."""
    reduction = NoiseReduction(epsilons=(0.25, 0.5, 1.0), sensitivity=100.0, rng=seeded(8))
    assert len({s.granularity for s in reduction.steps}) == 1
    released = reduction.release(np.full(50_000, 1234.5))
    g = reduction.granularity
    assert np.all(released / g == np.rint(released / g))
    steps = np.rint((released - 1234.5) / g)
    for row, mech in zip(steps, reduction.steps, strict=True):
        assert mech.scale == pytest.approx(100.0 / mech.epsilon, rel=1e-5)
        cuts = np.round(np.array([-2.3, -1.6, -0.9, -0.5, 0.0, 0.5, 0.9, 1.6, 2.3]) / mech.rate)
        cdf = _cdf(mech.rate, cuts)
        expected = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
        observed = np.bincount(np.searchsorted(cuts, row, side="left"), minlength=cuts.size + 1)
        assert _gof(observed, expected) > ALPHA / 3


def test_the_ex_post_cost_is_the_last_step_released() -> None:
    reduction = NoiseReduction(epsilons=(0.1, 0.2, 0.4), sensitivity=1, integer=True, rng=seeded(1))
    assert [reduction.cost(k).epsilon for k in (1, 2, 3)] == [0.1, 0.2, 0.4]
    with pytest.raises(InvalidParameter, match=r"step must be in 1\.\.3"):
        reduction.cost(4)


@pytest.mark.parametrize(
    ("epsilons", "message"),
    [((), "at least one"), ((0.5, 0.5), "increase"), ((1.0, 0.5), "increase"), ((0.0, 1.0), "> 0"),
     ((0.1, float("nan")), "NaN")],
)  # fmt: skip
def test_bad_schedules_are_refused(epsilons: tuple[float, ...], message: str) -> None:
    with pytest.raises(InvalidParameter, match=message):
        NoiseReduction(epsilons=epsilons, sensitivity=1, integer=True)
