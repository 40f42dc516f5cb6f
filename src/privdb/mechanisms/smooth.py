"""Quantiles with noise scaled to a smooth upper bound of their local sensitivity (Nissim, Raskhodnikova,
Smith, "Smooth sensitivity and sampling in private data analysis", STOC 2007), the (ε, δ) version.

*The quantile.* Of ``n`` values clamped to public bounds ``[L, U]`` and sorted, ``x₍₁₎ ≤ … ≤ x₍ₙ₎``, padded
with ``x₍ᵢ₎ = L`` for ``i ≤ 0`` and ``U`` for ``i > n``, the q-quantile is ``x₍ᵣ₎`` with ``r = ⌈q·n⌉``.

*The bound.* ``S(x) = max_{k ≥ 0} e^(−kβ)·(x₍ᵣ₊ₖ₊₁₎ − x₍ᵣ₋ₖ₋₁₎)``. It is a β-smooth upper bound on the local
sensitivity under add/remove *and* substitution of one value: ``LS(x) ≤ x₍ᵣ₊₁₎ − x₍ᵣ₋₁₎`` (any neighbour's
quantile lies between them), and a neighbour's sorted values interleave with ``x``'s while its rank moves
by at most one, so each window of ``x`` at ``k`` lies inside the neighbour's window at ``k + 1``:
``S(x) ≤ e^β·S(x')`` (docs/proofs/smooth-sensitivity.md). NRS07's Proposition 3.4 states the tighter
``max_{t ≤ k+1} (x₍ₘ₊ₜ₎ − x₍ₘ₊ₜ₋ₖ₋₁₎)`` for substitution with ``n`` odd and fixed; the symmetric window here
needs neither (it is at most the NRS window of ``2k + 1``).

*The noise.* The standard Laplace density is (ε/2, ε/(2 ln(2/δ)))-admissible (NRS07, Lemma 2.9), so
``x₍ᵣ₎ + (2·S(x)/ε)·Z`` with ``Z ~ Lap(1)`` and ``β = ε/(2·ln(2/δ))`` is (ε, δ)-DP. ``Z`` is drawn exactly
on a grid of 2⁻²⁰ from the CSPRNG and the answer rounded to a public resolution and clamped to
``[L, U]`` (post-processing), so the scaled grid, which depends on ``S``, never shows.

*Time.* From per-cell counts (:func:`smooth_sensitivity_counts`) the maximum is taken over the ``k`` where a
window's end crosses a cell boundary: O(cells · log cells), whatever ``n``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _samplers
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = [
    "quantile_rank",
    "smooth_beta",
    "smooth_noise",
    "smooth_sensitivity",
    "smooth_sensitivity_counts",
]

_Z_STEP = 2.0**-20  # the standard Laplace variate's grid


def smooth_beta(epsilon: float, delta: float) -> float:
    """β = ε/(2·ln(2/δ)): the smoothness the Laplace noise's admissibility allows (NRS07, Lemma 2.9)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be > 0 and finite, got {epsilon!r}")
    if not (0 < delta < 1):
        raise InvalidParameter(f"smooth sensitivity needs δ in (0, 1), e.g. 1e-6, got {delta!r}")
    return epsilon / (2.0 * math.log(2.0 / delta))


def quantile_rank(n: int, q: float) -> int:
    """``r = ⌈q·n⌉``, exactly (the rank moves by at most one when ``n`` does)."""
    if not 0.0 <= q <= 1.0:
        raise InvalidParameter(f"the quantile must be in [0, 1], got {q!r}")
    return math.ceil(Fraction(q) * n)


def smooth_sensitivity(values: ArrayLike, lo: float, hi: float, q: float, beta: float) -> float:
    """``S(x)`` of the q-quantile from the values themselves (clamped here), one ``k`` at a time: the
    reference the histogram version is tested against (its time grows with ``n``)."""
    x = np.sort(np.clip(np.asarray(values, dtype=np.float64), lo, hi))
    n = x.size
    r = quantile_rank(n, q)

    def at(i: int) -> float:
        return lo if i < 1 else hi if i > n else float(x[i - 1])

    best, k = 0.0, 0
    while True:
        best = max(best, math.exp(-k * beta) * (at(r + k + 1) - at(r - k - 1)))
        if r + k + 1 > n and r - k - 1 < 1:  # both ends in the padding: the window is U − L from here
            return best
        k += 1


def smooth_sensitivity_counts(
    counts: ArrayLike, lo: float, width: float, q: float, beta: float
) -> tuple[float, float]:
    """``(x₍ᵣ₎, S(x))`` from per-cell counts of values already at the grid points ``lo + j·width`` (``U`` is
    the last). The window ``x₍ᵣ₊ₖ₊₁₎ − x₍ᵣ₋ₖ₋₁₎`` only grows with ``k`` and changes where an end crosses a
    cell boundary or the padding, so the maximum is at one of those ``k``: O(cells) of them."""
    c = np.rint(np.asarray(counts, dtype=np.float64)).astype(np.int64)
    if c.ndim != 1 or c.size == 0 or bool(np.any(c < 0)):
        raise InvalidParameter("counts must be a non-empty vector of non-negative counts")
    if not (beta > 0 and math.isfinite(beta)):
        raise InvalidParameter(f"beta must be > 0, got {beta!r}")
    cum = np.cumsum(c)
    n = int(cum[-1])
    r = quantile_rank(n, q)
    top = lo + (c.size - 1) * width

    def value(i: NDArray[np.int64]) -> NDArray[np.float64]:
        cell = np.searchsorted(cum, np.clip(i, 1, max(n, 1)), side="left")
        out = lo + cell.astype(np.float64) * width
        return np.where(i < 1, lo, np.where(i > n, top, out))

    ks = np.concatenate([[0, max(r - 1, 0), max(n - r, 0)], cum - r, r - 1 - cum])
    ks = np.unique(ks[ks >= 0])
    windows = value(r + ks + 1) - value(r - ks - 1)
    median = float(value(np.array([r]))[0])
    return median, float(np.max(np.exp(-ks * beta) * windows))


def smooth_noise(
    answer: float,
    sensitivity: float,
    epsilon: float,
    *,
    lo: float,
    hi: float,
    resolution: float,
    rng: RandomSource | None = None,
    size: int = 1,
) -> NDArray[np.float64]:
    """``size`` independent draws of ``answer + (2·S/ε)·Z``, ``Z ~ Lap(1)``, each rounded to
    ``lo + j·resolution`` and clamped to ``[lo, hi]``."""
    if not (resolution > 0 and math.isfinite(resolution)):
        raise InvalidParameter(f"resolution must be > 0, got {resolution!r}")
    steps = _samplers.discrete_laplace(_Z_STEP, size, rng or default_source())
    z = steps.astype(np.float64) * _Z_STEP  # P(k) ∝ e^(−|k|·2⁻²⁰): Z = k·2⁻²⁰ has scale 1
    noisy = np.clip(answer + (2.0 * sensitivity / epsilon) * z, lo, hi)  # ±inf clamp to the bounds
    grid = lo + np.rint((noisy - lo) / resolution) * resolution
    out: NDArray[np.float64] = np.clip(grid, lo, hi)
    return out
