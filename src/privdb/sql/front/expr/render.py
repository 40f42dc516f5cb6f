"""Render a checked expression as DuckDB SQL, in forms that are total: no row can make them raise.

Why each form cannot fail (docs/proofs/sql.md, "Outcomes"):

- numbers are computed in DOUBLE (IEEE 754: overflow gives ±inf, 0/0 and ln(−1) give NaN, never an
  error); a column or an integer result is cast to DOUBLE before any arithmetic, so no INTEGER, DECIMAL or
  HUGEINT operation (which can overflow) is ever emitted. ``%`` is ``fmod`` (NaN for a zero divisor) and
  ``//`` is ``floor(a / b)``; a cast to an integer is ``TRY_CAST`` (NULL for NaN, ±inf, out of range);
- a comparison of a column with a literal is rendered as written (the engine casts the constant once, at
  bind time); every other comparison compares DOUBLEs, bounded texts or timestamps;
- text read by a function is cut to the column's ``max_length`` first, and every function that can make
  text longer is cut to ``MAX_RESULT_LENGTH``: the work per row is bounded by public constants;
- conversions from text (to numbers, dates, booleans) are ``TRY_CAST``/``try_strptime``: total functions
  that give NULL for text that does not convert (DuckDB only; other engines refuse them before reading);
- patterns and formats are literals, checked before anything is read (check.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta
from privdb.sql.front.expr.types import DEFAULT_MAX_LENGTH, MAX_RESULT_LENGTH, Expr, Type, column_type

__all__ = [
    "clamp_sql",
    "column_expr",
    "column_sql",
    "compared_as_written",
    "flush_below",
    "render",
    "render_num",
    "render_text",
]


def _literal(e: Expr) -> str:
    value = e.value
    if e.type is Type.NULL or value is None:
        return "NULL"
    if e.type is Type.BOOL:
        return "TRUE" if value else "FALSE"
    if e.type is Type.NUM:
        number = float(value)
        if number.is_integer() and abs(number) < 2**53:
            return str(int(number))
        return repr(number)
    if e.type is Type.DATE:
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    return "'" + str(value).replace("'", "''") + "'"


def column_expr(column: ColumnMeta, source: str = "") -> Expr:
    """A bare column as a value of its type in the language. Its rendering depends on how the engine
    stores it: a numeric category stored as text or a date stored otherwise is read with ``TRY_CAST``
    (DuckDB only, so not portable); text stored as anything else is cast to VARCHAR."""
    kind = column_type(column)
    storage = column.storage or column.type
    converted = (kind is Type.NUM and storage not in ("int", "float", "bool")) or (
        kind is Type.DATE and storage != "date"
    )
    return Expr(
        "column", kind, value=column, double=converted and kind is Type.NUM, portable=not converted,
        source=source or column.name,
    )  # fmt: skip


def _column(e: Expr) -> str:
    column = e.value
    name = quote(column.name)
    if not e.portable:  # converted with TRY_CAST (column_expr)
        return f"TRY_CAST({name} AS {'DOUBLE' if e.type is Type.NUM else 'TIMESTAMP'})"
    if e.type is Type.TEXT and (column.storage or column.type) != "text":
        return f"CAST({name} AS VARCHAR)"
    return name


def column_sql(column: ColumnMeta) -> str:
    """A bare column as a value of its type in the language (scalar, whatever the engine stores)."""
    return _column(column_expr(column))


def render(e: Expr) -> str:
    """The expression as DuckDB SQL (other dialects: transpiled by sqlglot, portable forms only)."""
    if e.op == "column":
        return _column(e)
    if e.op == "literal":
        return _literal(e)
    return _RENDER[e.op](e)


def render_num(e: Expr) -> str:
    """A number as a DOUBLE."""
    if e.is_literal and e.type is Type.NUM:
        return f"CAST({_literal(e)} AS DOUBLE)"
    sql = render(e)
    # a boolean (a comparison, ISNAN, …) is never a DOUBLE, whatever its flag says
    return sql if e.double and e.type is Type.NUM else f"CAST({sql} AS DOUBLE)"


def render_text(e: Expr) -> str:
    """Text as a function reads it: a column cut to its ``max_length``; other text is bounded already."""
    sql = render(e)
    if e.is_column:
        length = e.value.max_length or DEFAULT_MAX_LENGTH
        return f"SUBSTRING({sql}, 1, {length})"
    return sql


def _operand(e: Expr) -> str:
    """A value in a comparison, CASE branch or COALESCE: numbers as DOUBLE, texts bounded."""
    if e.type is Type.NUM:
        return render_num(e)
    if e.type is Type.TEXT:
        return render_text(e)
    return render(e)


def compared_as_written(*args: Expr) -> bool:
    """Columns and literals only: compared as written (the engine converts the constant at bind)."""
    return all(a.is_column or a.is_literal for a in args) and sum(a.is_column for a in args) <= 1


def _compared(*args: Expr) -> list[str]:
    return [render(a) for a in args] if compared_as_written(*args) else [_operand(a) for a in args]


_SYMBOLS = {"eq": "=", "neq": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_DISTINCT = {"distinct": "IS DISTINCT FROM", "not_distinct": "IS NOT DISTINCT FROM"}
_ARITHMETIC = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_NUM_FUNCTIONS = {
    "abs": "abs",
    "sign": "sign",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "sqrt": "sqrt",
    "ln": "ln",
    "log10": "log10",
    "log2": "log2",
    "exp": "exp",
    "isnan": "isnan",
    "isinf": "isinf",
    "isfinite": "isfinite",
}
_TEXT_FUNCTIONS = {"lower": "lower", "upper": "upper", "trim": "trim", "ltrim": "ltrim", "rtrim": "rtrim"}


def _cut(sql: str) -> str:
    return f"SUBSTRING({sql}, 1, {MAX_RESULT_LENGTH})"


def _case(e: Expr) -> str:
    *pairs, default = e.args
    whens = "".join(
        f" WHEN {render(pairs[i])} THEN {_operand(pairs[i + 1])}" for i in range(0, len(pairs), 2)
    )
    return f"CASE{whens} ELSE {_operand(default)} END"


def _cast(e: Expr) -> str:
    (x,) = e.args
    target = e.value
    if target == "text":
        return render_text(x) if x.type is Type.TEXT else f"CAST({render(x)} AS VARCHAR)"
    if target == "double":
        return f"TRY_CAST({render_text(x)} AS DOUBLE)" if x.type is Type.TEXT else render_num(x)
    if target == "int":
        if x.type is Type.TEXT:
            return f"TRY_CAST({render_text(x)} AS BIGINT)"
        # TRY_CAST is total: NULL for NaN, ±inf and values beyond BIGINT (the operand appears once, so
        # nested casts stay linear in size)
        return f"TRY_CAST({render_num(x)} AS BIGINT)"
    if target == "bool":
        if x.type is Type.TEXT:
            return f"TRY_CAST({render_text(x)} AS BOOLEAN)"
        return render(x) if x.type is Type.BOOL else f"({render_num(x)} <> 0)"
    # date
    return f"TRY_CAST({render_text(x)} AS TIMESTAMP)" if x.type is Type.TEXT else render(x)


def clamp_sql(value: str, lo: float, hi: float, flush: float = 0.0, stored: str | None = None) -> str:
    """``value`` (SQL of a number) pinned to ``[lo, hi]``: NULL stays NULL (DuckDB's LEAST/GREATEST would
    skip it); DuckDB orders NaN above every number, so NaN gives ``hi``, and ±inf give the ends. The ends
    are DOUBLE literals (a DECIMAL literal beside a DOUBLE value would be DOUBLE anyway). With ``flush``,
    magnitudes below it give 0 (``flush_below``).

    ``stored``: the column as the engine stores it, when ``value`` is its conversion to DOUBLE. The bounds
    are then compared with the stored value and the conversion runs only on values inside them: a
    PostgreSQL NUMERIC of 1e400 makes ``CAST(… AS DOUBLE PRECISION)`` raise, so converting first would make
    the query fail exactly when such a row exists (issue 25's class). PostgreSQL reads the literals as
    NUMERIC there, so no comparison can overflow; NaN (above every number in DuckDB and PostgreSQL) and
    ±Infinity give the ends as before."""
    low, high = repr(float(lo)), repr(float(hi))
    test = value if stored is None else stored
    tiny = f" WHEN {test} > -{flush!r} AND {test} < {flush!r} THEN 0.0" if flush else ""
    return f"CASE WHEN {test} < {low} THEN {low} WHEN {test} > {high} THEN {high}{tiny} ELSE {value} END"


FLUSH = 2.0**-200  # relative to a column's bounds: magnitudes below count as 0 in a computed argument


def flush_below(column: ColumnMeta, lo: float, hi: float) -> float:
    """Magnitudes below which a clamped value of ``column`` is rendered as 0 (0: none). Only for a
    non-integer column whose bounds hold 0, at ``FLUSH`` of its largest bound: a product or quotient of such
    values then cannot underflow to 0, which PostgreSQL would raise (portable.py). The error is at most
    ``2⁻²⁰⁰`` of the bound per row, far below the sum's own rounding."""
    if (column.storage or column.type) in ("int", "bool") or lo > 0 or hi < 0:
        return 0.0
    threshold = max(abs(lo), abs(hi)) * FLUSH
    return threshold if threshold >= sys.float_info.min else 0.0


def _clamp(e: Expr) -> str:
    """A column pinned to public bounds ``e.value = (lo, hi)`` (bounds.py); tiny magnitudes flushed to 0."""
    lo, hi = (float(x) for x in e.value)
    column = e.args[0]
    stored = _column(column) if column.op == "column" and column.portable else None  # stored as a number
    return clamp_sql(render_num(column), lo, hi, flush_below(column.value, lo, hi), stored)


def _in(e: Expr) -> str:
    x, *values = e.args
    lhs = render(x) if x.is_column else _operand(x)
    return f"({lhs} IN ({', '.join(render(v) for v in values)}))"


def _binary(symbol: str) -> Callable[[Expr], str]:
    def rendered(e: Expr) -> str:
        a, b = _compared(*e.args)
        return f"({a} {symbol} {b})"

    return rendered


def _arithmetic(symbol: str) -> Callable[[Expr], str]:
    return lambda e: f"({render_num(e.args[0])} {symbol} {render_num(e.args[1])})"


def _num_function(name: str) -> Callable[[Expr], str]:
    return lambda e: f"{name}({render_num(e.args[0])})"


def _text_function(name: str) -> Callable[[Expr], str]:
    return lambda e: f"{name}({render_text(e.args[0])})"


_RENDER: dict[str, Callable[[Expr], str]] = {
    **{op: _binary(sym) for op, sym in (_SYMBOLS | _DISTINCT).items()},
    "between": lambda e: "({} BETWEEN {} AND {})".format(*_compared(*e.args)),
    "in": _in,
    "like": lambda e: f"({render_text(e.args[0])} LIKE {render(e.args[1])})",
    "ilike": lambda e: f"({render_text(e.args[0])} ILIKE {render(e.args[1])})",
    "regexp": lambda e: f"regexp_matches({render_text(e.args[0])}, {render(e.args[1])})",
    "is_null": lambda e: f"({render(e.args[0])} IS NULL)",
    "is_true": lambda e: f"({render(e.args[0])} IS TRUE)",
    "is_false": lambda e: f"({render(e.args[0])} IS FALSE)",
    "and": lambda e: f"({render(e.args[0])} AND {render(e.args[1])})",
    "or": lambda e: f"({render(e.args[0])} OR {render(e.args[1])})",
    "not": lambda e: f"(NOT {render(e.args[0])})",
    **{op: _arithmetic(sym) for op, sym in _ARITHMETIC.items()},
    "neg": lambda e: f"(- {render_num(e.args[0])})",
    "mod": lambda e: f"fmod({render_num(e.args[0])}, {render_num(e.args[1])})",
    "intdiv": lambda e: f"floor({render_num(e.args[0])} / {render_num(e.args[1])})",
    "pow": lambda e: f"pow({render_num(e.args[0])}, {render_num(e.args[1])})",
    "round": lambda e: f"round({render_num(e.args[0])}, {int(e.value)})",
    **{op: _num_function(fn) for op, fn in _NUM_FUNCTIONS.items()},
    **{op: _text_function(fn) for op, fn in _TEXT_FUNCTIONS.items()},
    "length": lambda e: f"length({render_text(e.args[0])})",
    "substring": lambda e: (
        f"substring({render_text(e.args[0])}, {e.value[0]}"
        + (f", {e.value[1]})" if e.value[1] is not None else ")")
    ),
    "left": lambda e: f"left({render_text(e.args[0])}, {e.value})",
    "right": lambda e: f"right({render_text(e.args[0])}, {e.value})",
    "concat": lambda e: _cut(" || ".join(f"COALESCE({render_text(a)}, '')" for a in e.args)),
    "dpipe": lambda e: _cut(" || ".join(render_text(a) for a in e.args)),
    "replace": lambda e: _cut(f"replace({render_text(e.args[0])}, {render(e.args[1])}, {render(e.args[2])})"),
    "lpad": lambda e: f"lpad({render_text(e.args[0])}, {e.value}, {render(e.args[1])})",
    "rpad": lambda e: f"rpad({render_text(e.args[0])}, {e.value}, {render(e.args[1])})",
    "starts_with": lambda e: f"starts_with({render_text(e.args[0])}, {render(e.args[1])})",
    "ends_with": lambda e: f"ends_with({render_text(e.args[0])}, {render(e.args[1])})",
    "contains": lambda e: f"contains({render_text(e.args[0])}, {render(e.args[1])})",
    "strpos": lambda e: f"strpos({render_text(e.args[0])}, {render(e.args[1])})",
    "md5": lambda e: f"md5({render_text(e.args[0])})",
    "date_part": lambda e: f"date_part('{e.value}', {render(e.args[0])})",
    "date_trunc": lambda e: f"CAST(date_trunc('{e.value}', {render(e.args[0])}) AS TIMESTAMP)",
    "strptime": lambda e: f"try_strptime({render_text(e.args[0])}, {render(e.args[1])})",
    "case": _case,
    "coalesce": lambda e: f"COALESCE({', '.join(_operand(a) for a in e.args)})",
    "nullif": lambda e: f"NULLIF({_operand(e.args[0])}, {_operand(e.args[1])})",
    "greatest": lambda e: f"greatest({', '.join(_operand(a) for a in e.args)})",
    "least": lambda e: f"least({', '.join(_operand(a) for a in e.args)})",
    "cast": _cast,
    "clamp": _clamp,
}
