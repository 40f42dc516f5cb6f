"""Check an analyst's expression against the allow-list and the table's metadata; build the typed tree.

Anything not listed here is refused before the data is read (``unsupported_query``, free), with a message
that names what is allowed (check_core.ALLOWED). Literal arguments that could make a function fail (LIKE
patterns, regular expressions, date formats and parts, lengths) are checked by the family that takes them,
so rendering never meets a bad one. This module is the dispatch: ``Checker`` joins the families of rules
(check_conditions, check_choices, check_numbers, check_text, check_dates, over check_core) and maps each
node of sqlglot's tree to its rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlglot import exp

from privdb.catalog.metadata import TableMeta
from privdb.sql.front.expr.check_choices import ChoiceRules
from privdb.sql.front.expr.check_conditions import COMPARISONS, ConditionRules
from privdb.sql.front.expr.check_dates import DATE_FUNCTIONS, DateRules
from privdb.sql.front.expr.check_numbers import ARITHMETIC, NUMBER_FUNCTIONS, NumberRules
from privdb.sql.front.expr.check_text import TEXT_FUNCTIONS, TextRules
from privdb.sql.front.expr.portable import mark
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["Checker", "check"]


class Checker(ConditionRules, ChoiceRules, NumberRules, TextRules, DateRules):
    """One expression's checker: ``check`` walks the tree, refusing any node its ``dispatch`` has no rule for.
    The plain-SELECT check (privdb.sql.public.language) extends it with the forms that only a plain SELECT
    has (subqueries, aggregates) and leaves every other rule as it is."""

    def dispatch(self, node: exp.Expression) -> Callable[[Any], Expr] | None:
        kind = type(node)
        if kind in COMPARISONS:
            return self.comparison
        if kind in ARITHMETIC:
            return self.arithmetic
        if kind in NUMBER_FUNCTIONS:
            return self.num_unary
        if kind in TEXT_FUNCTIONS:
            return self.text_unary
        if kind in DATE_FUNCTIONS:
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

    def anonymous(self, node: exp.Anonymous) -> Expr:
        """A function sqlglot knows only by name: each family's named forms (their names are disjoint)."""
        name = str(node.this).upper()
        args = list(node.expressions)
        for named in (self.named_number, self.named_date, self.named_text):
            e = named(node, name, args)
            if e is not None:
                return e
        raise self.refuse(node)


def check(node: exp.Expression, table: TableMeta, where: str, want: Type | None = None) -> Expr:
    """The checked, typed expression of ``node`` over ``table`` (``where`` names the clause in errors);
    ``want`` the type the clause needs (WHERE: boolean)."""
    checker = Checker(table, where)
    e = checker.check(node) if want is None else checker.typed(node, want)
    if want is not None and e.type is Type.NULL:
        return Expr("literal", want, value=None, double=False, source="NULL")
    return mark(e)  # which forms are total outside DuckDB too (portable.py)
