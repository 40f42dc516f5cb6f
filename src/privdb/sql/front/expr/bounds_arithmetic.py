"""Bounds of the leaves and of arithmetic: literals, clamped columns, negation, + − × / % // and POWER.

A numeric column in a value position becomes a ``clamp`` to its declared bounds (or its numeric public
domain); + − × / take the extremes of the corners, which is sound because DOUBLE arithmetic is correctly
rounded and monotone in each operand. A divisor whose interval holds 0 is refused; ``%`` is bounded for
both sign conventions of ``fmod``; POWER needs a literal exponent and is widened by a few ulps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from privdb.catalog.metadata import ColumnMeta
from privdb.sql.front.expr.bounds_core import (
    LIBM_ULPS,
    BounderCore,
    Rewritten,
    Span,
    any_nullable,
    name_of,
    rewritten,
    widen,
)
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["ArithmeticBounds"]

_SYMBOL = {"div": "/", "mod": "%", "intdiv": "//"}


class ArithmeticBounds(BounderCore):
    """Literals, columns, clamps, negation, the arithmetic operators and POWER."""

    # ---- leaves
    def literal(self, e: Expr) -> Rewritten:
        number = float(e.value)
        return rewritten(e, self.span(e, number), number.is_integer(), nullable=False)

    def column(self, e: Expr) -> Rewritten:
        column: ColumnMeta = e.value
        declared = _declared(column)
        if declared is None:
            raise self.refuse(f"{name_of(e)} has no declared bounds; declare lower and upper in its metadata")
        lower, upper = self.span(e, *declared)
        whole = (column.storage or column.type) in ("int", "bool")
        whole = whole and math.ceil(lower) <= math.floor(upper)  # whole values within whole bounds
        if whole:
            lower, upper = float(math.ceil(lower)), float(math.floor(upper))
        clamp = Expr(
            "clamp", Type.NUM, (e,), value=(lower, upper), double=True, portable=e.portable, source=e.source
        )
        return rewritten(clamp, (lower, upper), whole)

    def clamp(self, e: Expr) -> Rewritten:
        """An argument bounded already (``bound`` applied twice) keeps its clamp."""
        lower, upper = self.span(e, *(float(x) for x in e.value))
        column: ColumnMeta = e.args[0].value
        whole = (
            (column.storage or column.type) in ("int", "bool") and lower.is_integer() and upper.is_integer()
        )
        return rewritten(e, (lower, upper), whole)

    # ---- arithmetic
    def neg(self, e: Expr) -> Rewritten:
        (a,) = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return rewritten(out, None)
        return rewritten(out, self.span(e, -a.span[1], -a.span[0]), a.integer, a.nullable)

    def arithmetic(self, e: Expr) -> Rewritten:
        a, b = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr, b.expr))
        if e.op in _SYMBOL and b.span is not None and b.span[0] <= 0.0 <= b.span[1]:
            sym = _SYMBOL[e.op]
            raise self.refuse(
                f"{name_of(e.args[1])} can be 0, so {name_of(e)} has no bound; write e.g. "
                f"{name_of(e.args[0])} {sym} GREATEST({name_of(e.args[1])}, 1)",
            )
        if a.span is None or b.span is None:
            return rewritten(out, None)
        (la, ua), (lb, ub) = a.span, b.span
        integer, nullable = a.integer and b.integer, any_nullable(a, b)
        if e.op == "add":
            return rewritten(out, self.span(e, la + lb, ua + ub), integer, nullable)
        if e.op == "sub":
            return rewritten(out, self.span(e, la - ub, ua - lb), integer, nullable)
        if e.op == "mul":
            return rewritten(out, self.span(e, la * lb, la * ub, ua * lb, ua * ub), integer, nullable)
        quotients = self.span(e, la / lb, la / ub, ua / lb, ua / ub)
        if e.op == "div":
            return rewritten(out, quotients, False, nullable)
        if e.op == "intdiv":  # floor(a / b): floor is monotone
            return rewritten(
                out, self.span(e, math.floor(quotients[0]), math.floor(quotients[1])), True, nullable
            )
        return rewritten(out, self.remainder(e, a.span, b.span, integer), integer, nullable)

    def remainder(self, e: Expr, a: Span, b: Span, integer: bool) -> Span:
        """``fmod(a, b)`` with ``b`` ≠ 0, sound for both conventions: the sign of the dividend (C's fmod,
        exact) and the sign of the divisor (DuckDB 2: ``a - floor(a / b) * b`` in DOUBLE, whose rounding
        can err by a few ulps of ``a``). Either way ``|r| ≤ max |b|``, and ``|r| ≤ |a|`` when the signs of
        ``a`` and ``r`` agree."""
        (la, ua), (lb, ub) = a, b
        most_a, most_b = max(abs(la), abs(ua)), max(abs(lb), abs(ub))
        trunc_lo = 0.0 if la >= 0 else max(la, -most_b)
        trunc_hi = 0.0 if ua <= 0 else min(ua, most_b)
        if lb > 0:
            floor_lo, floor_hi = 0.0, (min(ua, ub) if la >= 0 else ub)
        else:
            floor_lo, floor_hi = (max(la, lb) if ua <= 0 else lb), 0.0
        lower, upper = min(trunc_lo, floor_lo), max(trunc_hi, floor_hi)
        if integer and most_a + most_b < 2.0**52:  # whole operands: exact, and |r| < |b|
            limit = float(math.ceil(most_b) - 1)
            return self.span(e, max(lower, -limit), min(upper, limit))
        error = (most_a + most_b) * 2.0**-50
        return self.span(e, lower - error, upper + error)

    def power(self, e: Expr) -> Rewritten:
        base_e, exponent_e = e.args
        if not exponent_e.is_literal:
            raise self.refuse(
                f"{name_of(e)} has a computed exponent; bounds need a number literal exponent, "
                "e.g. POWER(x, 2)"
            )
        base = self.value(base_e)
        out = replace(e, args=(base.expr, exponent_e))
        if base.span is None or exponent_e.value is None:
            return rewritten(out, None)
        p = float(exponent_e.value)
        lo, hi = base.span
        whole = p.is_integer()
        if not whole and lo < 0:
            raise self.refuse(
                f"{name_of(base_e)} can be < 0 and the exponent is not whole, so {name_of(e)} has no bound; "
                f"write e.g. POWER(GREATEST({name_of(base_e)}, 0), {p:g})",
            )
        if p < 0 and lo <= 0.0 <= hi:
            raise self.refuse(
                f"{name_of(base_e)} can be 0 and the exponent is negative, so {name_of(e)} has no bound; "
                f"write e.g. POWER(GREATEST({name_of(base_e)}, 1), {p:g})",
            )
        if p == 0:
            return rewritten(out, (1.0, 1.0), True, base.nullable)
        ends = [_libm(lambda x: math.pow(x, p), lo), _libm(lambda x: math.pow(x, p), hi)]
        if whole and p > 0 and int(p) % 2 == 0 and lo < 0 < hi:
            ends.append(0.0)  # even power: the minimum is at 0
        lower, upper = self.span(e, *ends)
        integer = base.integer and whole and p > 0
        return rewritten(out, self.span(e, *widen(lower, upper, LIBM_ULPS)), integer, base.nullable)


def _declared(column: ColumnMeta) -> Span | None:
    """A numeric column's public interval: its declared bounds, else a numeric public domain."""
    if column.lower is not None and column.upper is not None:
        return float(column.lower), float(column.upper)
    values = column.values
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return float(min(values)), float(max(values))
    return None


def _libm(f: Callable[[float], float], x: float) -> float:
    """``f(x)`` as a float; ±inf on overflow and NaN outside the domain, as the engine gives."""
    try:
        return f(x)
    except OverflowError:
        return math.inf
    except (ValueError, ZeroDivisionError):
        return math.nan
