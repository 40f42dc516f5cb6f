"""The expression checker's core: the allow-list text, refusals, typing and coercion, and the leaves.

``CheckerCore`` holds what every family of rules needs (check_conditions, check_choices, check_numbers,
check_text, check_dates): checking a node to a wanted type, the shared-type rule of comparisons and
branches, literal arguments read as constants, a text column stored as numbers read as its number, and
the leaves of the tree (columns, literals, NULL, negation). Which rule a node gets is decided in check.py,
which joins the families into the one ``Checker``; this module imports none of them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import duckdb
from sqlglot import exp

from privdb.catalog.metadata import TableMeta
from privdb.errors import PrivdbError, UnsupportedQuery
from privdb.sql.front.expr.render import column_expr
from privdb.sql.front.expr.types import (
    MAX_LITERAL_LENGTH,
    MAX_NODES,
    MAX_PATTERN_LENGTH,
    Expr,
    Type,
    stored_number,
)

__all__ = ["ALLOWED", "CheckerCore", "duckdb_accepts", "result_type"]

ALLOWED = (
    "columns, literals, = <> < <= > >=, IS [NOT] DISTINCT FROM, AND/OR/NOT, IS [NOT] NULL/TRUE/FALSE, "
    "IN (literals), BETWEEN, LIKE/ILIKE 'pattern', CASE, IF, COALESCE, NULLIF, GREATEST, LEAST; "
    "numbers: + - * / % //, ABS, SIGN, ROUND(x[, digits]), FLOOR, CEIL, TRUNC, SQRT, LN, LOG, LOG10, "
    "LOG2, EXP, POWER, ISNAN, ISINF, ISFINITE; text: LOWER, UPPER, LENGTH, TRIM, LTRIM, RTRIM, "
    "SUBSTRING(x, start[, length]), LEFT, RIGHT, CONCAT, ||, REPLACE, LPAD, RPAD, STARTS_WITH, ENDS_WITH, "
    "CONTAINS, STRPOS, MD5, REGEXP_MATCHES(x, 'pattern'); dates: EXTRACT, DATE_PART, YEAR, MONTH, DAY, "
    "HOUR, MINUTE, SECOND, QUARTER, WEEK, DAYOFWEEK, DAYOFYEAR, DATE_TRUNC, STRPTIME(x, 'format'), "
    "DATE '…'; CAST/TRY_CAST to number, integer, text, boolean or date"
)


def _refuse(where: str, node: Any, why: str = "") -> UnsupportedQuery:
    text = node.sql(dialect="duckdb")
    text = text if len(text) <= 80 else text[:77] + "..."
    reason = why or "is not in privdb's expression language (each allowed form cannot fail on any row)"
    return UnsupportedQuery(f"{where}: {text} {reason}; allowed: {ALLOWED}")


class CheckerCore:
    """What every rule of the checker uses; ``check`` walks the tree, refusing any node for which
    ``dispatch`` has no rule (here none: the full checker, check.Checker, gives every family's)."""

    def __init__(self, table: TableMeta, where: str) -> None:
        self.table = table
        self.where = where
        self.nodes = 0

    # ---- helpers
    def refuse(self, node: Any, why: str = "") -> UnsupportedQuery:
        return _refuse(self.where, node, why)

    def make(self, op: str, type_: Type, args: tuple[Expr, ...], node: Any, **kw: Any) -> Expr:
        portable = kw.pop("portable", False) and all(a.portable for a in args)
        return Expr(op, type_, args, portable=portable, source=node.sql(dialect="duckdb"), **kw)

    def literal_text(self, node: exp.Expression | None, what: str, limit: int = MAX_PATTERN_LENGTH) -> str:
        if not isinstance(node, exp.Literal) or not node.is_string:
            raise UnsupportedQuery(f"{self.where}: {what} must be a text literal ('…')")
        text = str(node.this)
        if len(text) > limit:
            raise UnsupportedQuery(f"{self.where}: {what} is longer than {limit} characters")
        return text

    def literal_int(self, node: exp.Expression | None, what: str, lo: int, hi: int) -> int:
        sign = 1
        while isinstance(node, exp.Paren):  # (-3) is a literal too (a bound parameter is written so)
            node = node.this
        if isinstance(node, exp.Neg):
            sign, node = -1, node.this
        if not isinstance(node, exp.Literal) or node.is_string or not str(node.this).isdigit():
            raise UnsupportedQuery(f"{self.where}: {what} must be a whole-number literal")
        value = sign * int(node.this)
        if not lo <= value <= hi:
            raise UnsupportedQuery(f"{self.where}: {what} must be between {lo} and {hi}, got {value}")
        return value

    def as_number(self, node: exp.Expression) -> Expr | None:
        """A bare text column stored as numbers (:func:`stored_number`), read as its number; else None."""
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return None
        try:
            column = self.table.qualified(node.table or None, node.name)
        except PrivdbError:
            return None
        if not stored_number(column):
            return None
        return column_expr(replace(column, type="float"), node.sql())

    def typed(self, node: exp.Expression, want: Type) -> Expr:
        """``node`` checked and of type ``want`` (a NULL literal fits any type; a text literal is read as a
        number or a date where one is wanted, if it is one; a text column stored as numbers as its number
        where a number or a condition is wanted, non-zero being true as the engine reads it)."""
        if want in (Type.NUM, Type.DATE) and isinstance(node, exp.Literal) and node.is_string:
            return self.coerce(node, want)
        if want in (Type.NUM, Type.BOOL) and (number := self.as_number(node)) is not None:
            if want is Type.NUM:
                return number
            zero = Expr("literal", Type.NUM, value=0.0, double=False, source="0")
            return self.make("neq", Type.BOOL, (number, zero), node, portable=number.portable)
        e = self.check(node)
        if e.type not in (want, Type.NULL):
            raise self.refuse(node, f"is {e.type.value}, where {want.value} is needed")
        return e

    def coerce(self, node: exp.Literal, want: Type) -> Expr:
        text = str(node.this)
        if want is Type.NUM:
            try:
                value = float(text)
            except ValueError:
                raise self.refuse(
                    node, "is text, where a number is needed; compare numbers with numbers"
                ) from None
            if not math.isfinite(value):
                raise self.refuse(node, "is not a finite number")
            return Expr("literal", Type.NUM, value=value, double=False, source=node.sql())
        return Expr("literal", Type.DATE, value=self.date(node, text), double=False, source=node.sql())

    def date(self, node: exp.Expression, text: str) -> dt.datetime:
        try:
            value = dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise self.refuse(
                node, "is not a date or timestamp (write 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS')"
            ) from None
        return value.replace(tzinfo=None)

    def same_type(self, nodes: list[exp.Expression], node: Any) -> tuple[Expr, ...]:
        """Operands that must share one type (comparisons, IN, CASE branches, COALESCE, …). Text columns
        stored as numbers meet numbers as numbers (:func:`stored_number`)."""
        stored = [self.as_number(n) is not None for n in nodes]
        if any(stored):
            others = {self.type_of(n) for n, number in zip(nodes, stored, strict=True) if not number}
            for want in (Type.NUM, Type.BOOL):  # a number, or a condition (non-zero is true)
                if want in others:
                    return tuple(self.typed(n, want) for n in nodes)
        return self._same_type(nodes, node)

    def type_of(self, node: exp.Expression) -> Type | None:
        """``node``'s type, checked as a trial (the count of parts is restored); None if refused."""
        while isinstance(node, exp.Paren | exp.Neg):
            node = node.this
        if isinstance(node, exp.Literal):
            return Type.TEXT if node.is_string else Type.NUM
        counted = self.nodes
        try:
            return self.check(node).type
        except PrivdbError:
            return None
        finally:
            self.nodes = counted

    def _same_type(self, nodes: list[exp.Expression], node: Any) -> tuple[Expr, ...]:
        first = next((n for n in nodes if not (isinstance(n, exp.Literal) and n.is_string)), None)
        anchor = self.check(first) if first is not None else None
        want = anchor.type if anchor is not None and anchor.type is not Type.NULL else None
        if want is None:
            typed = [self.check(n) for n in nodes]
            kinds = {e.type for e in typed} - {Type.NULL}
            if len(kinds) > 1:
                raise self.refuse(node, "mixes types")
            return tuple(typed)
        out = []
        for n in nodes:
            out.append(anchor if n is first and anchor is not None else self.typed(n, want))
        return tuple(out)

    # ---- the grammar
    def check(self, node: exp.Expression) -> Expr:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise UnsupportedQuery(
                f"{self.where}: the expression has more than {MAX_NODES} parts; split the question"
            )
        while isinstance(node, exp.Paren):
            node = node.this
        handler = self.dispatch(node)
        if handler is None:
            raise self.refuse(node)
        return handler(node)

    def dispatch(self, node: exp.Expression) -> Callable[[Any], Expr] | None:
        """The rule that checks ``node``, or None to refuse it."""
        return None

    # ---- leaves
    def column(self, node: exp.Column) -> Expr:
        if isinstance(node.this, exp.Star):
            raise self.refuse(node, "is a star; name columns")
        if node.args.get("db") or node.args.get("catalog"):
            raise self.refuse(node, "names a schema; write table.column or column")
        return column_expr(self.table.qualified(node.table or None, node.name), node.sql())

    def literal(self, node: exp.Literal) -> Expr:
        if node.is_string:
            text = str(node.this)
            if len(text) > MAX_LITERAL_LENGTH:
                raise self.refuse(node, f"is longer than {MAX_LITERAL_LENGTH} characters")
            return Expr("literal", Type.TEXT, value=text, double=False, source=node.sql())
        return self.coerce(exp.Literal.string(str(node.this)), Type.NUM)

    def boolean(self, node: exp.Boolean) -> Expr:
        return Expr("literal", Type.BOOL, value=bool(node.this), double=False, source=node.sql())

    def null(self, node: exp.Null) -> Expr:
        return Expr("literal", Type.NULL, value=None, double=False, source="NULL")

    def neg(self, node: exp.Neg) -> Expr:
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            value = self.literal(inner).value
            return Expr("literal", Type.NUM, value=-value, double=False, source=node.sql())
        return self.make("neg", Type.NUM, (self.typed(inner, Type.NUM),), node)


def result_type(args: tuple[Expr, ...]) -> Type:
    """The type of a choice among ``args`` (CASE's branches, COALESCE, …): the first that is not NULL."""
    kinds = [a.type for a in args if a.type is not Type.NULL]
    return kinds[0] if kinds else Type.NULL


_SCRATCH: dict[str, bool] = {}


def duckdb_accepts(sql: str, literal: str, where: str, what: str) -> None:
    """Refuse a pattern or format DuckDB would reject, by asking a scratch in-memory DuckDB that holds no
    data (the answer depends on the literal only)."""
    key = sql + "\0" + literal
    ok = _SCRATCH.get(key)
    if ok is None:
        con = duckdb.connect(":memory:")
        try:
            con.execute(sql, [literal]).fetchall()
            ok = True
        except duckdb.Error:
            ok = False
        finally:
            con.close()
        if len(_SCRATCH) < 10_000:
            _SCRATCH[key] = ok
    if not ok:
        raise UnsupportedQuery(f"{where}: {literal!r} is not a valid {what}")
