"""ZetaSQL's implicit bounds (privdb.mechanisms.approx_bounds) are as private as their noisy histogram: on two
neighbouring histograms (one unit's value in a bin, or not) the probability that the bounds reach that bin
may differ by at most e^ε.

The unit's bin is set at the threshold's edge: 24 values without the unit, 25 with it, the threshold
(about 24.9 at ε = 1 over 2·64 bins) between them. With the geometric noise of rate ε/G the bin passes with
probability q/(1 + q) without the unit and 1/(1 + q) with it, q = e^−ε: the bound exactly (an exact count,
or noise too small, would give 0 and 1). Each probability is estimated from ``RUNS`` draws; the check allows
5 standard errors (a false failure ≤ 6e-7 by the normal approximation)."""

from __future__ import annotations

import math

from conftest import seeded
from privdb.mechanisms.approx_bounds import find_bounds

RUNS = 3000
EPSILON = 1.0


def _reaches(counts: dict[tuple[int, int], int], seed: int) -> float:
    rng = seeded(seed)
    hits = 0
    for _ in range(RUNS):
        found = find_bounds(counts, integral=True, epsilon=EPSILON, groups=1, rng=rng)
        assert found is not None  # the 40 values of bin 2 always pass
        hits += found.upper == 32.0
    return hits / RUNS


def test_the_bounds_are_as_private_as_the_histogram() -> None:
    without = _reaches({(1, 2): 40, (1, 5): 24}, seed=1)
    with_ = _reaches({(1, 2): 40, (1, 5): 25}, seed=2)
    error = math.sqrt(sum(p * (1 - p) for p in (without, with_)) / RUNS)
    q = math.exp(-EPSILON)
    assert abs(without - q / (1 + q)) < 5 * error and abs(with_ - 1 / (1 + q)) < 5 * error, (without, with_)
    assert with_ <= math.exp(EPSILON) * without + 5 * error * (1 + math.exp(EPSILON)), (without, with_)
