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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from privdb.catalog.metadata import ColumnMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front.expr.portable import mark
from privdb.sql.front.expr.rounding import round_half_away
from privdb.sql.front.expr.types import DEFAULT_MAX_LENGTH, MAX_RESULT_LENGTH, Expr, Type

__all__ = ["Bounded", "bound"]

Span = tuple[float, float]

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
_SYMBOL = {"div": "/", "mod": "%", "intdiv": "//"}
_LOGS = {"ln": math.log, "log10": math.log10, "log2": math.log2}
_ROUNDING: dict[str, Callable[[float], int]] = {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc}
_LIBM_ULPS = 4  # widening of a math-library result: each side within 1 ulp of exact, with margin
_MAX_EXP = 700.0  # EXP(x) is bounded for x ≤ 700 (e^709.8 overflows)
_BIGINT = 2.0**63


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


@dataclass(frozen=True)
class _Value:
    """A rewritten subexpression: ``span`` is None when it is always NULL; ``nullable`` when it can be."""

    expr: Expr
    span: Span | None
    integer: bool = True
    nullable: bool = True


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
            f"{where}: {_name(e)} is {e.type.value}, where a number is needed; aggregate a number, "
            f"e.g. {example}"
        )
    value = _Bounder(where).value(e)
    lower, upper = value.span or (0.0, 0.0)
    # the clamps make more forms total outside DuckDB (portable.py)
    return Bounded(mark(value.expr), lower, upper, value.integer)


def _as_number(e: Expr) -> Expr:
    """A boolean as the number 0/1 (NULL stays NULL). Not portable: PostgreSQL has no boolean→double."""
    return Expr(
        "cast", Type.NUM, (_cast_operand(e),), value="double", double=True, portable=False, source=e.source
    )


def _cast_operand(e: Expr) -> Expr:
    """A boolean operand of a cast to a number, marked as not a DOUBLE so that rendering casts it."""
    return replace(e, double=False) if e.type is Type.BOOL else e


def _name(e: Expr) -> str:
    return e.source or f"the {e.op}"


def _declared(column: ColumnMeta) -> Span | None:
    """A numeric column's public interval: its declared bounds, else a numeric public domain."""
    if column.lower is not None and column.upper is not None:
        return float(column.lower), float(column.upper)
    values = column.values
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return float(min(values)), float(max(values))
    return None


def _widen(lower: float, upper: float, ulps: int) -> Span:
    """The interval grown by ``ulps`` units in the last place at each end; an end at 0 stays (every
    function widened here is exact where it gives 0: ``pow(0, p)``, ``ln(1)``)."""
    for _ in range(ulps):
        lower = math.nextafter(lower, -math.inf) if lower else lower
        upper = math.nextafter(upper, math.inf) if upper else upper
    return lower, upper


def _libm(f: Callable[[float], float], x: float) -> float:
    """``f(x)`` as a float; ±inf on overflow and NaN outside the domain, as the engine gives."""
    try:
        return f(x)
    except OverflowError:
        return math.inf
    except (ValueError, ZeroDivisionError):
        return math.nan


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


def _value(expr: Expr, span: Span | None, integer: bool = True, nullable: bool = True) -> _Value:
    """A rewritten subexpression; whole values lie between the whole numbers inside the span's ends."""
    if integer and span is not None and math.ceil(span[0]) <= math.floor(span[1]):
        span = (float(math.ceil(span[0])), float(math.floor(span[1])))
    return _Value(expr, span, integer, nullable)


def _any_nullable(*values: _Value) -> bool:
    return any(v.nullable for v in values)


class _Bounder:
    def __init__(self, where: str) -> None:
        self.where = where

    def refuse(self, why: str) -> UnsupportedQuery:
        return UnsupportedQuery(f"{self.where}: {why}")

    def span(self, e: Expr, *ends: float) -> Span:
        """The interval spanned by ``ends``, or a refusal when an end is not finite."""
        if not all(math.isfinite(x) for x in ends):
            raise self.refuse(
                f"{_name(e)} has no finite bound (the declared bounds of its columns make it overflow); "
                "narrow the columns' bounds or the expression",
            )
        return min(ends) + 0.0, max(ends) + 0.0

    # ---- dispatch
    def value(self, e: Expr) -> _Value:
        if e.type is Type.NULL or (e.is_literal and e.value is None):
            return _value(e, None)
        if e.type is Type.BOOL:  # only as the operand of a cast (checked there)
            return _value(e, (0.0, 1.0))
        handler = _RULES.get(e.op)
        if handler is None or e.type is not Type.NUM:
            raise self.refuse(f"{_name(e)} cannot be bounded inside an aggregate")
        return handler(self, e)

    # ---- leaves
    def literal(self, e: Expr) -> _Value:
        number = float(e.value)
        return _value(e, self.span(e, number), number.is_integer(), nullable=False)

    def column(self, e: Expr) -> _Value:
        column: ColumnMeta = e.value
        declared = _declared(column)
        if declared is None:
            raise self.refuse(f"{_name(e)} has no declared bounds; declare lower and upper in its metadata")
        lower, upper = self.span(e, *declared)
        whole = (column.storage or column.type) in ("int", "bool")
        whole = whole and math.ceil(lower) <= math.floor(upper)  # whole values within whole bounds
        if whole:
            lower, upper = float(math.ceil(lower)), float(math.floor(upper))
        clamp = Expr(
            "clamp", Type.NUM, (e,), value=(lower, upper), double=True, portable=e.portable, source=e.source
        )
        return _value(clamp, (lower, upper), whole)

    def clamp(self, e: Expr) -> _Value:
        """An argument bounded already (``bound`` applied twice) keeps its clamp."""
        lower, upper = self.span(e, *(float(x) for x in e.value))
        column: ColumnMeta = e.args[0].value
        whole = (
            (column.storage or column.type) in ("int", "bool") and lower.is_integer() and upper.is_integer()
        )
        return _value(e, (lower, upper), whole)

    # ---- arithmetic
    def neg(self, e: Expr) -> _Value:
        (a,) = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return _value(out, None)
        return _value(out, self.span(e, -a.span[1], -a.span[0]), a.integer, a.nullable)

    def arithmetic(self, e: Expr) -> _Value:
        a, b = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr, b.expr))
        if e.op in _SYMBOL and b.span is not None and b.span[0] <= 0.0 <= b.span[1]:
            sym = _SYMBOL[e.op]
            raise self.refuse(
                f"{_name(e.args[1])} can be 0, so {_name(e)} has no bound; write e.g. "
                f"{_name(e.args[0])} {sym} GREATEST({_name(e.args[1])}, 1)",
            )
        if a.span is None or b.span is None:
            return _value(out, None)
        (la, ua), (lb, ub) = a.span, b.span
        integer, nullable = a.integer and b.integer, _any_nullable(a, b)
        if e.op == "add":
            return _value(out, self.span(e, la + lb, ua + ub), integer, nullable)
        if e.op == "sub":
            return _value(out, self.span(e, la - ub, ua - lb), integer, nullable)
        if e.op == "mul":
            return _value(out, self.span(e, la * lb, la * ub, ua * lb, ua * ub), integer, nullable)
        quotients = self.span(e, la / lb, la / ub, ua / lb, ua / ub)
        if e.op == "div":
            return _value(out, quotients, False, nullable)
        if e.op == "intdiv":  # floor(a / b): floor is monotone
            return _value(
                out, self.span(e, math.floor(quotients[0]), math.floor(quotients[1])), True, nullable
            )
        return _value(out, self.remainder(e, a.span, b.span, integer), integer, nullable)

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

    def power(self, e: Expr) -> _Value:
        base_e, exponent_e = e.args
        if not exponent_e.is_literal:
            raise self.refuse(
                f"{_name(e)} has a computed exponent; bounds need a number literal exponent, e.g. POWER(x, 2)"
            )
        base = self.value(base_e)
        out = replace(e, args=(base.expr, exponent_e))
        if base.span is None or exponent_e.value is None:
            return _value(out, None)
        p = float(exponent_e.value)
        lo, hi = base.span
        whole = p.is_integer()
        if not whole and lo < 0:
            raise self.refuse(
                f"{_name(base_e)} can be < 0 and the exponent is not whole, so {_name(e)} has no bound; "
                f"write e.g. POWER(GREATEST({_name(base_e)}, 0), {p:g})",
            )
        if p < 0 and lo <= 0.0 <= hi:
            raise self.refuse(
                f"{_name(base_e)} can be 0 and the exponent is negative, so {_name(e)} has no bound; "
                f"write e.g. POWER(GREATEST({_name(base_e)}, 1), {p:g})",
            )
        if p == 0:
            return _value(out, (1.0, 1.0), True, base.nullable)
        ends = [_libm(lambda x: math.pow(x, p), lo), _libm(lambda x: math.pow(x, p), hi)]
        if whole and p > 0 and int(p) % 2 == 0 and lo < 0 < hi:
            ends.append(0.0)  # even power: the minimum is at 0
        lower, upper = self.span(e, *ends)
        integer = base.integer and whole and p > 0
        return _value(out, self.span(e, *_widen(lower, upper, _LIBM_ULPS)), integer, base.nullable)

    # ---- functions of one number
    def monotone(self, e: Expr) -> _Value:
        """ABS, SIGN, FLOOR, CEIL, TRUNC, ROUND, SQRT, LN, LOG10, LOG2, EXP."""
        (a,) = (self.value(x) for x in e.args)
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return _value(out, None)
        lo, hi = a.span
        arg = _name(e.args[0])
        op = e.op
        if op == "abs":
            span = (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0.0, max(-lo, hi))
            return _value(out, self.span(e, *span), a.integer, a.nullable)
        if op == "sign":
            return _value(out, self.span(e, _sign(lo), _sign(hi)), True, a.nullable)
        if op in _ROUNDING:
            f = _ROUNDING[op]
            return _value(out, self.span(e, float(f(lo)), float(f(hi))), True, a.nullable)
        if op == "round":
            digits = int(e.value)
            # whole for digits ≤ 0; a whole input stays whole while x·10^digits is exact
            whole = digits <= 0 or (a.integer and max(-lo, hi) * 10.0**digits < 2.0**52)
            return _value(out, self.rounded(e, lo, hi, digits), whole, a.nullable)
        if op == "sqrt":
            if lo < 0:
                raise self.refuse(
                    f"{arg} can be < 0, so {_name(e)} has no bound; write e.g. SQRT(GREATEST({arg}, 0))"
                )
            return _value(out, self.span(e, math.sqrt(lo), math.sqrt(hi)), False, a.nullable)
        if op in _LOGS:
            if lo <= 0:
                raise self.refuse(
                    f"{arg} can be ≤ 0, so {_name(e)} has no bound; write e.g. "
                    f"{op.upper()}(GREATEST({arg}, 1))",
                )
            ends = _widen(_LOGS[op](lo), _LOGS[op](hi), _LIBM_ULPS)
            return _value(out, self.span(e, *ends), False, a.nullable)
        if op == "exp":
            if hi > _MAX_EXP:
                raise self.refuse(
                    f"{arg} can exceed {_MAX_EXP:g}, so {_name(e)} has no finite bound; write e.g. "
                    f"EXP(LEAST({arg}, {_MAX_EXP:g}))",
                )
            lower, upper = _widen(math.exp(lo), math.exp(hi), _LIBM_ULPS)
            return _value(out, self.span(e, max(lower, 0.0), upper), False, a.nullable)
        raise self.refuse(f"{_name(e)} cannot be bounded inside an aggregate")

    def rounded(self, e: Expr, lo: float, hi: float, digits: int) -> Span:
        """``round(x, digits)``: DuckDB's ``round(x·10^d)/10^d`` (or ``round(x/10^-d)·10^-d``) is monotone
        except where it overflows, where it gives ``x`` (d > 0) or 0 (d < 0)."""
        if digits == 0:
            return self.span(e, _c_round(lo), _c_round(hi))
        ends = [_round_at(lo, digits), _round_at(hi, digits)]
        found = [x for x in ends if x is not None]
        if len(found) < 2:
            found += [lo, hi, 0.0]
        return self.span(e, *_widen(min(found), max(found), 1))

    # ---- choices
    def case(self, e: Expr) -> _Value:
        *pairs, default = e.args
        args: list[Expr] = []
        results: list[_Value] = []
        for i in range(0, len(pairs), 2):
            result = self.value(pairs[i + 1])
            args += [pairs[i], result.expr]  # the condition is left as written
            results.append(result)
        otherwise = self.value(default)
        results.append(otherwise)
        return self.union(e, replace(e, args=(*args, otherwise.expr)), results, _any_nullable(*results))

    def coalesce(self, e: Expr) -> _Value:
        values = [self.value(x) for x in e.args]
        reached: list[_Value] = []
        for v in values:  # arguments after one that is never NULL are never the result
            reached.append(v)
            if not v.nullable:
                break
        nullable = all(v.nullable for v in values)
        return self.union(e, replace(e, args=tuple(v.expr for v in values)), reached, nullable)

    def nullif(self, e: Expr) -> _Value:
        a = self.value(e.args[0])  # the second argument is only compared
        return _value(replace(e, args=(a.expr, e.args[1])), a.span, a.integer, True)

    def extreme(self, e: Expr) -> _Value:
        """LEAST/GREATEST skip NULL arguments (NULL only when all are): the result is the extreme of some
        non-empty set of the arguments that includes every argument that is never NULL."""
        values = [self.value(x) for x in e.args]
        out = replace(e, args=tuple(v.expr for v in values))
        present = [v for v in values if v.span is not None]
        integer = all(v.integer for v in present)
        nullable = all(v.nullable for v in values)
        if not present:
            return _value(out, None)
        lows = [v.span[0] for v in present if v.span is not None]
        highs = [v.span[1] for v in present if v.span is not None]
        sure = [v.span for v in present if not v.nullable and v.span is not None]
        if e.op == "least":
            upper = min(s[1] for s in sure) if sure else max(highs)
            return _value(out, self.span(e, min(lows), upper), integer, nullable)
        lower = max(s[0] for s in sure) if sure else min(lows)
        return _value(out, self.span(e, lower, max(highs)), integer, nullable)

    def union(self, e: Expr, out: Expr, values: list[_Value], nullable: bool) -> _Value:
        spans = [v.span for v in values if v.span is not None]
        if not spans:
            return _value(out, None)
        integer = all(v.integer for v in values if v.span is not None)
        ends = [x for s in spans for x in s]
        return _value(out, self.span(e, *ends), integer, nullable)

    # ---- conversions and numbers of text and dates
    def cast(self, e: Expr) -> _Value:
        (x,) = e.args
        if x.type in (Type.TEXT, Type.DATE):
            raise self.refuse(
                f"{_name(e)} reads a number from {x.type.value}, which has no public bound; "
                "store it as a numeric column with declared lower and upper bounds",
            )
        a = self.value(_cast_operand(x))
        out = replace(e, args=(a.expr,))
        if a.span is None:
            return _value(out, None)
        if e.value != "int":
            return _value(out, a.span, a.integer, a.nullable or x.type is Type.BOOL)
        # TRY_CAST(DOUBLE AS BIGINT) rounds to the nearest whole number (either way on halves) and gives
        # NULL beyond BIGINT: the ends rounded outward by half, exactly
        lo, hi = a.span
        lower = float(math.ceil(Fraction(lo) - Fraction(1, 2)))
        upper = float(math.floor(Fraction(hi) + Fraction(1, 2)))
        inside = lo > -_BIGINT and hi < _BIGINT
        return _value(out, self.span(e, lower, upper), True, a.nullable or not inside or x.type is Type.BOOL)

    def length(self, e: Expr) -> _Value:
        most = self.text_length(e.args[0])
        if e.op == "strpos":  # 0 when absent, else a position of the text (1 for an empty needle)
            most = max(most, 1)
        return _value(e, (0.0, float(most)), True)

    def date_part(self, e: Expr) -> _Value:
        part = str(e.value)
        if part not in _DATE_PARTS:
            raise self.refuse(
                f"{_name(e)} has no public bound (a {part} can be any number); aggregate a calendar part "
                "(month, day, hour, …) or test it in a condition, e.g. "
                f"SUM(CASE WHEN {_name(e)} >= 2020 THEN 1 ELSE 0 END)",
            )
        return _value(e, _DATE_PARTS[part], True)

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
        raise self.refuse(f"{_name(e)} has no known length bound")


def _sign(x: float) -> float:
    return 1.0 if x > 0 else -1.0 if x < 0 else 0.0


_RULES: dict[str, Callable[[_Bounder, Expr], _Value]] = {
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
