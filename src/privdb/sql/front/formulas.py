"""Expressions over noisy aggregates, and HAVING, as post-processing.

``SELECT sex, SUM(income) / COUNT(*) AS mean, ROUND(AVG(age), 1) … GROUP BY sex HAVING COUNT(*) > 100``:
once the aggregates are released with noise, anything computed from them and from the public GROUP BY
keys is post-processing: a function of the released values alone, so it costs no privacy budget and the
release's guarantee carries over unchanged. This module compiles such a sqlglot expression into a
:class:`Formula` and evaluates it vectorised over the groups. Its *leaves* are the nodes the caller's
``leaf`` callback names (asked about every node, parents first, before anything else); every other node
must be one of :data:`ALLOWED`, type-checked at compile time, leaves included: a GROUP BY key has its
type in the language and an aggregate is a number, so ``HAVING sex = 1`` over a text key is refused before
the data is read as the same comparison is in WHERE, instead of giving NULL in every group (issue 26). A text
key the engine stores as numbers meets numbers as numbers (privdb.sql.front.expr.check.stored_number), and
CAST of
text to a number reads it as ``TRY_CAST`` does (NULL where it is not a number), as in WHERE.

Evaluation is total and follows DuckDB except where DuckDB would fail: NULL propagates, AND/OR/NOT are
three-valued, ROUND rounds half away from zero, CAST to INTEGER/BIGINT rounds to nearest (ties to even);
division and ``%`` by zero, SQRT/LN/LOG of negatives, non-finite or out-of-range integer casts and
comparisons of mismatched values give NULL (NaN); overflow gives ±inf. Nothing raises.

Intervals: each numeric leaf comes with an interval for its true value (NaN ends: not available; exact
leaves and literals are the point itself). They are carried through by interval arithmetic where the
function is monotone or its range over a box is computable (CASE, IF and COALESCE: the union of the
branches the truth may take), and are NaN elsewhere; a NULL value has no interval and ``lo ≤ hi`` always
holds. The guarantee: if every aggregate's true value lies in its interval, the formula's true value lies
in the propagated one or is NULL (e.g. when a noisy CASE condition picks a branch the true one does not,
and the true branch is NULL). The caller gets 95% coverage for a formula over ``k`` aggregate leaves by
asking for each aggregate's interval at level ``1 − 0.05/k``: by a union bound, all k hold at once with
probability at least 95%.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlglot import exp

from privdb.errors import UnsupportedQuery
from privdb.sql.front.vectors import (
    _R,
    NAN,
    F,
    Run,
    Values,
    _abs,
    _and,
    _as_bool,
    _as_num,
    _choose,
    _compare,
    _const,
    _corners,
    _div,
    _extreme,
    _float,
    _leaf,
    _monotone,
    _number,
    _or,
    _pow,
    _present,
    _py,
    _round,
    _to_int,
    _widen,
)

__all__ = ["ALLOWED", "Formula", "Leaf", "LeafKind", "Values", "compile_formula", "compile_predicate"]

Leaf = Callable[[exp.Expression], int | None]
# a leaf's static kind: number, text, boolean, "numtext" (a text key stored as numbers: it meets numbers as
# numbers and text as text, as in WHERE) or "any" (known at run time only: dates, MODE's values)
LeafKind = Callable[[int], str]

ALLOWED = (
    "aggregates, GROUP BY keys, number and 'text' literals, TRUE, FALSE, NULL, + - * / %, unary -, ABS, "
    "SIGN, ROUND(x[, digits]), FLOOR, CEIL, TRUNC, SQRT, LN, LOG, LOG10, LOG2, EXP, POWER, LEAST, GREATEST, "
    "PI(), CASE WHEN … THEN … [ELSE …] END, IF, COALESCE, NULLIF, = <> < <= > >=, AND, OR, NOT, "
    "IS [NOT] NULL, IN (literals), BETWEEN and CAST(x AS DOUBLE | INTEGER | BIGINT)"
)


@dataclass(frozen=True)
class _C:
    """A compiled node: its static kind (number, boolean, text, null, any = a leaf) and how to run it."""

    kind: str
    run: Run
    leaves: frozenset[int]
    const: float | None = None  # the value of a numeric literal (or -literal)
    null_literal: bool = False


@dataclass(frozen=True)
class Formula:
    """A compiled expression over leaves; ``evaluate`` computes it for n groups (never raises)."""

    kind: str  # "number" | "boolean" | "text" | "other"
    leaves: tuple[int, ...]
    text: str
    _run: Run = field(repr=False, compare=False)

    def evaluate(self, leaves: Sequence[Values], n: int) -> Values:
        """The result for the n groups, read from ``leaves`` (indexed by leaf index)."""
        with np.errstate(all="ignore"):
            r = self._run(leaves, n)
            if self.kind == "number" or (self.kind == "other" and r.kind == "number"):
                r = _as_num(r, n)
                return Values(r.x, r.lo, r.hi, r.exact)
            if self.kind == "boolean":
                r = _R("boolean", _as_bool(r, n), r.exact)
            return Values(_py(r), exact=r.exact)


def _literal(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren | exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal | exp.Boolean | exp.Null)


_UNARY: dict[type[exp.Expression], Callable[[_R], _R]] = {
    exp.Neg: lambda a: _number(-a.x, -a.hi, -a.lo, a.exact, a.null),
    exp.Abs: _abs,
    exp.Sign: _monotone(lambda x: np.sign(x) + 0.0),
    exp.Floor: _monotone(np.floor),
    exp.Ceil: _monotone(np.ceil),
    exp.Trunc: _monotone(np.trunc),
    exp.Sqrt: _monotone(np.sqrt, 0.0),
    exp.Ln: _monotone(np.log, 0.0),
    exp.Exp: _monotone(np.exp),
}

_ARITH: dict[type[exp.Expression], Callable[[_R, _R], tuple[F, F, F]]] = {
    exp.Add: lambda a, b: (a.x + b.x, a.lo + b.lo, a.hi + b.hi),
    exp.Sub: lambda a, b: (a.x - b.x, a.lo - b.hi, a.hi - b.lo),
    exp.Mul: lambda a, b: (a.x * b.x, *_corners(np.multiply, a, b)),
    exp.Div: _div,
    exp.Mod: lambda a, b: (np.where(b.x == 0, NAN, np.fmod(a.x, b.x)), a.x * NAN, a.x * NAN),
}

_COMPARE: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt,
    exp.LTE: operator.le, exp.GT: operator.gt, exp.GTE: operator.ge,
}  # fmt: skip


_CASTS = {exp.DataType.Type.DOUBLE: None, exp.DataType.Type.INT: 32, exp.DataType.Type.BIGINT: 64}


def _parse(v: Any) -> float:
    """A value read as a number, as ``TRY_CAST(v AS DOUBLE)``: NaN (NULL) where it is not one."""
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return NAN
    return _float(v)


def _as_parsed(c: _C) -> _C:
    """``c``'s values read as numbers (text parsed as TRY_CAST does; numbers as they are)."""
    if c.kind == "number":
        return c

    def run(leaves: Sequence[Values], n: int) -> _R:
        r = c.run(leaves, n)
        if r.kind == "list":
            return _number(np.array([_parse(v) for v in r.x], dtype=np.float64), NAN, NAN, r.exact)
        return _as_num(r, n)

    return _C("number", run, c.leaves, c.const, c.null_literal)


def _nonzero(c: _C) -> _C:
    """A number as a condition: true where it is not 0, as the engine reads an integer as a boolean."""
    number = _as_parsed(c)

    def run(leaves: Sequence[Values], n: int) -> _R:
        x = np.asarray(number.run(leaves, n).x, dtype=np.float64)
        return _R("boolean", np.where(np.isnan(x), NAN, (x != 0).astype(np.float64)), True)

    return _C("boolean", run, c.leaves)


class _Compiler:
    def __init__(self, leaf: Leaf, where: str, kind_of: LeafKind | None = None) -> None:
        self.leaf, self.where, self.kind_of = leaf, where, kind_of

    def refuse(self, node: exp.Expression, why: str) -> UnsupportedQuery:
        sql = node.sql(dialect="duckdb")
        return UnsupportedQuery(
            f"{self.where}: {sql} {why}; expressions over aggregates may use only {ALLOWED}"
        )

    def join(self, node: exp.Expression, parts: Sequence[_C]) -> str:
        """The common kind of values that meet (branches, compared sides); refused if they differ. A text
        key stored as numbers takes the kind it meets (number, else text): :meth:`meet` converts it."""
        kinds = {p.kind for p in parts}
        if "numtext" in kinds:
            met = next((k for k in ("number", "boolean") if k in kinds), "text")
            kinds = (kinds - {"numtext"}) | {met}
        known = sorted(kinds - {"null", "any"})
        if len(known) > 1:
            raise self.refuse(node, f"mixes {' and '.join(known)} values")
        return known[0] if known else "any" if any(p.kind == "any" for p in parts) else "null"

    def meet(self, node: exp.Expression, parts: Sequence[_C]) -> tuple[str, list[_C]]:
        """:meth:`join`, with text keys stored as numbers read as numbers (or conditions) where they meet
        one."""
        kind = self.join(node, parts)
        convert = {"number": _as_parsed, "boolean": _nonzero}.get(kind)
        return kind, [convert(p) if convert is not None and p.kind == "numtext" else p for p in parts]

    def typed(self, node: exp.Expression, kind: str, parent: exp.Expression) -> _C:
        c = self.compile(node)
        if c.kind == "numtext" and kind in ("number", "boolean"):
            return _as_parsed(c) if kind == "number" else _nonzero(c)
        if c.kind == "numtext" and kind == "text":
            return c
        if c.kind not in (kind, "null", "any"):
            raise self.refuse(parent, f"needs a {kind} where {node.sql(dialect='duckdb')} is {c.kind}")
        return c

    def compile(self, node: exp.Expression) -> _C:
        index = self.leaf(node)
        if index is not None:
            kind = "any" if self.kind_of is None else self.kind_of(index)
            return _C(kind, _leaf(index), frozenset({index}))
        if isinstance(node, exp.Paren):
            return self.compile(node.this)
        if isinstance(node, exp.Literal) and not node.is_string:
            try:
                value = float(node.this)
            except ValueError:
                raise self.refuse(node, "is not a number literal") from None
            return _C("number", _const("number", value), frozenset(), value)
        literal = _LITERALS.get(type(node))
        if literal is not None:
            v: Any = {"number": math.pi, "text": node.this, "boolean": bool(node.this)}.get(literal)
            return _C(literal, _const(literal, v), frozenset(), v if literal == "number" else None, v is None)
        handler = _HANDLERS.get(type(node)) or (_Compiler.cast if isinstance(node, exp.Cast) else None)
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Column | exp.AggFunc | exp.Window | exp.Anonymous) or not isinstance(
            node, exp.Func | exp.Binary | exp.Unary | exp.Predicate
        ):
            raise self.refuse(node, "is neither an aggregate nor a GROUP BY key")
        raise self.refuse(node, "is not supported here")

    def numeric(self, node: exp.Expression, args: list[_C], f: Callable[[list[_R]], _R]) -> _C:
        def run(leaves: Sequence[Values], n: int) -> _R:
            return f([_as_num(a.run(leaves, n), n) for a in args])

        const = -args[0].const if isinstance(node, exp.Neg) and args[0].const is not None else None
        return _C("number", run, frozenset().union(*(a.leaves for a in args)), const)

    def numbers(self, node: exp.Expression) -> _C:
        """Numeric operators and functions: numbers in, a number and its interval (by the rules above) out."""
        kind, binary = type(node), type(node) in _ARITH or isinstance(node, exp.Pow)
        base: float | None = 10.0
        operands = [node.this, *([node.expression] if binary else []), *node.expressions]
        if kind is exp.Log and node.expression is not None:  # LOG(base, x)
            base, operands = self.compile(node.this).const, [node.expression]
        args = [self.typed(o, "number", node) for o in operands]
        if binary:
            op, p = _ARITH.get(kind), args[1].const

            def apply(r: list[_R]) -> _R:
                x, lo, hi = op(r[0], r[1]) if op is not None else _pow(r[0], r[1], p)
                return _number(x, lo, hi, r[0].exact and r[1].exact, r[0].null | r[1].null)

            return self.numeric(node, args, apply)
        if kind in (exp.Least, exp.Greatest):
            return self.numeric(node, args, lambda r: _extreme(kind is exp.Least, r))
        if kind in _UNARY:
            if node.args.get("decimals") is not None or node.args.get("to") is not None:
                raise self.refuse(node, "takes one argument here")
            f = _UNARY[kind]
        elif kind is exp.Round:
            digits = node.args.get("decimals")
            d = self.typed(digits, "number", node).const if digits else 0.0
            if d is None or not d.is_integer() or node.args.get("truncate") is not None:
                raise self.refuse(node, "needs a whole-number literal for its digits")
            f = _monotone(lambda v: _round(v, d))
        else:
            if base is None or not base > 0 or base == 1:
                raise self.refuse(node, "needs a positive number literal other than 1 as its base")
            f = _monotone({10.0: np.log10, 2.0: np.log2}.get(base, lambda v: np.log(v) / math.log(base)), 0.0)
        return self.numeric(node, args, lambda r: f(r[0]))

    def cast(self, node: exp.Expression) -> _C:
        to = node.args["to"].this
        if to not in _CASTS or any(node.args.get(a) is not None for a in ("format", "default", "action")):
            raise self.refuse(node, "is not supported: numbers cast AS DOUBLE, INTEGER or BIGINT")
        bits = _CASTS[to]
        f = _monotone(_to_int(bits)) if bits else (lambda r: r)
        inner = self.compile(node.this)  # text is read as TRY_CAST reads it: NULL where not a number
        if inner.kind == "boolean":
            raise self.refuse(node, "casts a boolean to a number; use CASE WHEN … THEN 1 ELSE 0 END")
        return self.numeric(node, [_as_parsed(inner)], lambda r: f(r[0]))

    def compare(self, node: exp.Expression) -> _C:
        _, (a, b) = self.meet(node, [self.compile(node.this), self.compile(node.expression)])
        return _compare_c(_COMPARE[type(node)], a, b)

    def logic(self, node: exp.Expression) -> _C:
        parts = [self.typed(p, "boolean", node) for p in (node.this, node.args.get("expression")) if p]
        if isinstance(node, exp.Not):
            return _fold(parts, lambda x, _: 1.0 - x)
        return _fold(parts, _and if isinstance(node, exp.And) else _or)

    def is_null(self, node: exp.Expression) -> _C:
        if not isinstance(node.expression, exp.Null):
            raise self.refuse(node, "is not supported: only IS [NOT] NULL")
        a = self.compile(node.this)

        def run(leaves: Sequence[Values], n: int) -> _R:
            r = a.run(leaves, n)
            return _R("boolean", (~_present(r)).astype(np.float64), r.exact)

        return _C("boolean", run, a.leaves)

    def member(self, node: exp.Expression) -> _C:
        items = node.expressions
        subquery = any(node.args.get(a) for a in ("query", "unnest", "field"))
        if subquery or not items or not all(map(_literal, items)):
            raise self.refuse(node, "needs a list of literals")
        _, (x, *values) = self.meet(node, [self.compile(node.this), *(self.compile(i) for i in items)])
        return _fold([_compare_c(operator.eq, x, v) for v in values], _or)

    def between(self, node: exp.Expression) -> _C:
        if node.args.get("symmetric"):
            raise self.refuse(node, "is not supported: use BETWEEN without SYMMETRIC")
        _, (x, low, high) = self.meet(node, [self.compile(node.args[a]) for a in ("this", "low", "high")])
        return _fold([_compare_c(operator.ge, x, low), _compare_c(operator.le, x, high)], _and)

    def case(self, node: exp.Expression) -> _C:
        """CASE (searched or simple) and IF: the value of the first branch whose condition is TRUE."""
        if isinstance(node, exp.If):
            whens, default, subject = [(node.this, node.args["true"])], node.args.get("false"), None
        else:
            whens = [(i.this, i.args["true"]) for i in node.args["ifs"]]
            default, subject = node.args.get("default"), node.args.get("this")
        s = self.compile(subject) if subject is not None else None
        conds, results = [], []
        for when, then in whens:
            c = self.compile(when) if s is not None else self.typed(when, "boolean", node)
            if s is not None:
                _, (subject_c, c) = self.meet(node, [s, c])
                c = _compare_c(operator.eq, subject_c, c)
            conds.append(c)
            results.append(self.compile(then))
        results.append(self.compile(default if default is not None else exp.Null()))
        kind, results = self.meet(node, results)

        def run(leaves: Sequence[Values], n: int) -> _R:
            cs, parts = [c.run(leaves, n) for c in conds], [r.run(leaves, n) for r in results]
            picks = [_as_bool(c, n) == 1 for c in cs] + [np.ones(n, bool)]
            decided = all(c.exact for c in cs)  # exact conditions: the truth takes the same branch
            out = _choose(kind, parts, picks, decided and all(p.exact for p in parts), n)
            union = [
                (_as_num(p, n), picks[-1]) for p, r in zip(parts, results, strict=True) if not r.null_literal
            ]
            return out if decided else _widen(out, union, null=any(r.null_literal for r in results))

        return _C(kind, run, frozenset().union(*(c.leaves for c in conds + results)))

    def coalesce(self, node: exp.Expression) -> _C:
        """COALESCE: the first value that is not NULL; NULLIF(a, b): a, or NULL where a = b."""
        nullif = isinstance(node, exp.Nullif)
        args = [self.compile(a) for a in [node.this, node.expression] if a is not None] if nullif else []
        args = args or [self.compile(a) for a in [node.this, *node.expressions]]
        kind, args = self.meet(node, args)

        def run(leaves: Sequence[Values], n: int) -> _R:
            parts = [a.run(leaves, n) for a in args]
            exact = all(p.exact for p in parts)
            if nullif:
                same = _as_bool(_compare(operator.eq, parts[0], parts[1], n), n) == 1
                out = _choose(kind if kind != "null" else "any", parts[:1], [~same], exact, n)
                return out if exact or out.kind != "number" else _number(out.x, out.lo, out.hi, False, True)
            picks = [_present(p) for p in parts]
            out = _choose(kind, parts, picks, exact, n)
            union = [
                (_as_num(p, n), m if p.exact else np.ones(n, bool))
                for p, m, a in zip(parts, picks, args, strict=True)
                if not a.null_literal
            ]
            return _widen(out, union, stop=True)

        return _C(kind, run, frozenset().union(*(a.leaves for a in args)))


def _compare_c(op: Callable[[Any, Any], Any], a: _C, b: _C) -> _C:
    def run(leaves: Sequence[Values], n: int) -> _R:
        return _compare(op, a.run(leaves, n), b.run(leaves, n), n)

    return _C("boolean", run, a.leaves | b.leaves)


def _fold(parts: list[_C], fn: Callable[[F, F], F]) -> _C:
    def run(leaves: Sequence[Values], n: int) -> _R:
        r = [p.run(leaves, n) for p in parts]
        x = _as_bool(r[0], n)
        for other in r[1:] or r:  # one part: fn(x, x) (NOT; AND, OR and IN of one are x itself)
            x = fn(x, _as_bool(other, n))
        return _R("boolean", x, all(p.exact for p in r))

    return _C("boolean", run, frozenset().union(*(p.leaves for p in parts)))


_HANDLERS: dict[type[exp.Expression], Callable[[_Compiler, Any], _C]] = {
    **dict.fromkeys([*_UNARY, *_ARITH, exp.Pow, exp.Round, exp.Log], _Compiler.numbers),
    exp.Least: _Compiler.numbers, exp.Greatest: _Compiler.numbers,
    **dict.fromkeys(_COMPARE, _Compiler.compare),
    **dict.fromkeys([exp.And, exp.Or, exp.Not], _Compiler.logic),
    exp.Is: _Compiler.is_null, exp.In: _Compiler.member, exp.Between: _Compiler.between,
    exp.Case: _Compiler.case, exp.If: _Compiler.case, exp.Coalesce: _Compiler.coalesce,
    exp.Nullif: _Compiler.coalesce,
}  # fmt: skip
_LITERALS = {exp.Literal: "text", exp.Boolean: "boolean", exp.Null: "null", exp.Pi: "number"}
_KINDS = {"number": "number", "boolean": "boolean", "text": "text"}


def compile_formula(node: exp.Expression, leaf: Leaf, where: str, kind_of: LeafKind | None = None) -> Formula:
    """Compile an expression over leaves (aggregates and GROUP BY keys, as ``leaf`` says; of the kinds
    ``kind_of`` gives, "any" without it) into a Formula; UnsupportedQuery naming the offending part if it
    uses anything else or mixes types."""
    c = _Compiler(leaf, where, kind_of).compile(node)
    return Formula(_KINDS.get(c.kind, "other"), tuple(sorted(c.leaves)), node.sql(dialect="duckdb"), c.run)


def compile_predicate(
    node: exp.Expression, leaf: Leaf, where: str = "HAVING", kind_of: LeafKind | None = None
) -> Formula:
    """Compile a condition (HAVING): a Formula of kind boolean whose values are True, False or None."""
    compiler = _Compiler(leaf, where, kind_of)
    c = compiler.typed(node, "boolean", node) if kind_of is not None else compiler.compile(node)
    if c.kind not in ("boolean", "null", "any"):
        raise compiler.refuse(node, f"is not a condition (it gives {c.kind} values, not TRUE or FALSE)")
    return Formula("boolean", tuple(sorted(c.leaves)), node.sql(dialect="duckdb"), c.run)
