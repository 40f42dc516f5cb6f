"""The synthetic-data selections' L1 scores (MWEM, MST, AIM), computed correctly rounded, and the public bound
on their float error that the exponential mechanism needs (docs/proofs/exponential.md, "Float scores").

A score is ``Σ_i |x_i − e_i| − b``: x the exact integer counts of a marginal (floats, exact below 2^53), e a
public float estimate (a function of released values only) and b a public offset. Each difference is split
exactly by TwoSum into ``s_i + t_i`` (|t_i| ≤ ulp(s_i)/2, so ``s_i + t_i`` has the sign of ``s_i``) and
``math.fsum`` (Shewchuk's algorithm, correctly rounded) adds ``|s_i|``, ``sign(s_i)·t_i`` and ``−b``: the
float score is the real score rounded once, whatever the number of cells. The error bound then depends on the
clip range only: see :func:`selector`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import ArrayLike

from privdb.mechanisms import ExponentialMechanism, RandomSource

__all__ = ["l1_score", "selector"]


def l1_score(exact: ArrayLike, estimate: ArrayLike, offset: float = 0.0) -> float:
    """``fl(Σ|exact − estimate| − offset)``, the real value rounded once (inf if a difference overflows)."""
    a = np.asarray(exact, dtype=np.float64).ravel()
    b = -np.asarray(estimate, dtype=np.float64).ravel()
    s = a + b
    if not np.all(np.isfinite(s)):
        return math.inf  # the mechanism refuses it, as it did the plain sum; estimates are public
    b_virtual = s - a
    t = (a - (s - b_virtual)) + (b - b_virtual)  # TwoSum: a + b = s + t exactly
    sign = np.sign(s)  # s = 0 only when a + b = 0 exactly, and then t = 0
    return math.fsum(itertools.chain((sign * s).tolist(), (sign * t).tolist(), (-float(offset),)))


def selector(
    epsilon: float, sensitivity: float, rng: RandomSource, *, weighted: bool = False
) -> tuple[ExponentialMechanism, float, float]:
    """The exponential mechanism for one selection over L1 scores, and its public clip range ``(lo, hi)``.

    Unweighted (MWEM, MST): scores ``fl(L1) ≥ 0`` clipped to ``[0, hi]``, ``hi = max_span₀/4`` (max_span₀ the
    mechanism's at error 0). Rounding once errs by ≤ 2^-53·L1 (+2^-1075 if subnormal) ≤ 2^-52·hi for L1 ≤ hi;
    for L1 > hi the float is ≥ hi too (rounding is monotone, hi a float) and both clip to hi. Weighted (AIM):
    ``fl(w·fl(L1 − b))`` errs by ≤ (2u + u²)·|w(L1 − b)| ≤ 2^-51·hi (+ underflow) for |w(L1 − b)| ≤ hi, and
    is nondecreasing in L1, so past ±hi the clipped error is at most the error at ±hi; the clip is ``±hi``,
    ``hi = max_span₀/8``, and the bound 2^-50·hi. Either error's margin (≤ 1/4 of the 1e-6 allowance) leaves
    a max_span that still accepts the range (docs/proofs/exponential.md, "Public ranges")."""
    plain = ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity, rng=rng)
    hi = plain.max_span / (8.0 if weighted else 4.0)
    error = (2.0**-50 if weighted else 2.0**-52) * hi
    em = ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity, utility_error=error, rng=rng)
    return em, (-hi if weighted else 0.0), hi
