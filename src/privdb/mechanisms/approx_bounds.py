"""Approximate bounds found from the data with differential privacy: Google's ``ApproxBounds``, which ZetaSQL
(and BigQuery) run for an aggregate written without contribution bounds.

Each value falls in one bin of a histogram whose bins widen by powers of two away from 0, one half for
positive values and one for negative ones: a positive value ``v`` in the bin ``(2^(j−1), 2^j]`` (the smallest
bin ``[0, 2^jmin]``), ``jmin = 0`` for whole numbers and ``−1022`` (float64's smallest normal) for real ones,
the highest edge the type's largest value (64 bins of each sign for int64, 2047 for float64). The bins are
fixed in advance, so the histogram is a count query over public cells: a privacy unit adds one value to each
of at most ``G`` groups, so its L1 sensitivity is ``G``, and Laplace (here geometric: the counts are whole)
noise of scale ``G/ε`` on every bin is ε-DP (Dwork et al. 2006). The lower bound is the left edge of the
lowest bin whose noisy count reaches the threshold, the upper the right edge of the highest; the threshold is
the noise's quantile that an empty histogram passes with probability ``1 − success`` over all its ``2B`` bins
(success ``1 − 10⁻⁹``, relaxed tenfold while no bin passes, down to ``1 − 10⁻⁶``, as the library does).
Everything after the noise is post-processing.

ZetaSQL's SUM and COUNT then widen the bounds to be symmetric, ``[min(l, −u), max(u, −l)]`` (``[−1, 1]`` for
``[0, 0]``): the sum's sensitivity is ``max(|l|, |u|)`` either way. AVG keeps them as found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from privdb.mechanisms.laplace import Geometric
from privdb.mechanisms.randomness import RandomSource

__all__ = ["Found", "find_bounds", "lowest_exponent", "relaxed"]

_FLOAT_MAX = 1.7976931348623157e308
_SUCCESS = 1 - 1e-9
_LEAST_SUCCESS = 1 - 1e-6
_ATTEMPTS = 30


def lowest_exponent(integral: bool) -> int:
    """The right edge's exponent of the smallest bin ``[0, 2^jmin]``."""
    return 0 if integral else -1022


def _top(integral: bool) -> int:
    """The right edge's exponent of the highest bin (its edge the type's largest value): 64 bins of each
    sign for whole numbers (int64), 2047 for real ones (float64), as the library sizes them."""
    return 63 if integral else 1024


@dataclass(frozen=True)
class Found:
    """Bounds found from the noisy histogram, and ZetaSQL's bounding report's counts (sums of noisy bins)."""

    lower: float
    upper: float
    num_inputs: float
    num_outside: float


def _threshold(scale: float, bins: int, success: float) -> float:
    """The Laplace(``scale``) quantile at ``success^(1/bins)``: an empty histogram's ``bins`` noisy counts
    all stay below it with probability ``success``."""
    p = success ** (1.0 / bins)
    return -scale * math.log(2.0 * (1.0 - p))


def find_bounds(
    counts: Mapping[tuple[int, int], int],
    *,
    integral: bool,
    epsilon: float,
    groups: int,
    symmetric: bool = False,
    rng: RandomSource | None = None,
) -> Found | None:
    """The bounds of the values binned in ``counts`` ((sign, exponent) → how many; sign 1 for values ≥ 0, −1
    for negative ones; exponent ``j`` for the bin of right edge ``2^j``, at least :func:`lowest_exponent`),
    found at ``epsilon`` when a privacy unit adds at most ``groups`` values; None when no bin passes the
    threshold (too few units: ZetaSQL's "bin count threshold was too large"). ``symmetric``: SUM's and
    COUNT's bounds, widened by :func:`relaxed` (the report's counts are then against those)."""
    low, top = lowest_exponent(integral), _top(integral)
    size = top - low + 1  # bins of each sign
    exact = np.zeros((2, size), dtype=np.int64)  # row 0 positive, row 1 negative; column j − low
    for (sign, j), n in counts.items():
        exact[0 if sign >= 0 else 1, min(max(j, low), top) - low] += int(n)
    mechanism = Geometric(epsilon=epsilon, sensitivity=groups, rng=rng)
    noisy = mechanism.release(exact.ravel()).reshape(exact.shape)
    left, right = _bin_edges(size, low)
    success = _SUCCESS
    for _ in range(_ATTEMPTS):
        threshold = _threshold(groups / epsilon, 2 * size, success)
        edges = _edges(noisy, threshold, left, right)
        if edges is not None:
            lower, upper = relaxed(*edges) if symmetric else edges
            return Found(lower, upper, float(noisy.sum()), _outside(noisy, lower, upper, left, right))
        success = 1 - 10 * (1 - success)
        if not success > _LEAST_SUCCESS:
            break
    return None


def _bin_edges(size: int, low: int) -> tuple[np.ndarray, np.ndarray]:
    """Each positive bin's left and right edge (its negative twin's are their negatives): ``(2^(j−1), 2^j]``
    from ``[0, 2^low]`` up, the highest right edge, 2^1024, float64's largest value."""
    j = np.arange(size) + low
    with np.errstate(over="ignore"):
        right = np.minimum(np.ldexp(1.0, j), _FLOAT_MAX)
    left = np.concatenate([[0.0], right[:-1]])
    return left, right


def _edges(
    noisy: np.ndarray, threshold: float, left: np.ndarray, right: np.ndarray
) -> tuple[float, float] | None:
    """(lower, upper) from the bins passing ``threshold``: the lowest bin's left edge and the highest's
    right edge (a negative bin's edges mirrored)."""
    positive = np.flatnonzero(noisy[0] >= threshold)
    negative = np.flatnonzero(noisy[1] >= threshold)
    if positive.size == 0 and negative.size == 0:
        return None
    lower = -right[negative[-1]] if negative.size else left[positive[0]]
    upper = right[positive[-1]] if positive.size else -left[negative[0]]
    return float(lower), float(upper)


def _outside(noisy: np.ndarray, lower: float, upper: float, left: np.ndarray, right: np.ndarray) -> float:
    """The noisy count of the bins lying wholly outside ``[lower, upper]`` (a positive bin covers
    ``[left, right]``, its negative twin ``[−right, −left]``)."""
    positive = (left >= upper) | (right <= lower)
    negative = (-right >= upper) | (-left <= lower)
    return float(noisy[0][positive].sum() + noisy[1][negative].sum())


def relaxed(lower: float, upper: float) -> tuple[float, float]:
    """ZetaSQL's SUM and COUNT bounds: symmetric about 0 (the sum's sensitivity is unchanged), ``[−1, 1]``
    where nothing but zeros was found."""
    if lower == 0 and upper == 0:
        return -1.0, 1.0
    return min(lower, -upper), max(upper, -lower)
