"""StructureFirst (Xu, Zhang, Xiao, Yang, Yu, Winslett, ICDE 2012 / VLDB J 2013): a 1-D histogram's bins
grouped into k buckets of adjacent bins chosen on the true counts with the exponential mechanism (ε₁), then
each bucket's total released with geometric noise (ε₂ = ε − ε₁) and spread evenly over its bins.

**Structure.** The counts are clipped at a public bound F (the structure only; the totals use the true
counts). With best_t[j] the least squared error (SSE) of bins 0..j−1 split into t buckets (the v-optimal
dynamic programme) and b_k = n, the boundaries are drawn right to left, as the paper does: for t = k−1 … 1,
b_t = j ∈ [t, b_{t+1}) with probability ∝ exp(−ε' · E(j) / (2Δ_E)), E(j) = best_t[j] + SSE(bins j..b_{t+1}−1),
ε' = ε₁/(k−1). One count moving by 1 inside [0, F] moves a bucket's SSE by at most 2F + 1 (the paper's
bound), hence every E(j), a least sum of bucket SSEs, by at most that; a unit moves the clipped counts by at
most Δ steps of 1, so Δ_E = (2F + 1)·Δ plus twice a public bound on the float error of E (below). k = 1 or
k = n leaves one possible structure: then nothing is drawn and the whole ε goes to the counts.

**Counts.** Bucket totals change by at most Δ in L1: geometric noise of rate ε₂/Δ on each. A bin's value is
its bucket's noisy total over the bucket's width, clipped at 0; its 95% interval is that ± the mechanism's
95% half-width over the width. It covers the bucket's true mean count with probability ≥ 95% — the noise
only: how far a bin's own count lies from its bucket's mean (the averaging bias) is not bounded by anything
public, so the interval does not claim to cover it. docs/proofs/histograms.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism, Geometric, RandomSource
from privdb.mechanisms.base import round_down
from privdb.publish.noisefirst import MAX_BINS, bucket_costs, v_optimal_tables

__all__ = ["MAX_BUCKETS", "StructureFirst", "check_structure_first", "largest_count_bound", "structure_first"]

F = NDArray[np.float64]
MAX_BUCKETS = 100


def largest_count_bound(bins: int) -> int:
    """The largest F privdb accepts for ``bins`` bins: the clipped counts' prefix sums of squares stay exact
    integers in float64 (n·F² ≤ 2^52), and the exponential mechanism's float slack stays within its limit
    (n·F ≤ 2·10^9). Public: a function of the domain only."""
    return int(min(2e9 / max(bins, 1), math.sqrt(2.0**52 / max(bins, 1))))


def check_structure_first(bins: int, buckets: int | None, count_bound: int | None, share: float) -> None:
    """Every refusal StructureFirst can make, from public inputs only (run before any data is read)."""
    if bins > MAX_BINS:
        raise InvalidParameter(
            f"StructureFirst groups at most {MAX_BINS:,} bins, got {bins:,}: use coarser --bins"
        )
    most = min(bins, MAX_BUCKETS)
    if (
        buckets is None
        or isinstance(buckets, bool)
        or not isinstance(buckets, int)
        or not 1 <= buckets <= most
    ):
        raise InvalidParameter(
            f"--buckets must be a whole number from 1 to {most} (this histogram has {bins} bins), "
            f"got {buckets!r}"
        )
    if count_bound is None:
        raise InvalidParameter(
            "StructureFirst needs a public bound on every bin's count: give --count-bound F (e.g. the "
            "table's public row count), or declare the table's rows: N in its metadata to make N the default"
        )
    top = largest_count_bound(bins)
    if isinstance(count_bound, bool) or not isinstance(count_bound, int) or not 1 <= count_bound <= top:
        raise InvalidParameter(
            f"--count-bound must be a whole number from 1 to {top:,} for {bins} bins, got {count_bound!r}"
        )
    if not (isinstance(share, int | float) and 0 < share < 1):
        raise InvalidParameter(
            f"--structure-share must be in (0, 1): the share of ε for the buckets, got {share!r}"
        )


@dataclass(frozen=True)
class StructureFirst:
    """The released histogram: per bin its value and 95% interval (of its bucket's mean count), the bucket
    boundaries (0 = b_0 < … < b_k = n), and the ε spent on each part."""

    counts: F
    low: F
    high: F
    bounds: tuple[int, ...]
    epsilon_structure: float
    epsilon_counts: float
    score_sensitivity: float

    def bucket_of_bins(self) -> NDArray[np.int64]:
        """Each bin's bucket number (0-based)."""
        widths = np.diff(np.asarray(self.bounds))
        return np.repeat(np.arange(len(widths)), widths).astype(np.int64)


def _score_error(bins: int, buckets: int, count_bound: int) -> float:
    """A public bound on the float error of any E(j): each bucket cost is computed from exact integer prefix
    sums with ≤ 3 roundings (≤ 2^-51·n·F²), and E sums ≤ k of them (module doc; docs/proofs/histograms.md)."""
    return (buckets + 2) * 2.0**-50 * bins * float(count_bound) ** 2


def structure_first(
    counts: F,
    buckets: int,
    *,
    epsilon: float,
    count_bound: int,
    sensitivity: int,
    share: float = 0.5,
    rng: RandomSource | None = None,
) -> StructureFirst:
    """StructureFirst on the (private) bin ``counts``: ``buckets`` buckets, ε split ``share`` : 1 − share
    between the structure and the counts; ``sensitivity`` is Δ, the counts' L1 change between neighbours."""
    x = np.asarray(counts, dtype=np.float64)
    n = len(x)
    check_structure_first(n, buckets, count_bound, share)
    k = buckets
    trivial = k in (1, n)
    eps_structure = 0.0 if trivial else round_down(share * epsilon)
    eps_counts = round_down(epsilon - eps_structure)
    score_sensitivity = (2 * count_bound + 1) * sensitivity + 2 * _score_error(n, k, count_bound)
    if trivial:
        bounds = list(range(n + 1)) if k == n else [0, n]
    else:
        clipped = np.minimum(x, float(count_bound))
        tables, _ = v_optimal_tables(clipped, k - 1)
        cost = bucket_costs(clipped)
        draw = ExponentialMechanism(
            epsilon=round_down(eps_structure / (k - 1)), sensitivity=score_sensitivity, rng=rng
        )
        bounds = [n]
        for t in range(k - 1, 0, -1):
            right = bounds[-1]
            candidates = np.arange(t, right)
            errors = tables[t - 1][candidates] + cost[candidates, right]
            bounds.append(int(candidates[draw.select(-(errors - errors.min()))]))
        bounds.append(0)
        bounds.reverse()
    edges = np.asarray(bounds)
    widths = np.diff(edges).astype(np.float64)
    totals = np.add.reduceat(x, edges[:-1]) if n else np.zeros(0)
    noise = Geometric(epsilon=eps_counts, sensitivity=sensitivity, rng=rng)
    noisy = noise.release(totals)
    half = noise.half_width(0.05)
    per_bin = np.repeat(widths, widths.astype(np.int64))
    spread = np.repeat(noisy, widths.astype(np.int64)) / per_bin
    return StructureFirst(
        counts=np.maximum(spread, 0.0),
        low=np.maximum(spread - half / per_bin, 0.0),
        high=np.maximum(spread + half / per_bin, 0.0),
        bounds=tuple(int(b) for b in bounds),
        epsilon_structure=eps_structure,
        epsilon_counts=eps_counts,
        score_sensitivity=score_sensitivity,
    )
