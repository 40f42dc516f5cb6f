"""The checker's rules for numbers: the arithmetic operators and the functions of numbers.

+ - * / % // and ABS, SIGN, ROUND(x[, digits]), FLOOR, CEIL, TRUNC, SQRT, LN, LOG (base 2 or 10), LOG10,
LOG2, EXP, POWER, ISNAN, ISINF, ISFINITE. Their operands are numbers (a text literal that is one, or a text
column stored as numbers, is read as one); ROUND's digits are a whole-number literal.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.sql.front.expr.check_core import CheckerCore
from privdb.sql.front.expr.types import Expr, Type

__all__ = ["ARITHMETIC", "NUMBER_FUNCTIONS", "NumberRules"]

ARITHMETIC: dict[type[Any], str] = {
    exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div", exp.Mod: "mod", exp.IntDiv: "intdiv",
}  # fmt: skip
NUMBER_FUNCTIONS: dict[type[Any], str] = {
    exp.Abs: "abs", exp.Sign: "sign", exp.Floor: "floor", exp.Ceil: "ceil", exp.Sqrt: "sqrt", exp.Ln: "ln",
    exp.Exp: "exp", exp.IsNan: "isnan", exp.IsInf: "isinf",
}  # fmt: skip
_ANONYMOUS_NUM = {
    "ISFINITE": "isfinite",
    "ISNAN": "isnan",
    "ISINF": "isinf",
    "LOG10": "log10",
    "LOG2": "log2",
}
_BOOL_RESULT = {"isnan", "isinf", "isfinite"}


class NumberRules(CheckerCore):
    """Arithmetic and the functions of one or two numbers."""

    def arithmetic(self, node: Any) -> Expr:
        args = (self.typed(node.this, Type.NUM), self.typed(node.expression, Type.NUM))
        return self.make(ARITHMETIC[type(node)], Type.NUM, args, node)

    def num_unary(self, node: Any) -> Expr:
        op = NUMBER_FUNCTIONS[type(node)]
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

    def named_number(self, node: exp.Anonymous, name: str, args: list[exp.Expression]) -> Expr | None:
        """ISFINITE, ISNAN, ISINF, LOG10 and LOG2 by name (sqlglot does not parse them all); else None."""
        if name in _ANONYMOUS_NUM and len(args) == 1:
            op = _ANONYMOUS_NUM[name]
            result = Type.BOOL if op in _BOOL_RESULT else Type.NUM
            return self.make(op, result, (self.typed(args[0], Type.NUM),), node, double=result is Type.NUM)
        if name == "ISFINITE" or name in _ANONYMOUS_NUM:
            raise self.refuse(node, "takes one number")
        return None
