"""The parts the formula compiler (privdb.sql.front.formulas.compiler) builds a formula from: a compiled node
(its static kind, the leaves it reads and how to run it over the groups), the tables that give the numeric
operators, comparisons and casts their runtime (privdb.sql.front.formulas.vectors), the conversions of a text
key stored as numbers where it meets a number or a condition, and the nodes that compare two values or fold
conditions with three-valued AND/OR/NOT. Nothing here refuses: the compiler decides what is allowed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from privdb.sql.front.formulas.vectors import (
    NAN,
    F,
    Result,
    Run,
    Values,
    absolute,
    as_boolean,
    as_float,
    as_number,
    compare,
    corners,
    divide,
    monotone,
    number_result,
)

__all__ = [
    "ARITHMETIC",
    "CASTS",
    "COMPARISONS",
    "UNARY",
    "Compiled",
    "as_parsed",
    "compare_nodes",
    "fold",
    "is_literal",
    "nonzero",
    "read_number",
]


@dataclass(frozen=True)
class Compiled:
    """A compiled node: its static kind (number, boolean, text, null, any = a leaf) and how to run it."""

    kind: str
    run: Run
    leaves: frozenset[int]
    const: float | None = None  # the value of a numeric literal (or -literal)
    null_literal: bool = False


def is_literal(node: exp.Expression) -> bool:
    """A literal, perhaps in parentheses or negated: what ``x IN (…)`` may list."""
    while isinstance(node, exp.Paren | exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal | exp.Boolean | exp.Null)


# the runtime of each operator: unary functions, binary arithmetic (value and interval), comparisons, casts
# (the bits of the integer a number is cast to; None: DOUBLE)
UNARY: dict[type[exp.Expression], Callable[[Result], Result]] = {
    exp.Neg: lambda a: number_result(-a.x, -a.hi, -a.lo, a.exact, a.null),
    exp.Abs: absolute,
    exp.Sign: monotone(lambda x: np.sign(x) + 0.0),
    exp.Floor: monotone(np.floor),
    exp.Ceil: monotone(np.ceil),
    exp.Trunc: monotone(np.trunc),
    exp.Sqrt: monotone(np.sqrt, 0.0),
    exp.Ln: monotone(np.log, 0.0),
    exp.Exp: monotone(np.exp),
}

ARITHMETIC: dict[type[exp.Expression], Callable[[Result, Result], tuple[F, F, F]]] = {
    exp.Add: lambda a, b: (a.x + b.x, a.lo + b.lo, a.hi + b.hi),
    exp.Sub: lambda a, b: (a.x - b.x, a.lo - b.hi, a.hi - b.lo),
    exp.Mul: lambda a, b: (a.x * b.x, *corners(np.multiply, a, b)),
    exp.Div: divide,
    exp.Mod: lambda a, b: (np.where(b.x == 0, NAN, np.fmod(a.x, b.x)), a.x * NAN, a.x * NAN),
}

COMPARISONS: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt,
    exp.LTE: operator.le, exp.GT: operator.gt, exp.GTE: operator.ge,
}  # fmt: skip


CASTS = {exp.DataType.Type.DOUBLE: None, exp.DataType.Type.INT: 32, exp.DataType.Type.BIGINT: 64}


def read_number(v: Any) -> float:
    """A value read as a number, as ``TRY_CAST(v AS DOUBLE)``: NaN (NULL) where it is not one."""
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return NAN
    return as_float(v)


def as_parsed(c: Compiled) -> Compiled:
    """``c``'s values read as numbers (text parsed as TRY_CAST does; numbers as they are)."""
    if c.kind == "number":
        return c

    def run(leaves: Sequence[Values], n: int) -> Result:
        r = c.run(leaves, n)
        if r.kind == "list":
            return number_result(np.array([read_number(v) for v in r.x], dtype=np.float64), NAN, NAN, r.exact)
        return as_number(r, n)

    return Compiled("number", run, c.leaves, c.const, c.null_literal)


def nonzero(c: Compiled) -> Compiled:
    """A number as a condition: true where it is not 0, as the engine reads an integer as a boolean."""
    number = as_parsed(c)

    def run(leaves: Sequence[Values], n: int) -> Result:
        x = np.asarray(number.run(leaves, n).x, dtype=np.float64)
        return Result("boolean", np.where(np.isnan(x), NAN, (x != 0).astype(np.float64)), True)

    return Compiled("boolean", run, c.leaves)


def compare_nodes(op: Callable[[Any, Any], Any], a: Compiled, b: Compiled) -> Compiled:
    """``a op b`` as a condition (NULL where either is NULL or they do not compare)."""

    def run(leaves: Sequence[Values], n: int) -> Result:
        return compare(op, a.run(leaves, n), b.run(leaves, n), n)

    return Compiled("boolean", run, a.leaves | b.leaves)


def fold(parts: list[Compiled], fn: Callable[[F, F], F]) -> Compiled:
    """Conditions folded with a three-valued ``fn`` (AND, OR; NOT is ``fn`` of one part)."""

    def run(leaves: Sequence[Values], n: int) -> Result:
        r = [p.run(leaves, n) for p in parts]
        x = as_boolean(r[0], n)
        for other in r[1:] or r:  # one part: fn(x, x) (NOT; AND, OR and IN of one are x itself)
            x = fn(x, as_boolean(other, n))
        return Result("boolean", x, all(p.exact for p in r))

    return Compiled("boolean", run, frozenset().union(*(p.leaves for p in parts)))
