"""Bounds of the functions of one number: ABS, SIGN, FLOOR, CEIL, TRUNC, ROUND, SQRT, LN, LOG10, LOG2, EXP.

Each is monotone on the pieces where it is defined, so its interval is the image of the ends (ABS: split
at 0). A square root or logarithm of a number that can be below its domain, or EXP of one above 700, is
refused with the rewrite that bounds it; math-library results are widened by a few ulps, and ROUND follows
DuckDB's own computation exactly (privdb.sql.front.expr.rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from privdb.sql.front.expr.bounds_core import (
    LIBM_ULPS,
    BounderCore,
    Rewritten,
    Span,
    name_of,
    rewritten,
    widen,
)
from privdb.sql.front.expr.rounding import round_half_away
from privdb.sql.front.expr.types import Expr

__all__ = ["FunctionBounds"]

_LOGS = {"ln": math.log, "log10": math.log10, "log2": math.log2}
_ROUNDING: dict[str, Callable[[float], int]] = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc}
_MAX_EXP = 700.0  # EXP(x) is bounded for x ≤ 700 (e^709.8 overflows)


class FunctionBounds(BounderCore):
    """The functions of one number."""

    def monotone(self, e: Expr) -> Rewritten:
        """ABS, SIGN, FLOOR, CEIL, TRUNC, ROUND, SQRT, LN, LOG10, LOG2, EXP."""
        (a,) = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return rewritten(out, None)
        lo, hi = a.span
        arg = name_of(e.args[0])
        op = e.op
        if op == "abs":
            span = (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0.0, max(-lo, hi))
            return rewritten(out, self.span(e, *span), a.integer, a.nullable)
        if op == "sign":
            return rewritten(out, self.span(e, _sign(lo), _sign(hi)), True, a.nullable)
        if op in _ROUNDING:
            f = _ROUNDING[op]
            return rewritten(out, self.span(e, float(f(lo)), float(f(hi))), True, a.nullable)
        if op == "round":
            digits = int(e.value)
            # whole for digits ≤ 0; a whole input stays whole while x·10^digits is exact
            whole = digits <= 0 or (a.integer and max(-lo, hi) * 10.0**digits < 2.0**52)
            return rewritten(out, self.rounded(e, lo, hi, digits), whole, a.nullable)
        if op == "sqrt":
            if lo < 0:
                raise self.refuse(
                    f"{arg} can be < 0, so {name_of(e)} has no bound; write e.g. SQRT(GREATEST({arg}, 0))"
                )
            return rewritten(out, self.span(e, math.sqrt(lo), math.sqrt(hi)), False, a.nullable)
        if op in _LOGS:
            if lo <= 0:
                raise self.refuse(
                    f"{arg} can be ≤ 0, so {name_of(e)} has no bound; write e.g. "
                    f"{op.upper()}(GREATEST({arg}, 1))",
                )
            ends = widen(_LOGS[op](lo), _LOGS[op](hi), LIBM_ULPS)
            return rewritten(out, self.span(e, *ends), False, a.nullable)
        if op == "exp":
            if hi > _MAX_EXP:
                raise self.refuse(
                    f"{arg} can exceed {_MAX_EXP:g}, so {name_of(e)} has no finite bound; write e.g. "
                    f"EXP(LEAST({arg}, {_MAX_EXP:g}))",
                )
            lower, upper = widen(math.exp(lo), math.exp(hi), LIBM_ULPS)
            return rewritten(out, self.span(e, max(lower, 0.0), upper), False, a.nullable)
        raise self.refuse(f"{name_of(e)} cannot be bounded inside an aggregate")

    def rounded(self, e: Expr, lo: float, hi: float, digits: int) -> Span:
        """``round(x, digits)``: DuckDB's ``round(x·10^d)/10^d`` (or ``round(x/10^-d)·10^-d``) is monotone
        except where it overflows, where it gives ``x`` (d > 0) or 0 (d < 0)."""
        if digits == 0:
            return self.span(e, _c_round(lo), _c_round(hi))
        ends = [_round_at(lo, digits), _round_at(hi, digits)]
        found = [x for x in ends if x is not None]
        if len(found) < 2:
            found += [lo, hi, 0.0]
        return self.span(e, *widen(min(found), max(found), 1))


def _c_round(y: float) -> float:
    """C's ``round``: to the nearest whole number, halves away from zero (exact on doubles)."""
    a = abs(y)
    whole = math.floor(a)
    if a - whole >= 0.5:
        whole += 1
    return math.copysign(float(whole), y)


def _round_at(x: float, digits: int) -> float | None:
    """DuckDB's ``round(x, digits)`` for ``digits != 0`` (exact: privdb.sql.front.expr.rounding), or None
    where it is not finite."""
    result = round_half_away(x, digits)
    return result if math.isfinite(result) else None


def _sign(x: float) -> float:
    return 1.0 if x > 0 else -1.0 if x < 0 else 0.0
