"""Which checked expressions are total on every engine, not only DuckDB (the ``portable`` flag).

DuckDB computes in DOUBLE without raising, and privdb guards its few partial forms with ``TRY``. Other
engines have no ``TRY``: PostgreSQL raises on DOUBLE overflow and underflow (``float8_mul`` and ``float8_div``
raise when a product or quotient of non-zero numbers rounds to 0), on division by zero, on a cast out of
range and on a NUMERIC too large for DOUBLE; SQLite gives NULL or ±inf and never raises; Spark (non-ANSI)
gives NULL. So a form is sent outside DuckDB only when it provably cannot raise on PostgreSQL *and* gives
DuckDB's value on every engine (docs/proofs/sql.md, "Outcomes", item 5).

``mark`` recomputes the flag bottom-up with an interval analysis of every numeric subexpression, from
public facts only: a literal is itself; a ``clamp`` (an aggregate's argument, bounds.py) lies in its
declared finite bounds; a column stored as an integer lies in ``[-2⁶³, 2⁶³]`` and is whole; any other
column (a DOUBLE may hold ±inf or NaN, a NUMERIC may exceed DOUBLE) is not a safe number. A number is safe
when its every value is NULL or a finite DOUBLE within its interval, and every non-zero value is at least
``least`` in magnitude (so no product or quotient of it can underflow to 0). The rules:

- ``- x``, ``ABS``: exact; ``SIGN``: exact, whole. ``+``/``−``: the interval's ends are finite, so the
  rounded result is (rounding is monotone); a non-zero sum of doubles of magnitude ≥ m is a multiple of
  ``2^(⌊log2 m⌋ − 52)``, hence at least that (whole numbers: at least 1).
- ``×``, ``/``, ``//``: ends finite as above; non-zero results at least ``least_a · least_b`` (or
  ``least_a / max|b|``), which must stay above the smallest double (else PostgreSQL could raise on
  underflow); a divisor's interval must exclude 0.
- ``FLOOR``, ``CEIL``: whole; inside ``(-2⁶³, 2⁶³)`` only (Spark returns a BIGINT).
- ``CAST(x AS INTEGER)``: only of whole numbers inside ``(-2⁶³, 2⁶³)`` (SQLite and Spark truncate, DuckDB
  and PostgreSQL round: on whole numbers all agree, and no engine's range is exceeded).
- ``CASE``, ``COALESCE``, ``NULLIF``: safe results (and conditions that are portable themselves).
- ``GREATEST``, ``LEAST``: safe arguments, at most 8 and none holding another (SQLite has no NULL-skipping
  ``max``; sqlglot writes ``MAX(COALESCE(a, b), COALESCE(b, a))``, which repeats each argument n times).
- a comparison, ``IN`` or ``BETWEEN`` of safe numbers compares DOUBLEs: total.

ROUND, TRUNC, SQRT, LN, LOG, EXP, POWER and ``%`` stay DuckDB's: engines round halves differently
(PostgreSQL's ``round(double)`` to even, DuckDB's away from zero), PostgreSQL has no ``fmod`` nor DOUBLE
``log2``, and its ``exp``/``power`` raise on underflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from privdb.catalog.metadata import ColumnMeta
from privdb.sql.front.expr.render import compared_as_written, flush_below
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["mark"]

Span = tuple[float, float]

_BIGINT = 2.0**63
_TINY = 2.0**-1074  # the smallest positive double
_LIMIT = 2.0**-1072  # a least magnitude at or above this cannot round to 0 (with margin)
_MAX_EXTREME_ARGS = 8
_COMPARISONS = {"eq", "neq", "lt", "lte", "gt", "gte", "distinct", "not_distinct", "between", "in"}
_NUMERIC = {
    "neg", "add", "sub", "mul", "div", "intdiv", "abs", "sign", "floor", "ceil", "case", "coalesce", "nullif",
    "greatest", "least", "cast",
}  # fmt: skip
_STRUCTURAL = {"and", "or", "not", "is_null", "is_true", "is_false", "like"}  # total if their arguments are


@dataclass(frozen=True)
class _Num:
    """A safe number: ``span`` holds every non-NULL value (None: always NULL); every non-zero value has
    magnitude ≥ ``least`` (inf: never non-zero); ``integer``: every value is whole."""

    span: Span | None
    least: float
    integer: bool


_NULL = _Num(None, math.inf, True)


def mark(e: Expr) -> Expr:
    """``e`` with every node's ``portable`` flag recomputed (module doc); a flag only turns on where a rule
    proves the form total on every engine, or where its arguments became portable."""
    return _mark(e)[0]


def _mark(e: Expr) -> tuple[Expr, _Num | None]:
    marked = [_mark(a) for a in e.args]
    args = tuple(m[0] for m in marked)
    nums = [m[1] for m in marked]
    op = e.op
    if op == "literal":
        return e, _literal(e)
    if op == "column":
        return e, _column(e)
    if op == "clamp":
        return e, _clamp(e)
    if e.type in (Type.NUM, Type.NULL) and op in _NUMERIC:
        num = _number(e, args, nums)
        return replace(e, args=args, portable=num is not None), num
    portable = all(a.portable for a in args)
    if op in _COMPARISONS:
        numeric = [n for a, n in zip(args, nums, strict=True) if a.type is Type.NUM]
        safe = compared_as_written(*args) or all(n is not None for n in numeric)
        return replace(e, args=args, portable=portable and safe), None
    if op in _STRUCTURAL or op in ("case", "coalesce", "nullif"):  # of text, booleans or dates
        return replace(e, args=args, portable=portable), None
    if op == "cast" and args[0].type is e.type and e.value != "int" and e.type is not Type.TEXT:
        return replace(e, args=args, portable=portable), None
    return replace(e, args=args, portable=e.portable and portable), None


def _literal(e: Expr) -> _Num | None:
    if e.value is None:
        return _NULL
    if e.type is not Type.NUM:
        return None
    value = float(e.value)
    return _Num((value, value), abs(value) or math.inf, value.is_integer())


def _column(e: Expr) -> _Num | None:
    column: ColumnMeta = e.value
    if e.type is Type.NUM and e.portable and (column.storage or column.type) == "int":
        return _Num((-_BIGINT, _BIGINT), 1.0, True)
    return None


def _clamp(e: Expr) -> _Num | None:
    column: ColumnMeta = e.args[0].value
    if not e.args[0].portable:
        return None
    lower, upper = (float(x) for x in e.value)
    whole = (column.storage or column.type) in ("int", "bool") and lower.is_integer() and upper.is_integer()
    if whole:
        least = 1.0
    elif lower > 0 or upper < 0:
        least = min(abs(lower), abs(upper))
    else:  # values below the flush threshold are rendered as 0 (render.flush_below)
        least = max(flush_below(column, lower, upper), _TINY)
    return _Num((lower, upper), least, whole)


def _finite(*ends: float) -> Span | None:
    return (min(ends), max(ends)) if all(math.isfinite(x) for x in ends) else None


def _above(x: float) -> float | None:
    """``x`` as a least magnitude, rounded down; None when a result that small could round to 0."""
    if math.isinf(x):
        return x
    return math.nextafter(x, 0.0) if x >= _LIMIT else None


def _sum_least(a: _Num, b: _Num) -> float:
    """The least non-zero magnitude of ``a ± b`` (module doc)."""
    if math.isinf(a.least) or math.isinf(b.least):
        return min(a.least, b.least)
    if a.integer and b.integer:
        return 1.0
    _, exponent = math.frexp(min(a.least, b.least))  # m = f·2^exponent, 0.5 ≤ f < 1
    return max(math.ldexp(1.0, exponent - 1 - 52), _TINY)


def _number(e: Expr, args: tuple[Expr, ...], nums: list[_Num | None]) -> _Num | None:
    """The safe number ``e`` computes from safe operands, or None (not portable)."""
    op = e.op
    if op == "case":
        conditions, results = args[:-1:2], [*nums[1:-1:2], nums[-1]]
        if not all(c.portable for c in conditions):
            return None
        return _union(results)
    if op == "coalesce":
        return _union(nums)
    if op == "nullif":
        return nums[0] if nums[1] is not None else None
    if op in ("greatest", "least"):
        nested = any(n.op in ("greatest", "least") for a in args for n in a.walk())
        return None if nested or len(args) > _MAX_EXTREME_ARGS else _union(nums)
    if any(n is None for n in nums):
        return None
    ok = [n for n in nums if n is not None]
    if op == "cast":
        (a,) = ok
        if args[0].type is not Type.NUM:
            return None  # a boolean as a number: PostgreSQL has no boolean → DOUBLE
        if e.value == "int" and a.span is not None:
            inside = a.span[0] > -_BIGINT and a.span[1] < _BIGINT
            return a if a.integer and inside else None
        return a
    if any(n.span is None for n in ok):
        return _NULL  # an operand is always NULL: so is the result
    if len(ok) == 1:
        return _unary(op, ok[0])
    return _binary(op, ok[0], ok[1])


def _unary(op: str, a: _Num) -> _Num | None:
    assert a.span is not None
    lo, hi = a.span
    if op == "neg":
        return _Num((-hi, -lo), a.least, a.integer)
    if op == "abs":
        span = (lo, hi) if lo >= 0 else (-hi, -lo) if hi <= 0 else (0.0, max(-lo, hi))
        return _Num(span, a.least, a.integer)
    if op == "sign":
        return _Num((math.copysign(1.0, lo) if lo else 0.0, math.copysign(1.0, hi) if hi else 0.0), 1.0, True)
    if op in ("floor", "ceil"):
        f = math.floor if op == "floor" else math.ceil
        span = (float(f(lo)), float(f(hi)))
        return _Num(span, 1.0, True) if span[0] > -_BIGINT and span[1] < _BIGINT else None
    return None


def _binary(op: str, a: _Num, b: _Num) -> _Num | None:
    assert a.span is not None and b.span is not None
    (la, ua), (lb, ub) = a.span, b.span
    integer = a.integer and b.integer
    if op in ("add", "sub"):
        span = _finite(la + lb, ua + ub) if op == "add" else _finite(la - ub, ua - lb)
        return None if span is None else _Num(span, _sum_least(a, b), integer)
    if op == "mul":
        span = _finite(la * lb, la * ub, ua * lb, ua * ub)
        least = _above(a.least * b.least)
        return None if span is None or least is None else _Num(span, least, integer)
    if op in ("div", "intdiv"):
        if lb <= 0.0 <= ub:
            return None  # a divisor that can be 0 (PostgreSQL raises)
        span = _finite(la / lb, la / ub, ua / lb, ua / ub)
        least = _above(a.least / max(abs(lb), abs(ub)))
        if span is None or least is None:
            return None
        if op == "div":
            return _Num(span, least, False)
        return _unary("floor", _Num(span, least, False))
    return None


def _union(nums: list[_Num | None]) -> _Num | None:
    if any(n is None for n in nums):
        return None
    spans = [n.span for n in nums if n is not None and n.span is not None]
    if not spans:
        return _NULL
    ends = [x for s in spans for x in s]
    least = min(n.least for n in nums if n is not None)
    integer = all(n.integer for n in nums if n is not None and n.span is not None)
    return _Num((min(ends), max(ends)), least, integer)
