"""The interval type of the bounds of an aggregate's argument, and what every rule of bounds.py uses.

``Rewritten`` is one subexpression after the rules have run: rewritten so that it stays in ``span`` (None
when it is always NULL), with whether it is whole and whether it can be NULL. ``BounderCore`` holds the
refusal and the check that an interval's ends are finite; the families of rules (bounds_arithmetic,
bounds_functions, bounds_choices, bounds_conversions) build on it, and bounds.py joins them and maps each
node to its rule. This module imports none of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from privdb.errors import UnsupportedQuery
from privdb.sql.front.expr.types import Expr, Type

__all__ = [
    "LIBM_ULPS",
    "BounderCore",
    "Rewritten",
    "Span",
    "any_nullable",
    "cast_operand",
    "name_of",
    "rewritten",
    "widen",
]

Span = tuple[float, float]

LIBM_ULPS = 4  # widening of a math-library result: each side within 1 ulp of exact, with margin


@dataclass(frozen=True)
class Rewritten:
    """A rewritten subexpression: ``span`` is None when it is always NULL; ``nullable`` when it can be."""

    expr: Expr
    span: Span | None
    integer: bool = True
    nullable: bool = True


def rewritten(expr: Expr, span: Span | None, integer: bool = True, nullable: bool = True) -> Rewritten:
    """A rewritten subexpression; whole values lie between the whole numbers inside the span's ends."""
    if integer and span is not None and math.ceil(span[0]) <= math.floor(span[1]):
        span = (float(math.ceil(span[0])), float(math.floor(span[1])))
    return Rewritten(expr, span, integer, nullable)


def any_nullable(*values: Rewritten) -> bool:
    return any(v.nullable for v in values)


def cast_operand(e: Expr) -> Expr:
    """A boolean operand of a cast to a number, marked as not a DOUBLE so that rendering casts it."""
    return replace(e, double=False) if e.type is Type.BOOL else e


def name_of(e: Expr) -> str:
    """How a refusal names ``e``: as the analyst wrote it."""
    return e.source or f"the {e.op}"


def widen(lower: float, upper: float, ulps: int) -> Span:
    """The interval grown by ``ulps`` units in the last place at each end; an end at 0 stays (every
    function widened here is exact where it gives 0: ``pow(0, p)``, ``ln(1)``)."""
    for _ in range(ulps):
        lower = math.nextafter(lower, -math.inf) if lower else lower
        upper = math.nextafter(upper, math.inf) if upper else upper
    return lower, upper


class BounderCore:
    """The refusal and the finite-interval check; ``value`` (bounds.py) applies the rule of a node."""

    def __init__(self, where: str) -> None:
        self.where = where

    def refuse(self, why: str) -> UnsupportedQuery:
        return UnsupportedQuery(f"{self.where}: {why}")

    def span(self, e: Expr, *ends: float) -> Span:
        """The interval spanned by ``ends``, or a refusal when an end is not finite."""
        if not all(math.isfinite(x) for x in ends):
            raise self.refuse(
                f"{name_of(e)} has no finite bound (the declared bounds of its columns make it overflow); "
                "narrow the columns' bounds or the expression",
            )
        return min(ends) + 0.0, max(ends) + 0.0

    def value(self, e: Expr) -> Rewritten:
        """``e`` rewritten, with its interval (by the rule for ``e.op``)."""
        raise NotImplementedError
