"""Validation of privacy parameters: every bad value becomes an ``invalid_parameter`` error naming it."""

from __future__ import annotations

import math
from fractions import Fraction

from privdb.errors import InvalidParameter


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise InvalidParameter(f"{name} must be a number, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        raise InvalidParameter(f"{name} must be a number, got NaN")
    if math.isinf(x):
        raise InvalidParameter(f"{name} must be finite, got {x}")
    return x


def positive(name: str, value: object) -> float:
    """A finite number > 0 (ε, a sensitivity, a scale)."""
    x = _number(name, value)
    if x <= 0:
        raise InvalidParameter(f"{name} must be > 0, got {x:g}; pass a positive finite number")
    return x


def non_negative(name: str, value: object) -> float:
    x = _number(name, value)
    if x < 0:
        raise InvalidParameter(f"{name} must be >= 0, got {x:g}")
    return x


def probability(name: str, value: object, *, open_low: bool = False, open_high: bool = False) -> float:
    """A number in [0, 1] (or an open end where asked)."""
    x = _number(name, value)
    low_ok = x > 0 if open_low else x >= 0
    high_ok = x < 1 if open_high else x <= 1
    if not (low_ok and high_ok):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise InvalidParameter(f"{name} must lie in {lo}, {hi}, got {x:g}")
    return x


def delta(value: object) -> float:
    """δ of (ε, δ)-DP: in [0, 1)."""
    return probability("delta", value, open_high=True)


def exact(value: float | int | Fraction) -> Fraction:
    """The exact rational a user meant: ``0.1`` is 1/10, not the binary float nearest to it."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(float(value)))
