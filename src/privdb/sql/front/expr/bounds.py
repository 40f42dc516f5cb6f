"""Public bounds of an aggregate's argument, by interval arithmetic over the declared column bounds.

The noise of ``SUM(price * quantity)`` or ``AVG(LENGTH(name))`` needs a bound on every value the argument
can take, and that bound must come from public metadata, never from the data. ``bound`` walks the checked
tree: each numeric column whose value flows into the result is replaced by a ``clamp`` node that pins it
to its declared ``[lower, upper]`` (NULL stays NULL, NaN goes to ``upper``, ±inf to the ends), so the
rendered argument can never leave the interval computed here, whatever the rows hold. Conditions (CASE's
WHEN, NULLIF's second argument, everything under a comparison) only choose between values: they are left
as written and need no bounds.

Every rule is sound for DOUBLE arithmetic as DuckDB computes it: + − × / are correctly rounded and
monotone in each operand, so the rounded corners bound the rounded results; functions of the math library
(LN, EXP, POWER, ROUND with digits) are widened by a few units in the last place; ``fmod`` is bounded for
both sign conventions plus its rounding error (DuckDB 2 computes ``a - floor(a / b) * b``). An interval
that would need an infinite end, a divisor that can be 0 or a logarithm of a number that can be ≤ 0 is
refused before the data is read, with the rewrite that makes it boundable.

This module is the entry and the dispatch: the rules are grouped by family (bounds_arithmetic,
bounds_functions, bounds_choices, bounds_conversions) over the interval type of bounds_core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from privdb.errors import UnsupportedQuery
from privdb.sql.front.expr.bounds_arithmetic import ArithmeticBounds
from privdb.sql.front.expr.bounds_choices import ChoiceBounds
from privdb.sql.front.expr.bounds_conversions import ConversionBounds
from privdb.sql.front.expr.bounds_core import Rewritten, cast_operand, name_of, rewritten
from privdb.sql.front.expr.bounds_functions import FunctionBounds
from privdb.sql.front.expr.portable import mark
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["Bounded", "bound"]


@dataclass(frozen=True)
class Bounded:
    """An aggregate's argument and the public interval of its values.

    ``expr`` is the argument rewritten so that it can never leave ``[lower, upper]``: every numeric column
    read in a value position is clamped to its declared bounds. ``integer`` says every non-null value is a
    whole number. Both ends are finite and ``lower <= upper``."""

    expr: Expr
    lower: float
    upper: float
    integer: bool


def bound(e: Expr, where: str) -> Bounded:
    """``e`` (a checked aggregate argument) rewritten to stay inside public bounds, with those bounds.

    A boolean argument counts as 0/1. ``where`` names the clause in refusals (``unsupported_query``)."""
    if e.type is Type.BOOL:
        return Bounded(_as_number(e), 0.0, 1.0, True)
    if e.type is Type.NULL:
        null = Expr("literal", Type.NUM, value=None, double=False, source=e.source or "NULL")
        return Bounded(null, 0.0, 0.0, True)
    if e.type is not Type.NUM:
        example = "LENGTH(x)" if e.type is Type.TEXT else "EXTRACT(month FROM x)"
        raise UnsupportedQuery(
            f"{where}: {name_of(e)} is {e.type.value}, where a number is needed; aggregate a number, "
            f"e.g. {example}"
        )
    value = _Bounder(where).value(e)
    lower, upper = value.span or (0.0, 0.0)
    # the clamps make more forms total outside DuckDB (portable.py)
    return Bounded(mark(value.expr), lower, upper, value.integer)


def _as_number(e: Expr) -> Expr:
    """A boolean as the number 0/1 (NULL stays NULL). Not portable: PostgreSQL has no boolean→double."""
    return Expr(
        "cast", Type.NUM, (cast_operand(e),), value="double", double=True, portable=False, source=e.source
    )


class _Bounder(ArithmeticBounds, FunctionBounds, ChoiceBounds, ConversionBounds):
    """The families of rules joined; ``value`` applies the rule for a node's operator."""

    def value(self, e: Expr) -> Rewritten:
        if e.type is Type.NULL or (e.is_literal and e.value is None):
            return rewritten(e, None)
        if e.type is Type.BOOL:  # only as the operand of a cast (checked there)
            return rewritten(e, (0.0, 1.0))
        handler = _RULES.get(e.op)
        if handler is None or e.type is not Type.NUM:
            raise self.refuse(f"{name_of(e)} cannot be bounded inside an aggregate")
        return handler(self, e)


_RULES: dict[str, Callable[[_Bounder, Expr], Rewritten]] = {
    "literal": _Bounder.literal,
    "column": _Bounder.column,
    "clamp": _Bounder.clamp,
    "neg": _Bounder.neg,
    **dict.fromkeys(("add", "sub", "mul", "div", "mod", "intdiv"), _Bounder.arithmetic),
    "pow": _Bounder.power,
    **dict.fromkeys(
        ("abs", "sign", "floor", "ceil", "trunc", "round", "sqrt", "ln", "log10", "log2", "exp"),
        _Bounder.monotone,
    ),
    "case": _Bounder.case,
    "coalesce": _Bounder.coalesce,
    "nullif": _Bounder.nullif,
    "least": _Bounder.extreme,
    "greatest": _Bounder.extreme,
    "cast": _Bounder.cast,
    "length": _Bounder.length,
    "strpos": _Bounder.length,
    "date_part": _Bounder.date_part,
}
