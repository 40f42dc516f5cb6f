"""Distribution tests of the exact samplers against their exact laws.

Every goodness-of-fit test uses a fixed seed and rejects at p < 1e-6 (the stated false-failure rate); the
power checks show the same tests reject a distribution whose scale is off by 30%.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from mpmath import mp
from numpy.typing import NDArray
from scipy import stats

from conftest import ALPHA, seeded
from privdb.mechanisms import _exact, _samplers


def _geometric_bins(lam: float, bins: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bin edges at the geometric's quantiles and the exact mass of each bin (P(G ≥ k) = e^(−λk))."""
    edges = np.unique(np.ceil(-np.log1p(-np.linspace(0, 0.999, bins)) / lam))
    survival = np.exp(-lam * edges)
    mass = np.append(survival[:-1] - survival[1:], survival[-1])
    return edges, mass


def _chi_square_p(sample: NDArray[np.int64], edges: NDArray[np.float64], mass: NDArray[np.float64]) -> float:
    counts = np.bincount(np.searchsorted(edges, sample, side="right") - 1, minlength=mass.size)
    return float(stats.chisquare(counts, mass * sample.size).pvalue)


@pytest.mark.parametrize("lam", [3.0, 1.0, 0.1, 2.0**-10, 2.0**-21, 2.0**-23, 2.0**-40])
def test_geometric_matches_its_law(lam: float) -> None:
    g, _ = _samplers.geometric(lam, 200_000, seeded(1))
    edges, mass = _geometric_bins(lam, 60)
    assert g.min() >= 0
    assert _chi_square_p(g, edges, mass) > ALPHA


@pytest.mark.parametrize("lam", [2.0**-21, 2.0**-30])
def test_geometric_power(lam: float) -> None:
    """A rate off by 30% is rejected: the test above has teeth."""
    g, _ = _samplers.geometric(lam * 1.3, 200_000, seeded(2))
    edges, mass = _geometric_bins(lam, 60)
    assert _chi_square_p(g, edges, mass) < ALPHA


@pytest.mark.parametrize("lam", [2.0**-23, 2.0**-35])
def test_geometric_low_bits_are_independent_with_the_right_rates(lam: float) -> None:
    """Bit i of a geometric is 1 with probability 1/(1 + e^(λ·2^i)): checks the two-level split."""
    n = 400_000
    g, _ = _samplers.geometric(lam, n, seeded(3))
    for i in (0, 1, 5, 12, 20, 24, 30):
        expected = 1.0 / (1.0 + math.exp(lam * 2.0**i))
        ones = int(((g >> i) & 1).sum())
        assert stats.binomtest(ones, n, expected).pvalue > ALPHA, f"bit {i}"


@pytest.mark.parametrize("lam", [1.5, 0.2, 2.0**-20])
def test_discrete_laplace_matches_its_law(lam: float) -> None:
    n = 300_000
    z = _samplers.discrete_laplace(lam, n, seeded(4))
    q = math.exp(-lam)
    # |Z| is 0 with probability (1−q)/(1+q), else geometric-like; sign symmetric
    assert stats.binomtest(int((z > 0).sum()), int((z != 0).sum()), 0.5).pvalue > ALPHA
    edges, mass = _geometric_bins(lam, 40)
    folded_mass = mass * 2 / (1 + q)
    folded_mass[0] -= (1 - q) / (1 + q)  # P(|Z| = 0) counted once
    counts = np.bincount(np.searchsorted(edges, np.abs(z), side="right") - 1, minlength=mass.size)
    assert stats.chisquare(counts, folded_mass / folded_mass.sum() * n).pvalue > ALPHA


@pytest.mark.parametrize("sigma", [0.7, 3.0, 25.5])
def test_discrete_gaussian_matches_its_law(sigma: float) -> None:
    n = 200_000
    y = _samplers.discrete_gaussian(sigma, n, seeded(5))
    span = int(6 * sigma) + 2
    support = np.arange(-span, span + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    pmf /= pmf.sum()
    counts = np.bincount(np.clip(y, -span, span) + span, minlength=support.size)
    keep = pmf * n >= 5
    expected = np.append(pmf[keep] * n, pmf[~keep].sum() * n)
    observed = np.append(counts[keep], counts[~keep].sum())
    assert stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue > ALPHA


def test_discrete_gaussian_power() -> None:
    y = _samplers.discrete_gaussian(3.0 * 1.3, 200_000, seeded(6))
    assert stats.kstest(y / 3.0, "norm").pvalue < ALPHA


def test_discrete_gaussian_large_sigma_variance() -> None:
    sigma = 1.3 * 2.0**20
    y = _samplers.discrete_gaussian(sigma, 200_000, seeded(7)).astype(float)
    assert stats.kstest(y / sigma, "norm").pvalue > ALPHA


def test_bernoulli_and_uniform_int() -> None:
    n = 200_000
    p = 1 / (1 + math.e)
    hits = _samplers.bernoulli(_exact.logistic(Fraction(-1)), n, seeded(8))
    assert stats.binomtest(int(hits.sum()), n, p).pvalue > ALPHA
    u = _samplers.uniform_int(7, n, seeded(9))
    assert stats.chisquare(np.bincount(u, minlength=7)).pvalue > ALPHA
    assert u.min() == 0 and u.max() == 6


def test_geometric_exact_path_decides_the_boundary_exactly(scripted) -> None:  # type: ignore[no-untyped-def]
    """Force U's first 63 bits to straddle the boundary e^(−λk): the exact path must use more bits, and
    the share of G ≥ k must equal the conditional probability (the fractional part of e^(−λk)·2^63)."""
    lam, k = 0.5, 3
    mp.prec = 300
    boundary = mp.e ** (-lam * k) * mp.mpf(2) ** 63
    u = int(mp.floor(boundary))
    conditional = float(boundary - u)
    trials = 4000
    above = 0
    for trial in range(trials):
        # the first word puts u in the top 63 bits (sign bit 0); refinements come from the seeded rest
        g, _ = _samplers.geometric(lam, 1, scripted([u << 1], seed=trial))
        assert g[0] in (k - 1, k)
        above += int(g[0] >= k)
    assert stats.binomtest(above, trials, conditional).pvalue > ALPHA


def test_exact_comparison_against_an_irrational(scripted) -> None:  # type: ignore[no-untyped-def]
    """U's first 64 bits equal those of 1/(1+e^-1): the decision needs the next 64, and is exact."""
    mp.prec = 300
    p = 1 / (1 + mp.e ** (-1))
    word = int(mp.floor(p * mp.mpf(2) ** 64))
    conditional = float(p * mp.mpf(2) ** 64 - word)
    trials = 4000
    hits = sum(
        bool(_samplers.bernoulli(_exact.logistic(Fraction(1)), 1, scripted([word], seed=t))[0])
        for t in range(trials)
    )
    assert stats.binomtest(hits, trials, conditional).pvalue > ALPHA


def test_lazy_uniform_refines_consistently(rng) -> None:  # type: ignore[no-untyped-def]
    u = _exact.LazyUniform(5, 3)
    low, high = u.low, u.high
    u.refine(rng)
    assert low <= u.low < u.high <= high
    assert u.bits == 67
