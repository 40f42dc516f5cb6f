"""NoiseFirst (Xu, Zhang, Xiao, Yang, Yu, Winslett, ICDE 2012): a 1-D histogram's noisy bins merged into
buckets chosen from the noisy counts alone, each bucket's bins set to its mean.

It is post-processing of the noisy histogram y = x + Z (Z_i of variance σ², one measurement of ε): no more
privacy cost. Merging bins of similar counts averages their noise away (a bucket of m bins has noise variance
σ²/m per bin) at the price of the bucket's spread. For a bucket B, E[SSE_B(y)] = SSE_B(x) + (|B| − 1)σ², and
the merged estimate's expected squared error is SSE_B(x) + σ²; so over a partition into k buckets the error is
estimated, from y alone, by SSE_k(y) − (n − 2k)σ², and privdb takes the k (and the v-optimal partition into
k buckets, by dynamic programming on prefix sums) that minimise it, as the paper does.

The interval of each bin is the raw noisy count's (y_i ± the mechanism's 95% half-width), which covers x_i
whatever the merge did; the merged value is the point estimate. docs/proofs/histograms.md.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter

__all__ = ["MAX_BINS", "bucket_costs", "noise_first", "v_optimal", "v_optimal_tables"]

F = NDArray[np.float64]
MAX_BINS = 1_000
_MAX_BUCKETS = 100


def bucket_costs(y: F) -> F:
    """cost[i, j] = the squared error of one bucket holding bins i..j−1 (i < j), from prefix sums."""
    s = np.concatenate([[0.0], np.cumsum(y)])
    q = np.concatenate([[0.0], np.cumsum(y * y)])
    i, j = np.meshgrid(np.arange(len(y) + 1), np.arange(len(y) + 1), indexing="ij")
    size = np.maximum(j - i, 1)
    total = s[j] - s[i]
    cost = (q[j] - q[i]) - total * total / size
    return np.where(j > i, np.maximum(cost, 0.0), np.inf)


def v_optimal_tables(y: F, most: int) -> tuple[list[F], list[NDArray[np.int64]]]:
    """For k = 1..``most``: the least squared error of every prefix of y (bins 0..j−1, j = 0..n) split into k
    buckets of adjacent bins, and the last cut of that best split (dynamic programming, O(most · n²))."""
    n = len(y)
    cost = bucket_costs(y)
    best = cost[0].copy()  # best[j]: least error of bins 0..j−1 in k buckets (k = 1 here)
    tables, choices = [best], [np.zeros(n + 1, dtype=np.int64)]
    for _ in range(2, most + 1):
        totals = best[:, None] + cost  # cut at i: bins 0..i−1 in k−1 buckets, bins i..j−1 in the last
        cut = np.argmin(totals, axis=0)
        best = totals[cut, np.arange(n + 1)]
        tables.append(best)
        choices.append(cut)
    return tables, choices


def v_optimal(y: F, most: int) -> tuple[list[float], list[NDArray[np.int64]]]:
    """The least squared error of y split into k = 1..``most`` buckets of adjacent bins, and for each k the
    last cut of the best split of every prefix."""
    tables, choices = v_optimal_tables(y, most)
    return [float(best[len(y)]) for best in tables], choices


def noise_first(noisy: F, variance: float) -> tuple[F, int]:
    """The NoiseFirst estimate of the bins from their noisy counts (noise ``variance`` per bin), and the
    number of buckets chosen."""
    y = np.asarray(noisy, dtype=np.float64)
    n = len(y)
    if n > MAX_BINS:
        raise InvalidParameter(f"NoiseFirst merges at most {MAX_BINS:,} bins, got {n:,}: use coarser --bins")
    if n <= 1:
        return y.copy(), n
    errors, choices = v_optimal(y, min(n, _MAX_BUCKETS))
    estimate = [e - (n - 2 * (k + 1)) * variance for k, e in enumerate(errors)]
    k = int(np.argmin(estimate)) + 1
    bounds = [n]
    for level in range(k - 1, 0, -1):
        bounds.append(int(choices[level][bounds[-1]]))
    bounds.append(0)
    bounds.reverse()
    out = np.empty(n)
    for lo, hi in itertools.pairwise(bounds):
        out[lo:hi] = y[lo:hi].mean()
    return out, k
