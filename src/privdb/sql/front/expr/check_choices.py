"""The checker's rules for choices between values and conversions between types.

CASE (both forms), IF, COALESCE, NULLIF, GREATEST and LEAST choose among operands of one type
(CheckerCore.same_type), and their type is the first operand's that is not NULL; CASE, IF, COALESCE and
NULLIF are portable unless they give a number, GREATEST and LEAST never are. CAST and TRY_CAST go to the
five targets of the language only, and never from a date to a number or from a number or a boolean to a
date.
"""

from __future__ import annotations

from sqlglot import exp

from privdb.sql.front.expr.check_core import CheckerCore, result_type
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["ChoiceRules"]

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


class ChoiceRules(CheckerCore):
    """CASE, IF, COALESCE, NULLIF, GREATEST, LEAST, and CAST/TRY_CAST."""

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
        kind = result_type(typed)
        return self.make("case", kind, (*args, typed[-1]), node, portable=kind is not Type.NUM)

    def if_(self, node: exp.If) -> Expr:
        cond = self.typed(node.this, Type.BOOL)
        a, b = self.same_type([node.args["true"], node.args.get("false") or exp.Null()], node)
        kind = result_type((a, b))
        return self.make("case", kind, (cond, a, b), node, portable=kind is not Type.NUM)

    def coalesce(self, node: exp.Coalesce) -> Expr:
        args = self.same_type([node.this, *node.expressions], node)
        return self.make(
            "coalesce", result_type(args), args, node, portable=result_type(args) is not Type.NUM
        )

    def nullif(self, node: exp.Nullif) -> Expr:
        args = self.same_type([node.this, node.expression], node)
        return self.make("nullif", result_type(args), args, node, portable=result_type(args) is not Type.NUM)

    def extreme(self, node: exp.Greatest | exp.Least) -> Expr:
        args = self.same_type([node.this, *node.expressions], node)
        op = "greatest" if isinstance(node, exp.Greatest) else "least"
        return self.make(op, result_type(args), args, node)

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
