"""Exact decisions on real numbers, for the rare samples the fast floating-point path cannot certify.

A uniform real ``U`` in [0, 1) is known by a prefix of its binary digits; more digits are drawn only when
needed. An irrational probability such as ``e^(-x)`` is known through rigorous interval bounds from
mpmath's interval arithmetic (outward rounding) at any precision. Comparing the two by refining both until
their intervals separate decides ``U < p`` exactly: the result has exactly probability ``p``. This is the
classical lazy comparison behind exact Bernoulli sampling (Canonne, Kamath, Steinke 2020, section 5);
privdb uses it only where the vectorised path of :mod:`privdb.mechanisms._samplers` is unsure, which happens
for a tiny fraction of samples (see docs/proofs/secure-sampling.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from privdb.mechanisms.randomness import RandomSource

# rigorous bounds (lo, hi) of a real number, at a working precision in bits
Bounds = Callable[[int], tuple[Fraction, Fraction]]

_IV_LOCK = threading.Lock()  # mpmath's interval context keeps its precision in a global


def _iv() -> Any:
    """mpmath's interval context, imported on first use: only the rare samples the fast path cannot certify
    need it, and its import would be a tenth of every command's start."""
    from mpmath import iv

    return iv


def _endpoints(value: object) -> tuple[Fraction, Fraction]:
    from mpmath import libmp  # on first use, as _iv

    lo, hi = value._mpi_  # type: ignore[attr-defined]
    return Fraction(*libmp.to_rational(lo)), Fraction(*libmp.to_rational(hi))


def _with_prec(prec: int, compute: Callable[[], object]) -> tuple[Fraction, Fraction]:
    iv = _iv()
    with _IV_LOCK:
        old = iv.prec
        iv.prec = prec
        try:
            return _endpoints(compute())
        finally:
            iv.prec = old


def _iv_rational(x: Fraction) -> Any:
    iv = _iv()
    return iv.mpf(x.numerator) / iv.mpf(x.denominator)


def exp_neg(x: Fraction) -> Bounds:
    """Bounds of ``e^(-x)``."""
    return lambda prec: _with_prec(prec, lambda: _iv().exp(-_iv_rational(x)))


def odds(x: Fraction, m: int) -> Bounds:
    """Bounds of ``e^x / (e^x + m)`` (k-ary randomised response keeps the truth with this, m = k − 1)."""
    return lambda prec: _with_prec(
        prec,
        lambda: 1 / (1 + m * _iv().exp(-_iv_rational(x))),
    )


def logistic(x: Fraction) -> Bounds:
    """Bounds of ``1 / (1 + e^(-x))`` (the randomised-response truth probability for ``x = ε``)."""
    return odds(x, 1)


def gumbel_key(score: Fraction) -> Callable[[Fraction, Fraction, int], tuple[Fraction, Fraction]]:
    """Bounds of ``score - ln(-ln U)`` for ``U`` in [u_lo, u_hi] (an interval of a uniform's prefix)."""

    def bounds(u_lo: Fraction, u_hi: Fraction, prec: int) -> tuple[Fraction, Fraction]:
        iv = _iv()

        def lo() -> object:
            if u_lo == 0:
                return iv.mpf("-inf")
            return _iv_rational(score) - iv.log(-iv.log(_iv_rational(u_lo)))

        def hi() -> object:
            if u_hi == 1:
                return iv.mpf("inf")
            return _iv_rational(score) - iv.log(-iv.log(_iv_rational(u_hi)))

        return _with_prec(prec, lo)[0], _with_prec(prec, hi)[1]

    return bounds


def rational(p: Fraction) -> Bounds:
    """Exact bounds of a rational."""
    return lambda prec: (p, p)


@dataclass
class LazyUniform:
    """A uniform real in [0, 1) known by its first ``bits`` binary digits, ``prefix``."""

    prefix: int
    bits: int

    @property
    def low(self) -> Fraction:
        return Fraction(self.prefix, 1 << self.bits)

    @property
    def high(self) -> Fraction:
        return Fraction(self.prefix + 1, 1 << self.bits)

    def refine(self, source: RandomSource) -> None:
        """Draw 64 more digits."""
        self.prefix = (self.prefix << 64) | int(source.words(1)[0])
        self.bits += 64


def less_than(u: LazyUniform, p: Bounds, source: RandomSource) -> bool:
    """Decide ``U < p`` exactly, refining ``U`` (which the caller keeps) as far as needed."""
    while True:
        lo, hi = p(u.bits + 64)
        if u.high <= lo:
            return True
        if u.low >= hi:
            return False
        u.refine(source)
