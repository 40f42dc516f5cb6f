"""Bounds of conversions and of numbers read from text and dates: CAST, LENGTH, STRPOS and date parts.

A cast between numbers (or from a boolean) keeps its operand's interval; for an integer target each end is
rounded to the nearest whole number, halves outward. A number read from text or a date has no public bound
and is refused. LENGTH and
STRPOS are bounded by the most characters the text can have (a column is cut to its ``max_length``, a
growing function to ``MAX_RESULT_LENGTH``); a calendar date part by its calendar range.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from privdb.catalog.metadata import ColumnMeta
from privdb.sql.front.expr.bounds_core import BounderCore, Rewritten, Span, cast_operand, name_of, rewritten
from privdb.sql.front.expr.types import DEFAULT_MAX_LENGTH, MAX_RESULT_LENGTH, Expr, Type

__all__ = ["ConversionBounds"]

# Date parts with a calendar range (DuckDB's date_part; ±infinity gives NULL). Year-like parts are not here:
# a year, decade, century or epoch can be any number, so it has no public bound.
_DATE_PARTS: dict[str, Span] = {
    "month": (1.0, 12.0),
    "day": (1.0, 31.0),
    "hour": (0.0, 23.0),
    "minute": (0.0, 59.0),
    "second": (0.0, 60.0),
    "quarter": (1.0, 4.0),
    "dow": (0.0, 6.0),
    "isodow": (1.0, 7.0),
    "doy": (1.0, 366.0),
    "week": (1.0, 53.0),
}
_BIGINT = 2.0**63


class ConversionBounds(BounderCore):
    """CAST/TRY_CAST, LENGTH, STRPOS and DATE_PART."""

    def cast(self, e: Expr) -> Rewritten:
        (x,) = e.args
        if x.type in (Type.TEXT, Type.DATE):
            raise self.refuse(
                f"{name_of(e)} reads a number from {x.type.value}, which has no public bound; "
                "store it as a numeric column with declared lower and upper bounds",
            )
        a = self.value(cast_operand(x))
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return rewritten(out, None)
        if e.value != "int":
            return rewritten(out, a.span, a.integer, a.nullable or x.type is Type.BOOL)
        # TRY_CAST(DOUBLE AS BIGINT) rounds to the nearest whole number (either way on halves) and gives
        # NULL beyond BIGINT: the ends rounded outward by half, exactly
        lo, hi = a.span
        lower = float(math.ceil(Fraction(lo) - Fraction(1, 2)))
        upper = float(math.floor(Fraction(hi) + Fraction(1, 2)))
        inside = lo > -_BIGINT and hi < _BIGINT
        return rewritten(
            out, self.span(e, lower, upper), True, a.nullable or not inside or x.type is Type.BOOL
        )

    def length(self, e: Expr) -> Rewritten:
        most = self.text_length(e.args[0])
        if e.op == "strpos":  # 0 when absent, else a position of the text (1 for an empty needle)
            most = max(most, 1)
        return rewritten(e, (0.0, float(most)), True)

    def date_part(self, e: Expr) -> Rewritten:
        part = str(e.value)
        if part not in _DATE_PARTS:
            raise self.refuse(
                f"{name_of(e)} has no public bound (a {part} can be any number); aggregate a calendar part "
                "(month, day, hour, …) or test it in a condition, e.g. "
                f"SUM(CASE WHEN {name_of(e)} >= 2020 THEN 1 ELSE 0 END)",
            )
        return rewritten(e, _DATE_PARTS[part], True)

    def text_length(self, e: Expr) -> int:
        """The most characters text ``e`` can have as a function reads it (render_text): a column is cut
        to its ``max_length``, and every function that can make text longer is cut to
        ``MAX_RESULT_LENGTH``."""
        op, args = e.op, e.args
        if op == "column":
            column: ColumnMeta = e.value
            return column.max_length or DEFAULT_MAX_LENGTH
        if op == "literal":
            return len(e.value) if isinstance(e.value, str) else 0
        if op == "md5":
            return 32
        if op in ("lower", "upper", "trim", "ltrim", "rtrim", "left", "right", "nullif"):
            return self.text_length(args[0])  # one character for one (lower/upper map code points)
        if op == "substring":
            whole = self.text_length(args[0])
            return whole if e.value[1] is None else min(whole, int(e.value[1]))
        if op in ("lpad", "rpad"):
            return int(e.value)
        if op in ("concat", "dpipe"):
            return min(MAX_RESULT_LENGTH, sum(self.text_length(a) for a in args))
        if op == "replace":
            return MAX_RESULT_LENGTH
        if op == "case":
            return max(self.text_length(a) for a in (*args[1:-1:2], args[-1]))
        if op in ("coalesce", "greatest", "least"):
            return max(self.text_length(a) for a in args)
        if op == "cast":
            return self.text_length(args[0]) if args[0].type is Type.TEXT else MAX_RESULT_LENGTH
        raise self.refuse(f"{name_of(e)} has no known length bound")
