"""Check an analyst's expression against the allow-list and the table's metadata; build the typed tree.

Anything not listed here is refused before the data is read (``unsupported_query``, free), with a message
that names what is allowed. Literal arguments that could make a function fail (LIKE patterns, regular
expressions, date formats and parts, lengths) are checked here, so rendering never meets a bad one.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import duckdb
from sqlglot import exp

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import PrivdbError, UnsupportedQuery
from privdb.sql.front.expr.portable import mark
from privdb.sql.front.expr.render import column_expr, compared_as_written
from privdb.sql.front.expr.types import (
    MAX_IN_LIST,
    MAX_LITERAL_LENGTH,
    MAX_NODES,
    MAX_PATTERN_LENGTH,
    MAX_RESULT_LENGTH,
    Expr,
    Type,
    column_type,
)

__all__ = ["ALLOWED", "Checker", "check", "stored_number"]

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

_DATE_PARTS = {
    "year", "month", "day", "hour", "minute", "second", "quarter", "week", "dow", "dayofweek", "doy",
    "dayofyear", "decade", "century", "isodow", "isoyear", "epoch",
}  # fmt: skip
_TRUNC_PARTS = {"year", "quarter", "month", "week", "day", "hour", "minute", "second", "decade", "century"}
_CAST_TARGETS = {
    **dict.fromkeys(("VARCHAR", "TEXT", "CHAR", "NCHAR", "NVARCHAR", "BPCHAR", "STRING"), "text"),
    **dict.fromkeys(("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "BIGDECIMAL"), "double"),
    **dict.fromkeys(
        (
            "INT",
            "TINYINT",
            "SMALLINT",
            "MEDIUMINT",
            "BIGINT",
            "HUGEINT",
            "UBIGINT",
            "UINT",
            "USMALLINT",
            "UTINYINT",
            "UHUGEINT",
        ),
        "int",
    ),
    "BOOLEAN": "bool",
    **dict.fromkeys(("DATE", "TIMESTAMP", "DATETIME", "TIMESTAMPNTZ"), "date"),
}
_CAST_TYPE = {"text": Type.TEXT, "double": Type.NUM, "int": Type.NUM, "bool": Type.BOOL, "date": Type.DATE}
_COMPARISONS: dict[type[Any], str] = {
    exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt", exp.GTE: "gte",
    exp.NullSafeNEQ: "distinct", exp.NullSafeEQ: "not_distinct",
}  # fmt: skip
_ARITHMETIC: dict[type[Any], str] = {
    exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div", exp.Mod: "mod", exp.IntDiv: "intdiv",
}  # fmt: skip
_NUM_UNARY: dict[type[Any], str] = {
    exp.Abs: "abs", exp.Sign: "sign", exp.Floor: "floor", exp.Ceil: "ceil", exp.Sqrt: "sqrt", exp.Ln: "ln",
    exp.Exp: "exp", exp.IsNan: "isnan", exp.IsInf: "isinf",
}  # fmt: skip
_TEXT_UNARY: dict[type[Any], str] = {exp.Lower: "lower", exp.Upper: "upper", exp.MD5: "md5"}
_DATE_FUNCTIONS: dict[type[Any], str] = {
    exp.Year: "year", exp.Month: "month", exp.Day: "day", exp.Hour: "hour", exp.Minute: "minute",
    exp.Second: "second", exp.Quarter: "quarter", exp.Week: "week", exp.DayOfWeek: "dow",
    exp.DayOfYear: "doy",
}  # fmt: skip
_ANONYMOUS_NUM = {
    "ISFINITE": "isfinite",
    "ISNAN": "isnan",
    "ISINF": "isinf",
    "LOG10": "log10",
    "LOG2": "log2",
}
_BOOL_RESULT = {"isnan", "isinf", "isfinite"}


def stored_number(column: ColumnMeta) -> bool:
    """A column declared text whose engine stores numbers (SmartNoise's ``type: string`` over a CSV of codes,
    PUMS' sex 0/1): where it meets a number, or stands as a condition, it is read as the number it stores,
    as plain SQL on that engine reads it. Nothing can fail: the engine holds numbers, no conversion runs."""
    return column_type(column) is Type.TEXT and column.storage in ("int", "float")


def _refuse(where: str, node: Any, why: str = "") -> UnsupportedQuery:
    text = node.sql(dialect="duckdb")
    text = text if len(text) <= 80 else text[:77] + "..."
    reason = why or "is not in privdb's expression language (each allowed form cannot fail on any row)"
    return UnsupportedQuery(f"{where}: {text} {reason}; allowed: {ALLOWED}")


class Checker:
    """One expression's checker: ``check`` walks the tree, refusing any node its ``dispatch`` has no rule for.
    The plain-SELECT check (privdb.sql.public.language) extends it with the forms that only a plain SELECT
    has (subqueries, aggregates) and leaves every other rule as it is."""

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
        kind = type(node)
        if kind in _COMPARISONS:
            return self.comparison
        if kind in _ARITHMETIC:
            return self.arithmetic
        if kind in _NUM_UNARY:
            return self.num_unary
        if kind in _TEXT_UNARY:
            return self.text_unary
        if kind in _DATE_FUNCTIONS:
            return self.date_function
        table: dict[type[exp.Expression], Callable[[Any], Expr]] = {
            exp.Column: self.column, exp.Literal: self.literal, exp.Boolean: self.boolean,
            exp.Null: self.null, exp.Neg: self.neg, exp.And: self.logic, exp.Or: self.logic,
            exp.Not: self.not_, exp.Is: self.is_, exp.In: self.in_, exp.Between: self.between,
            exp.Like: self.like, exp.ILike: self.like, exp.RegexpLike: self.regexp, exp.Case: self.case,
            exp.If: self.if_, exp.Coalesce: self.coalesce, exp.Nullif: self.nullif,
            exp.Greatest: self.extreme, exp.Least: self.extreme, exp.Round: self.round,
            exp.Trunc: self.trunc, exp.Log: self.log, exp.Pow: self.pow, exp.Length: self.length,
            exp.Trim: self.trim, exp.Substring: self.substring, exp.Left: self.left_right,
            exp.Right: self.left_right, exp.Concat: self.concat, exp.DPipe: self.dpipe,
            exp.Replace: self.replace, exp.Pad: self.pad, exp.StartsWith: self.text_test,
            exp.EndsWith: self.text_test, exp.Contains: self.text_test, exp.StrPosition: self.strpos,
            exp.Extract: self.extract, exp.TimestampTrunc: self.date_trunc, exp.DateTrunc: self.date_trunc,
            exp.StrToTime: self.strptime, exp.Cast: self.cast, exp.TryCast: self.cast,
            exp.Anonymous: self.anonymous,
        }  # fmt: skip
        return table.get(type(node))

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

    def comparison(self, node: Any) -> Expr:
        args = self.same_type([node.this, node.expression], node)
        return self.make(_COMPARISONS[type(node)], Type.BOOL, args, node, portable=_portable(args))

    def logic(self, node: Any) -> Expr:
        args = (self.typed(node.this, Type.BOOL), self.typed(node.expression, Type.BOOL))
        return self.make("and" if isinstance(node, exp.And) else "or", Type.BOOL, args, node, portable=True)

    def not_(self, node: exp.Not) -> Expr:
        return self.make("not", Type.BOOL, (self.typed(node.this, Type.BOOL),), node, portable=True)

    def is_(self, node: exp.Is) -> Expr:
        target = node.expression
        x = self.check(node.this)
        if isinstance(target, exp.Null):
            return self.make("is_null", Type.BOOL, (x,), node, portable=True)
        if isinstance(target, exp.Boolean) and x.type in (Type.BOOL, Type.NULL):
            op = "is_true" if target.this else "is_false"
            return self.make(op, Type.BOOL, (x,), node, portable=True)
        raise self.refuse(node)

    def in_(self, node: exp.In) -> Expr:
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise self.refuse(node, "is not a list of literals")
        values = list(node.expressions)
        if not values or len(values) > MAX_IN_LIST:
            raise self.refuse(node, f"must list 1 to {MAX_IN_LIST} values")
        for v in values:
            inner = v.this if isinstance(v, exp.Neg) else v
            if not isinstance(inner, exp.Literal | exp.Null | exp.Boolean) and not (
                isinstance(v, exp.Cast) and isinstance(v.this, exp.Literal)
            ):
                raise self.refuse(node, "lists something other than literals")
        args = self.same_type([node.this, *values], node)
        return self.make("in", Type.BOOL, args, node, portable=_portable(args))

    def between(self, node: exp.Between) -> Expr:
        args = self.same_type([node.this, node.args["low"], node.args["high"]], node)
        return self.make("between", Type.BOOL, args, node, portable=_portable(args))

    def like(self, node: exp.Like | exp.ILike) -> Expr:
        pattern = self.literal_text(node.expression, "a LIKE pattern")
        if "\\" in pattern:
            raise self.refuse(node, "has a backslash in its pattern (LIKE has no escape character here)")
        x = self.typed(node.this, Type.TEXT)
        pat = Expr("literal", Type.TEXT, value=pattern, double=False)
        op = "like" if isinstance(node, exp.Like) else "ilike"
        return self.make(op, Type.BOOL, (x, pat), node, portable=op == "like")

    def regexp(self, node: exp.RegexpLike) -> Expr:
        pattern = self.literal_text(node.expression, "a regular expression")
        if node.args.get("flag") is not None:
            raise self.refuse(node, "takes no flags here")
        _duckdb_accepts("SELECT regexp_matches('', ?)", pattern, self.where, "regular expression")
        x = self.typed(node.this, Type.TEXT)
        return self.make("regexp", Type.BOOL, (x, Expr("literal", Type.TEXT, value=pattern)), node)

    def case(self, node: exp.Case) -> Expr:
        subject = node.this
        conditions: list[Expr] = []
        results: list[exp.Expression] = []
        for branch in node.args.get("ifs") or []:
            cond = branch.this
            if subject is not None:
                cond = exp.EQ(this=subject.copy(), expression=cond)
            conditions.append(self.typed(cond, Type.BOOL))
            results.append(branch.args["true"])
        default = node.args.get("default") or exp.Null()
        typed = self.same_type([*results, default], node)
        args: list[Expr] = []
        for cond, result in zip(conditions, typed[:-1], strict=True):
            args += [cond, result]
        kind = _result_type(typed)
        return self.make("case", kind, (*args, typed[-1]), node, portable=kind is not Type.NUM)

    def if_(self, node: exp.If) -> Expr:
        cond = self.typed(node.this, Type.BOOL)
        a, b = self.same_type([node.args["true"], node.args.get("false") or exp.Null()], node)
        kind = _result_type((a, b))
        return self.make("case", kind, (cond, a, b), node, portable=kind is not Type.NUM)

    def coalesce(self, node: exp.Coalesce) -> Expr:
        args = self.same_type([node.this, *node.expressions], node)
        return self.make(
            "coalesce", _result_type(args), args, node, portable=_result_type(args) is not Type.NUM
        )

    def nullif(self, node: exp.Nullif) -> Expr:
        args = self.same_type([node.this, node.expression], node)
        return self.make(
            "nullif", _result_type(args), args, node, portable=_result_type(args) is not Type.NUM
        )

    def extreme(self, node: exp.Greatest | exp.Least) -> Expr:
        args = self.same_type([node.this, *node.expressions], node)
        op = "greatest" if isinstance(node, exp.Greatest) else "least"
        return self.make(op, _result_type(args), args, node)

    def arithmetic(self, node: Any) -> Expr:
        args = (self.typed(node.this, Type.NUM), self.typed(node.expression, Type.NUM))
        return self.make(_ARITHMETIC[type(node)], Type.NUM, args, node)

    def num_unary(self, node: Any) -> Expr:
        op = _NUM_UNARY[type(node)]
        result = Type.BOOL if op in _BOOL_RESULT else Type.NUM
        return self.make(op, result, (self.typed(node.this, Type.NUM),), node, double=result is Type.NUM)

    def round(self, node: exp.Round) -> Expr:
        digits = node.args.get("decimals")
        places = 0 if digits is None else self.literal_int(digits, "ROUND's digits", -20, 20)
        return self.make("round", Type.NUM, (self.typed(node.this, Type.NUM),), node, value=places)

    def trunc(self, node: exp.Trunc) -> Expr:
        if node.args.get("decimals") is not None:
            raise self.refuse(node, "takes one argument here")
        return self.make("trunc", Type.NUM, (self.typed(node.this, Type.NUM),), node)

    def log(self, node: exp.Log) -> Expr:
        base, x = node.this, node.expression
        if x is None:  # LOG(x): base 10 in DuckDB
            return self.make("log10", Type.NUM, (self.typed(base, Type.NUM),), node)
        if isinstance(base, exp.Literal) and not base.is_string and float(base.this) in (2.0, 10.0):
            op = "log2" if float(base.this) == 2.0 else "log10"
            return self.make(op, Type.NUM, (self.typed(x, Type.NUM),), node)
        raise self.refuse(node, "takes base 2 or 10 here (or use LN)")

    def pow(self, node: exp.Pow) -> Expr:
        args = (self.typed(node.this, Type.NUM), self.typed(node.expression, Type.NUM))
        return self.make("pow", Type.NUM, args, node)

    def text_unary(self, node: Any) -> Expr:
        return self.make(_TEXT_UNARY[type(node)], Type.TEXT, (self.typed(node.this, Type.TEXT),), node)

    def length(self, node: exp.Length) -> Expr:
        return self.make("length", Type.NUM, (self.typed(node.this, Type.TEXT),), node, double=False)

    def trim(self, node: exp.Trim) -> Expr:
        if node.args.get("expression") is not None or node.args.get("collation") is not None:
            raise self.refuse(node, "takes one argument here")
        position = str(node.args.get("position") or "").upper()
        op = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        return self.make(op, Type.TEXT, (self.typed(node.this, Type.TEXT),), node)

    def substring(self, node: exp.Substring) -> Expr:
        start = self.literal_int(
            node.args.get("start"), "SUBSTRING's start", -MAX_RESULT_LENGTH, MAX_RESULT_LENGTH
        )
        length_node = node.args.get("length")
        length = (
            None
            if length_node is None
            else self.literal_int(length_node, "SUBSTRING's length", 0, MAX_RESULT_LENGTH)
        )
        x = self.typed(node.this, Type.TEXT)
        return self.make("substring", Type.TEXT, (x,), node, value=(start, length))

    def left_right(self, node: exp.Left | exp.Right) -> Expr:
        n = self.literal_int(
            node.expression, f"{node.key.upper()}'s length", -MAX_RESULT_LENGTH, MAX_RESULT_LENGTH
        )
        op = "left" if isinstance(node, exp.Left) else "right"
        return self.make(op, Type.TEXT, (self.typed(node.this, Type.TEXT),), node, value=n)

    def concat(self, node: exp.Concat) -> Expr:
        args = tuple(self.typed(a, Type.TEXT) for a in node.expressions)
        return self.make("concat", Type.TEXT, args, node)

    def dpipe(self, node: exp.DPipe) -> Expr:
        args = (self.typed(node.this, Type.TEXT), self.typed(node.expression, Type.TEXT))
        return self.make("dpipe", Type.TEXT, args, node)

    def replace(self, node: exp.Replace) -> Expr:
        old = self.literal_text(node.expression, "REPLACE's text to find")
        new = self.literal_text(node.args.get("replacement"), "REPLACE's replacement")
        x = self.typed(node.this, Type.TEXT)
        lits = (Expr("literal", Type.TEXT, value=old), Expr("literal", Type.TEXT, value=new))
        return self.make("replace", Type.TEXT, (x, *lits), node)

    def pad(self, node: exp.Pad) -> Expr:
        n = self.literal_int(node.expression, "the padded length", 0, MAX_RESULT_LENGTH)
        fill = self.literal_text(node.args.get("fill_pattern"), "the padding")
        if not fill:
            raise self.refuse(node, "pads with nothing")
        x = self.typed(node.this, Type.TEXT)
        op = "lpad" if node.args.get("is_left") else "rpad"
        return self.make(op, Type.TEXT, (x, Expr("literal", Type.TEXT, value=fill)), node, value=n)

    def text_test(self, node: Any) -> Expr:
        other = self.literal_text(node.expression, "the text to look for", MAX_LITERAL_LENGTH)
        op = {exp.StartsWith: "starts_with", exp.EndsWith: "ends_with", exp.Contains: "contains"}[type(node)]
        x = self.typed(node.this, Type.TEXT)
        return self.make(op, Type.BOOL, (x, Expr("literal", Type.TEXT, value=other)), node)

    def strpos(self, node: exp.StrPosition) -> Expr:
        if node.args.get("position") is not None or node.args.get("occurrence") is not None:
            raise self.refuse(node, "takes two arguments here")
        other = self.literal_text(node.args.get("substr"), "the text to look for", MAX_LITERAL_LENGTH)
        x = self.typed(node.this, Type.TEXT)
        lit = Expr("literal", Type.TEXT, value=other)
        return self.make("strpos", Type.NUM, (x, lit), node, double=False)

    def part(self, node: Any, part: str, allowed: set[str]) -> str:
        part = part.lower().strip("'\"")
        part = {"dayofweek": "dow", "dayofyear": "doy"}.get(part, part)
        if part not in allowed:
            raise self.refuse(node, f"uses the part {part!r}; parts: {', '.join(sorted(allowed))}")
        return part

    def date_part(self, node: Any, part: str, x: exp.Expression) -> Expr:
        part = self.part(node, part, _DATE_PARTS)
        return self.make("date_part", Type.NUM, (self.typed(x, Type.DATE),), node, value=part, double=False)

    def date_function(self, node: Any) -> Expr:
        return self.date_part(node, _DATE_FUNCTIONS[type(node)], node.this)

    def extract(self, node: exp.Extract) -> Expr:
        return self.date_part(node, node.this.name, node.expression)

    def date_trunc(self, node: exp.TimestampTrunc | exp.DateTrunc) -> Expr:
        unit = node.args.get("unit")
        part = self.part(node, unit.name if unit is not None else "", _TRUNC_PARTS)
        return self.make("date_trunc", Type.DATE, (self.typed(node.this, Type.DATE),), node, value=part)

    def strptime(self, node: exp.StrToTime) -> Expr:
        fmt = self.literal_text(node.args.get("format"), "the date format")
        _duckdb_accepts("SELECT try_strptime('', ?)", fmt, self.where, "date format")
        x = self.typed(node.this, Type.TEXT)
        return self.make("strptime", Type.DATE, (x, Expr("literal", Type.TEXT, value=fmt)), node)

    def cast(self, node: exp.Cast) -> Expr:
        to = node.args.get("to")
        name = to.this.name if isinstance(to, exp.DataType) else ""
        target = _CAST_TARGETS.get(name.upper())
        if target is None or (isinstance(to, exp.DataType) and to.args.get("nested")):
            raise self.refuse(
                node, "casts to a type outside the language (number, integer, text, boolean, date)"
            )
        if target == "date" and isinstance(node.this, exp.Literal) and node.this.is_string:
            value = self.date(node, str(node.this.this))
            return Expr("literal", Type.DATE, value=value, double=False, source=node.sql())
        x = self.check(node.this)
        if x.type is Type.NULL:
            return Expr("literal", _CAST_TYPE[target], value=None, double=False, source=node.sql())
        if x.type is Type.DATE and target in ("double", "int", "bool"):
            raise self.refuse(node, "casts a date to a number; use EXTRACT or DATE_PART")
        if x.type is Type.BOOL and target == "date":
            raise self.refuse(node, "casts a boolean to a date")
        if x.type is Type.NUM and target == "date":
            raise self.refuse(node, "casts a number to a date")
        same = _CAST_TYPE[target] is x.type and target != "int"
        return self.make(
            "cast", _CAST_TYPE[target], (x,), node, value=target, double=target == "double",
            portable=same and x.type is not Type.TEXT,
        )  # fmt: skip

    def anonymous(self, node: exp.Anonymous) -> Expr:
        name = str(node.this).upper()
        args = list(node.expressions)
        if name in _ANONYMOUS_NUM and len(args) == 1:
            op = _ANONYMOUS_NUM[name]
            result = Type.BOOL if op in _BOOL_RESULT else Type.NUM
            return self.make(op, result, (self.typed(args[0], Type.NUM),), node, double=result is Type.NUM)
        if name == "DATE_PART" and len(args) == 2:
            return self.date_part(node, self.literal_text(args[0], "the date part"), args[1])
        if name == "DATE_TRUNC" and len(args) == 2:
            part = self.part(node, self.literal_text(args[0], "the date part"), _TRUNC_PARTS)
            return self.make("date_trunc", Type.DATE, (self.typed(args[1], Type.DATE),), node, value=part)
        if name in ("STRLEN", "CHAR_LENGTH", "CHARACTER_LENGTH") and len(args) == 1:
            return self.make("length", Type.NUM, (self.typed(args[0], Type.TEXT),), node, double=False)
        if name in ("PREFIX", "SUFFIX") and len(args) == 2:
            other = self.literal_text(args[1], "the text to look for", MAX_LITERAL_LENGTH)
            op = "starts_with" if name == "PREFIX" else "ends_with"
            x = self.typed(args[0], Type.TEXT)
            return self.make(op, Type.BOOL, (x, Expr("literal", Type.TEXT, value=other)), node)
        if name == "ISFINITE" or name in _ANONYMOUS_NUM:
            raise self.refuse(node, "takes one number")
        raise self.refuse(node)


def _portable(args: tuple[Expr, ...]) -> bool:
    """Numbers compared as written (a column with literals) need no cast; every other numeric comparison
    casts to DOUBLE, which outside DuckDB can fail (PostgreSQL: a NUMERIC beyond DOUBLE's range)."""
    return not any(a.type is Type.NUM for a in args) or compared_as_written(*args)


def _result_type(args: tuple[Expr, ...]) -> Type:
    kinds = [a.type for a in args if a.type is not Type.NULL]
    return kinds[0] if kinds else Type.NULL


_SCRATCH: dict[str, bool] = {}


def _duckdb_accepts(sql: str, literal: str, where: str, what: str) -> None:
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


def check(node: exp.Expression, table: TableMeta, where: str, want: Type | None = None) -> Expr:
    """The checked, typed expression of ``node`` over ``table`` (``where`` names the clause in errors);
    ``want`` the type the clause needs (WHERE: boolean)."""
    checker = Checker(table, where)
    e = checker.check(node) if want is None else checker.typed(node, want)
    if want is not None and e.type is Type.NULL:
        return Expr("literal", want, value=None, double=False, source="NULL")
    return mark(e)  # which forms are total outside DuckDB too (portable.py)
