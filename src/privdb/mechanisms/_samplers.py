"""Exact, vectorised samplers on the integers: geometric, discrete Laplace, discrete Gaussian, Bernoulli.

"Exact" means the output distribution is exactly the named one, given uniform random bits: no
floating-point approximation shifts a probability. Each sampler inverts the distribution in float64 on
whole NumPy arrays, together with a rigorous bound on the float error (``2**-40`` relative, some 4,000
times glibc's and NumPy's proven error of a few ulps). A sample whose outcome the bound certifies is final;
the few others (about 1 in 10**5) are decided exactly by :mod:`privdb.mechanisms._exact`, which draws
further random digits and compares against mpmath interval bounds. The derivation and the rates are in
docs/proofs/secure-sampling.md.

Randomness comes from a :class:`~privdb.mechanisms.randomness.RandomSource` (ChaCha20 keyed from the OS).

Timing: the fast path runs in time independent of the data; the exact path runs for a data-independent
fraction of samples, but how long it takes depends on the random digits drawn. privdb's threat model is an
analyst who sees answers, not the server's timing (docs/security.md).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import _exact
from privdb.mechanisms.randomness import RandomSource

__all__ = [
    "LAMBDA_MIN",
    "SIGMA_MAX",
    "SIGMA_MIN",
    "bernoulli",
    "discrete_gaussian",
    "discrete_laplace",
    "geometric",
    "uniform_int",
]

_TWO_M63 = 2.0**-63
_TWO_M64 = 2.0**-64
_REL = 2.0**-40  # rigorous bound on the relative float error of the inversions below
_MARGIN = 2.0**-44  # absolute margin for comparing a 64-bit uniform with a float probability

# Below this rate the float inversion of a geometric loses certainty too often: sample it in two levels.
_LAMBDA_SINGLE = 2.0**-22
# Smallest supported rate: noise of 2**50 grid steps; beyond it int64 arithmetic could overflow.
LAMBDA_MIN = 2.0**-50
# Largest supported discrete Gaussian σ: its proposals are discrete Laplace of scale 2^⌈log2 σ⌉ ≤ 2^50.
SIGMA_MAX = 2.0**50
SIGMA_MIN = 2.0**-10  # and smallest: the exact path's e^-γ (γ ≈ y²/2σ²) stays a small rational

Int64s = NDArray[np.int64]


def _geometric_inversion(lam: float, words: NDArray[np.uint64], source: RandomSource) -> Int64s:
    """Geometric by inversion: ``G = floor(-ln U / λ)``, ``U`` from the top 63 bits of each word.

    The 63 bits place ``U`` in ``[u·2^-63, (u+1)·2^-63)``; for ``U ≥ 2^-20`` that interval moves
    ``t = -ln U / λ`` by at most ``2^-43/λ``, inside the error allowance ``(|ln U| + 1)·2^-40/λ`` that also
    covers float rounding.
    """
    u = words >> np.uint64(1)
    x = u.astype(np.float64)
    x *= _TWO_M63
    with np.errstate(divide="ignore"):
        np.log(x, out=x)  # ln U ≤ 0 (−inf where u == 0)
    t = x * (-1.0 / lam)
    np.subtract(1.0, x, out=x)
    x *= _REL / lam  # error allowance on t
    hi = t + x
    np.subtract(t, x, out=t)
    np.floor(hi, out=hi)
    np.floor(t, out=t)
    sure = (t == hi) & (u >= np.uint64(1 << 43))
    out = hi.astype(np.int64)
    for i in np.flatnonzero(~sure):
        out[i] = _geometric_exact(lam, int(u[i]), source)
    return out


def _geometric_exact(lam: float, prefix: int, source: RandomSource) -> int:
    """The largest ``k ≥ 0`` with ``U < e^(−λk)``, decided exactly for a uniform known by 63 bits."""
    u = _exact.LazyUniform(prefix, 63)
    while u.prefix == 0:
        u.refine(source)
    rate = Fraction(lam)
    log_low = math.log(u.prefix) - u.bits * math.log(2.0)
    k = max(int(-log_low / lam), 0)
    while k > 0 and not _exact.less_than(u, _exact.exp_neg(rate * k), source):
        k -= 1
    while _exact.less_than(u, _exact.exp_neg(rate * (k + 1)), source):
        k += 1
    return k


def _truncated_geometric(lam: float, m: int, n: int, source: RandomSource) -> Int64s:
    """``P(L = l) ∝ e^(−λl)`` on ``[0, 2^m)`` with ``λ·2^m < 2^-21``: uniform proposals, exact acceptance."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    rate = Fraction(lam)
    while todo.size:
        k = todo.size
        w = source.words(2 * k)
        proposal = (w[:k] >> np.uint64(64 - m)).astype(np.int64)
        p = np.exp(-lam * proposal.astype(np.float64))
        v_lo = w[k:].astype(np.float64) * _TWO_M64
        accept = v_lo + _TWO_M63 + _MARGIN < p
        reject = v_lo - _MARGIN > p
        for i in np.flatnonzero(~(accept | reject)):
            u = _exact.LazyUniform(int(w[k + i]), 64)
            accept[i] = _exact.less_than(u, _exact.exp_neg(rate * int(proposal[i])), source)
        out[todo[accept]] = proposal[accept]
        todo = todo[~accept]
    return out


def geometric(lam: float, n: int, source: RandomSource) -> tuple[Int64s, NDArray[np.bool_]]:
    """``n`` draws of ``P(G = k) = (1 − e^(−λ)) e^(−λk)``, ``k ≥ 0``, and ``n`` independent fair bits.

    For ``λ < 2^-22`` the sample is split as ``G = 2^m·H + L``: the binary digits of a geometric are
    independent, so ``H`` (geometric with rate ``λ·2^m``) and ``L`` (truncated geometric on ``[0, 2^m)``)
    are independent and each is sampled where floats are precise.
    """
    words = source.words(n)
    bits = (words & np.uint64(1)).astype(np.bool_)
    if lam >= _LAMBDA_SINGLE:
        return _geometric_inversion(lam, words, source), bits
    m = math.ceil(math.log2(_LAMBDA_SINGLE / lam))
    high = _geometric_inversion(math.ldexp(lam, m), words, source)
    low = _truncated_geometric(lam, m, n, source)
    return (high << np.int64(m)) | low, bits


def discrete_laplace(lam: float, n: int, source: RandomSource) -> Int64s:
    """``P(Z = z) ∝ e^(−λ|z|)`` on the integers: a signed geometric, rejecting "−0"."""
    g, negative = geometric(lam, n, source)
    np.negative(g, out=g, where=negative)
    redo = np.flatnonzero(negative & (g == 0))
    if redo.size:
        g[redo] = discrete_laplace(lam, redo.size, source)
    return g


def discrete_gaussian(sigma: float, n: int, source: RandomSource) -> Int64s:
    """``P(Y = y) ∝ e^(−y²/2σ²)`` on the integers (Canonne, Kamath, Steinke 2020, Algorithm 3).

    Proposals come from a discrete Laplace of scale ``t``, a power of two ≥ σ (any ``t > 0`` is correct;
    a power of two makes ``λ = 1/t`` exact), accepted with probability ``exp(−(|y| − σ²/t)² / 2σ²)``.
    ``σ`` must lie in ``[SIGMA_MIN, SIGMA_MAX]`` (the mechanisms refuse larger noise when they are built).
    """
    if not SIGMA_MIN <= sigma <= SIGMA_MAX:
        raise ValueError(f"discrete Gaussian sigma {sigma!r} outside [2^-10, 2^50]")
    t = 2.0 ** max(math.ceil(math.log2(sigma)), 0)
    sigma2 = sigma * sigma
    exact_sigma2 = Fraction(sigma) ** 2
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        k = todo.size
        y = discrete_laplace(1.0 / t, k, source)
        a = np.abs(y).astype(np.float64)
        gamma = (a - sigma2 / t) ** 2 / (2.0 * sigma2)
        p = np.exp(-gamma)
        v_lo = source.words(k).astype(np.float64) * _TWO_M64
        margin = _MARGIN * (gamma + 1.0)
        accept = v_lo + _TWO_M63 + margin < p
        reject = v_lo - margin > p
        undecided = np.flatnonzero(~(accept | reject))
        if undecided.size:
            extra = source.words(undecided.size)
            for j, i in enumerate(undecided):
                exact_gamma = (abs(int(y[i])) - exact_sigma2 / Fraction(t)) ** 2 / (2 * exact_sigma2)
                u = _exact.LazyUniform(int(extra[j]), 64)
                accept[i] = _exact.less_than(u, _exact.exp_neg(exact_gamma), source)
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return out


def bernoulli(exact_p: _exact.Bounds, n: int, source: RandomSource) -> NDArray[np.bool_]:
    """``n`` exact Bernoulli(p) draws, ``p`` known through rigorous bounds ``exact_p``.

    With ``[lo, hi]`` bounds of ``p`` at 128 bits, a word ``w`` (``U ∈ [w, w+1)·2^-64``) is surely below ``p``
    when ``w < ⌊lo·2^64⌋`` and surely not when ``w ≥ ⌈hi·2^64⌉``: integer comparisons on the raw words. The
    one or two words in between are decided exactly.
    """
    lo, hi = exact_p(128)
    words = source.words(n)
    low = math.floor(lo * 2**64)
    high = math.ceil(hi * 2**64)
    out = words < np.uint64(low) if low < 2**64 else np.ones(n, dtype=np.bool_)
    unsure = ~out & (words < np.uint64(high)) if high < 2**64 else ~out
    for i in np.flatnonzero(unsure):
        out[i] = _exact.less_than(_exact.LazyUniform(int(words[i]), 64), exact_p, source)
    return out


def uniform_int(k: int, n: int, source: RandomSource) -> Int64s:
    """``n`` uniform integers in ``[0, k)``, exactly (rejection of the incomplete last block)."""
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    limit = np.uint64((2**64 // k) * k - 1)  # accept words ≤ limit: a whole number of blocks of k
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        w = source.words(todo.size)
        ok = w <= limit
        out[todo[ok]] = (w[ok] % np.uint64(k)).astype(np.int64)
        todo = todo[~ok]
    return out
