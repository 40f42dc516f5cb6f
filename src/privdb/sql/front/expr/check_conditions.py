"""The checker's rules for conditions: comparisons, AND/OR/NOT, IS [NOT] NULL/TRUE/FALSE, IN and BETWEEN.

Each gives a boolean. Comparisons, IN and BETWEEN put their operands in one type (CheckerCore.same_type);
a numeric one is portable only where the engine compares a column with literals as written, since any
other numeric comparison casts to DOUBLE, which outside DuckDB can fail.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.sql.front.expr.check_core import CheckerCore
from privdb.sql.front.expr.render import compared_as_written
from privdb.sql.front.expr.types import MAX_IN_LIST, Expr, Type

__all__ = ["COMPARISONS", "ConditionRules"]

COMPARISONS: dict[type[Any], str] = {
    exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt", exp.GTE: "gte",
    exp.NullSafeNEQ: "distinct", exp.NullSafeEQ: "not_distinct",
}  # fmt: skip


class ConditionRules(CheckerCore):
    """Comparisons, logic, IS, IN and BETWEEN."""

    def comparison(self, node: Any) -> Expr:
        args = self.same_type([node.this, node.expression], node)
        return self.make(COMPARISONS[type(node)], Type.BOOL, args, node, portable=_portable(args))

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
            while isinstance(v, exp.Paren):  # (-3) is a literal too (a bound parameter is written so)
                v = v.this
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


def _portable(args: tuple[Expr, ...]) -> bool:
    """Numbers compared as written (a column with literals) need no cast; every other numeric comparison
    casts to DOUBLE, which outside DuckDB can fail (PostgreSQL: a NUMERIC beyond DOUBLE's range)."""
    return not any(a.type is Type.NUM for a in args) or compared_as_written(*args)
