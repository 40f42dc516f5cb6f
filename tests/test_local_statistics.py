"""privdb.local estimators over many seeded repetitions: unbiased, with the stated variance; simplex.

Each protocol estimates the counts of a fixed population ``R`` times (fresh randomisation each time). With
``σ²_v`` the stated variance of value ``v``'s count:

* unbiased: the mean of the ``R`` estimates lies within ``z·σ_v/√R`` of the true count;
* variance: ``(R − 1)s²_v/σ²_v`` lies within the χ²_{R−1} quantiles (counts are sums of thousands of
  independent coins, so normal theory holds to well below the test's resolution);

each at ``1e-6/(2d)`` per value (Bonferroni): a false failure at most once in 10^6 runs per test.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from conftest import ALPHA, seeded
from privdb.local import (
    BinaryProtocol,
    KaryProtocol,
    LocalProtocol,
    OLHProtocol,
    OUEProtocol,
    SurveyStream,
    project_simplex,
)


def population(d: int, n: int) -> np.ndarray:
    """``n`` people over ``d`` values with unequal counts (one value rare)."""
    weights = np.arange(1, d + 1, dtype=np.float64)
    weights[0] = 0.2
    counts = np.floor(weights / weights.sum() * n).astype(np.int64)
    counts[-1] += n - counts.sum()
    return np.repeat(np.arange(d), counts)


def repeated_estimates(proto: LocalProtocol[Any], x: np.ndarray, reps: int, seed: int) -> np.ndarray:
    reports = proto.randomizer(rng=seeded(seed)).randomize(np.tile(x, reps))
    n = x.size
    return np.array([proto.estimate(reports[r * n : (r + 1) * n]).counts for r in range(reps)])


def check_unbiased_with_stated_variance(
    proto: LocalProtocol[Any], x: np.ndarray, reps: int, seed: int
) -> None:
    d = proto.d
    truth = np.bincount(x, minlength=d)
    stated = proto.estimator().variance(truth)
    est = repeated_estimates(proto, x, reps, seed)
    alpha = ALPHA / (2 * d)
    z = (est.mean(axis=0) - truth) / np.sqrt(stated / reps)
    assert np.abs(z).max() < stats.norm.isf(alpha / 2), z
    ratio = est.var(axis=0, ddof=1) / stated
    lo = stats.chi2.ppf(alpha / 2, reps - 1) / (reps - 1)
    hi = stats.chi2.isf(alpha / 2, reps - 1) / (reps - 1)
    assert (ratio > lo).all() and (ratio < hi).all(), (ratio, lo, hi)


@pytest.mark.parametrize(
    "proto",
    [
        BinaryProtocol.coin(),
        BinaryProtocol.alpha(0.6),
        BinaryProtocol.flip(0.2),
        BinaryProtocol.for_epsilon(1.0),
    ],
    ids=lambda p: p.name,
)
def test_binary_protocols_are_unbiased_with_the_stated_variance(proto: BinaryProtocol) -> None:
    x = np.array([1] * 700 + [0] * 1300)
    check_unbiased_with_stated_variance(proto, x, reps=1500, seed=11)


@pytest.mark.parametrize(
    "proto",
    [
        KaryProtocol(epsilon=1.0, d=5),
        KaryProtocol(epsilon=2.0, d=2),
        OUEProtocol(epsilon=1.0, d=8),
        OUEProtocol(epsilon=2.0, d=2),
        OLHProtocol(epsilon=1.0, d=10),
        OLHProtocol(epsilon=2.0, d=30),
    ],
    ids=lambda p: f"{p.name}-d{p.d}",
)
def test_frequency_oracles_are_unbiased_with_the_stated_variance(proto: LocalProtocol[Any]) -> None:
    check_unbiased_with_stated_variance(proto, population(proto.d, 3000), reps=1000, seed=12)


@pytest.mark.slow
@pytest.mark.parametrize("proto", [OUEProtocol(epsilon=2.0, d=2000), OLHProtocol(epsilon=2.0, d=2000)])
def test_large_domains_are_unbiased_with_the_stated_variance(proto: LocalProtocol[Any]) -> None:
    check_unbiased_with_stated_variance(proto, population(proto.d, 10_000), reps=200, seed=13)


def test_intervals_cover_the_truth_about_95_percent() -> None:
    """Plug-in standard errors: coverage of 400 × 5 intervals within binomial bounds at 1e-6."""
    proto = KaryProtocol(epsilon=1.0, d=5)
    x = population(5, 4000)
    truth = np.bincount(x, minlength=5)
    reports = proto.randomizer(rng=seeded(14)).randomize(np.tile(x, 400))
    covered = 0
    for r in range(400):
        lo, hi = proto.estimate(reports[r * 4000 : (r + 1) * 4000]).ci95
        covered += int(((lo <= truth) & (truth <= hi)).sum())
    assert 0.93 <= covered / 2000 <= 0.97


def test_oracles_beat_krr_on_large_domains() -> None:
    """Wang et al.: for d ≫ e^ε, OUE and OLH have far smaller variance than k-RR."""
    truth = np.zeros(1000)
    truth[0] = 10_000
    krr = KaryProtocol(epsilon=1.0, d=1000).estimator().variance(truth)[1]
    oue = OUEProtocol(epsilon=1.0, d=1000).estimator().variance(truth)[1]
    olh = OLHProtocol(epsilon=1.0, d=1000).estimator().variance(truth)[1]
    wang = 10_000 * 4 * math.e / (math.e - 1) ** 2
    assert oue == pytest.approx(wang, rel=1e-6)
    assert olh == pytest.approx(wang, rel=0.15) and olh <= wang * 1.001  # g rounds e + 1
    assert krr > 50 * oue


def test_ten_million_responses_stream_in_seconds() -> None:
    import time

    proto = KaryProtocol(epsilon=2.0, d=100)
    client = proto.randomizer(rng=seeded(15))
    batch = np.arange(1_000_000) % 100
    batches = [client.randomize(batch) for _ in range(10)]
    t0 = time.perf_counter()
    result = SurveyStream(proto).extend(batches).estimate()
    assert time.perf_counter() - t0 < 3.0
    assert result.n == 10_000_000
    z = (result.counts - 100_000) / result.std_errors
    assert np.abs(z).max() < stats.norm.isf(ALPHA / 200)


# ------------------------------------------------------------------------------ simplex projection

vectors = st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(vectors)
def test_simplex_projection_lands_on_the_simplex(v: list[float]) -> None:
    x = project_simplex(v)
    assert (x >= 0).all() and x.sum() == pytest.approx(1.0, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(vectors, st.integers(0, 2**32 - 1))
def test_simplex_projection_is_the_nearest_point(v: list[float], seed: int) -> None:
    x = project_simplex(v)
    others = np.random.default_rng(seed).dirichlet(np.ones(len(v)), size=20)
    assert (np.linalg.norm(np.asarray(v) - x) <= np.linalg.norm(np.asarray(v) - others, axis=1) + 1e-9).all()
    # idempotent: a point of the simplex is its own projection
    assert np.allclose(project_simplex(x), x, atol=1e-12)


def test_projection_of_estimates_is_post_processing_that_lowers_error() -> None:
    proto = KaryProtocol(epsilon=0.5, d=50)
    x = population(50, 2000)
    truth = np.bincount(x, minlength=50) / x.size
    f = proto.estimate(proto.randomizer(rng=seeded(16)).randomize(x))
    raw, projected = f.shares, f.projected
    assert projected.sum() == pytest.approx(1.0) and (projected >= 0).all()
    assert np.linalg.norm(projected - truth) <= np.linalg.norm(raw - truth)
