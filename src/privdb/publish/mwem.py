"""MWEM (Hardt, Ligett & McSherry, NeurIPS 2012) for small domains: multiplicative weights over the whole
contingency table, each round measuring the marginal the current estimate gets most wrong.

With T = max(4, 2d) rounds and ρ split evenly over T + 1 parts:

0. the total count n is measured with discrete Gaussian noise (one part); n̂ = max(1, noisy n), and the
   estimate A starts uniform with total n̂;
1. each round chooses one marginal r of the workload (the same candidates as AIM: every subset of the
   ``degree``-way marginals, or of the listed ones) by the exponential mechanism on ‖M_r x − M_r A‖₁
   (sensitivity Δ) at ε_t = √(8 · part/2) (half a part: ε²/8-zCDP), measures it with discrete Gaussian
   noise at half a part, then applies the multiplicative-weights update for every measurement so far,
   ``PASSES`` times: A ← A · exp((y − M_r A)[cell] / (2n̂)), rescaled to total n̂ (post-processing).

The table is the whole domain, so MWEM is refused when the released columns make more than ``MAX_CELLS``
cells (public: the domains only), before anything is read. docs/proofs/synthetic.md, "MWEM".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import DiscreteGaussian, RandomSource
from privdb.publish.l1 import l1_score, selector
from privdb.publish.marginals import Measurement
from privdb.publish.mst import Measured, marginal, selection_epsilon

__all__ = ["MAX_CELLS", "check_mwem", "mwem", "rounds_for"]

MAX_CELLS = 1_000_000
PASSES = 10
Axes = tuple[int, ...]


def rounds_for(d: int) -> int:
    """T, the number of selection rounds (public: d only)."""
    return max(4, 2 * d)


def check_mwem(sizes: Sequence[int]) -> None:
    """Refuse a domain MWEM cannot hold (public: the sizes of the public domains)."""
    if math.prod(sizes) > MAX_CELLS:
        raise InvalidParameter(
            f"--method mwem keeps the whole domain: these columns make {math.prod(sizes):,} cells (at most "
            f"{MAX_CELLS:,}); release fewer or smaller columns (--columns, --bins), or use mst or aim"
        )


def mwem(
    codes: NDArray[np.int64], names: Sequence[str], sizes: Sequence[int], rho: float, sensitivity: int,
    delta: float, rng: RandomSource, candidates: Sequence[Axes],
) -> tuple[list[Measured], NDArray[np.float64]]:  # fmt: skip
    """MWEM's measurements at total ``rho`` and the fitted distribution over the whole domain (sums to 1)."""
    check_mwem(sizes)
    shape = tuple(sizes)
    rounds = rounds_for(len(names))
    part = rho / (rounds + 1)
    count = DiscreteGaussian(rho=part, delta=delta, sensitivity=sensitivity, rng=rng)
    total = max(1.0, float(count.release(np.array([float(len(codes))]))[0]))
    estimate = np.full(shape, total / math.prod(shape))
    exacts = [marginal(codes, sizes, r) for r in candidates]
    measured: list[Measured] = []
    updates: list[tuple[Measurement, NDArray[np.float64]]] = []
    # L1 errors grow with the rows: a public cap (~2.8e8·Δ) keeps Δ and the float range; the scores are
    # rounded once, an error the mechanism is told of (publish/l1.py)
    em, lo, hi = selector(selection_epsilon(part / 2), sensitivity, rng)
    for _ in range(rounds):
        scores = [
            l1_score(x, Measurement(r).apply(estimate)) for r, x in zip(candidates, exacts, strict=True)
        ]
        pick = em.select(em.clamp(scores, lo, hi))
        mech = DiscreteGaussian(rho=part / 2, delta=delta, sensitivity=sensitivity, rng=rng)
        noisy = mech.release(exacts[pick].reshape(-1)).reshape(exacts[pick].shape)
        measured.append((tuple(names[a] for a in candidates[pick]), noisy, float(mech.scale)))
        updates.append((Measurement(candidates[pick]), noisy))
        for _ in range(PASSES):
            for m, y in updates:
                error = (y - m.apply(estimate)) / (2 * total)
                estimate = estimate * np.exp(np.clip(m.adjoint(error, shape), -50, 50))
                estimate *= total / estimate.sum()
    return measured, estimate / estimate.sum()
