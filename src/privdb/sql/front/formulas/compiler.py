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
key the engine stores as numbers meets numbers as numbers (privdb.sql.front.expr.types.stored_number), and
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
from privdb.sql.front.formulas.nodes import (
    ARITHMETIC,
    CASTS,
    COMPARISONS,
    UNARY,
    Compiled,
    as_parsed,
    compare_nodes,
    fold,
    is_literal,
    nonzero,
)
from privdb.sql.front.formulas.vectors import (
    Result,
    Run,
    Values,
    as_boolean,
    as_number,
    cast_to_int,
    choose_branch,
    compare,
    constant_run,
    leaf_run,
    least_or_greatest,
    monotone,
    number_result,
    power,
    present,
    python_values,
    round_digits,
    sql_and,
    sql_or,
    widen,
)

__all__ = ["ALLOWED", "Formula", "Leaf", "LeafKind", "compile_formula", "compile_predicate"]

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
class Formula:
    """A compiled expression over leaves; ``evaluate`` computes it for n groups (never raises)."""

    kind: str  # "number" | "boolean" | "text" | "other"
    leaves: tuple[int, ...]
    text: str
    _run: Run = field(repr=False, compare=False)
    integer: bool = (
        False  # CAST(… AS INTEGER | BIGINT) at the top: its values are whole numbers, sent as ints
    )

    def evaluate(self, leaves: Sequence[Values], n: int) -> Values:
        """The result for the n groups, read from ``leaves`` (indexed by leaf index)."""
        with np.errstate(all="ignore"):
            r = self._run(leaves, n)
            if self.kind == "number" or (self.kind == "other" and r.kind == "number"):
                r = as_number(r, n)
                return Values(r.x, r.lo, r.hi, r.exact)
            if self.kind == "boolean":
                r = Result("boolean", as_boolean(r, n), r.exact)
            return Values(python_values(r), exact=r.exact)


class _Compiler:
    def __init__(self, leaf: Leaf, where: str, kind_of: LeafKind | None = None) -> None:
        self.leaf, self.where, self.kind_of = leaf, where, kind_of

    def refuse(self, node: exp.Expression, why: str) -> UnsupportedQuery:
        sql = node.sql(dialect="duckdb")
        return UnsupportedQuery(
            f"{self.where}: {sql} {why}; expressions over aggregates may use only {ALLOWED}"
        )

    def join(self, node: exp.Expression, parts: Sequence[Compiled]) -> str:
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

    def meet(self, node: exp.Expression, parts: Sequence[Compiled]) -> tuple[str, list[Compiled]]:
        """:meth:`join`, with text keys stored as numbers read as numbers (or conditions) where they meet
        one."""
        kind = self.join(node, parts)
        convert = {"number": as_parsed, "boolean": nonzero}.get(kind)
        return kind, [convert(p) if convert is not None and p.kind == "numtext" else p for p in parts]

    def typed(self, node: exp.Expression, kind: str, parent: exp.Expression) -> Compiled:
        c = self.compile(node)
        if c.kind == "numtext" and kind in ("number", "boolean"):
            return as_parsed(c) if kind == "number" else nonzero(c)
        if c.kind == "numtext" and kind == "text":
            return c
        if c.kind not in (kind, "null", "any"):
            raise self.refuse(parent, f"needs a {kind} where {node.sql(dialect='duckdb')} is {c.kind}")
        return c

    def compile(self, node: exp.Expression) -> Compiled:
        index = self.leaf(node)
        if index is not None:
            kind = "any" if self.kind_of is None else self.kind_of(index)
            return Compiled(kind, leaf_run(index), frozenset({index}))
        if isinstance(node, exp.Paren):
            return self.compile(node.this)
        if isinstance(node, exp.Literal) and not node.is_string:
            try:
                value = float(node.this)
            except ValueError:
                raise self.refuse(node, "is not a number literal") from None
            return Compiled("number", constant_run("number", value), frozenset(), value)
        literal = _LITERALS.get(type(node))
        if literal is not None:
            v: Any = {"number": math.pi, "text": node.this, "boolean": bool(node.this)}.get(literal)
            return Compiled(
                literal, constant_run(literal, v), frozenset(), v if literal == "number" else None, v is None
            )
        handler = _HANDLERS.get(type(node)) or (_Compiler.cast if isinstance(node, exp.Cast) else None)
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Column | exp.AggFunc | exp.Window | exp.Anonymous) or not isinstance(
            node, exp.Func | exp.Binary | exp.Unary | exp.Predicate
        ):
            raise self.refuse(node, "is neither an aggregate nor a GROUP BY key")
        raise self.refuse(node, "is not supported here")

    def numeric(
        self, node: exp.Expression, args: list[Compiled], f: Callable[[list[Result]], Result]
    ) -> Compiled:
        def run(leaves: Sequence[Values], n: int) -> Result:
            return f([as_number(a.run(leaves, n), n) for a in args])

        const = -args[0].const if isinstance(node, exp.Neg) and args[0].const is not None else None
        return Compiled("number", run, frozenset().union(*(a.leaves for a in args)), const)

    def numbers(self, node: exp.Expression) -> Compiled:
        """Numeric operators and functions: numbers in, a number and its interval (by the rules above) out."""
        kind, binary = type(node), type(node) in ARITHMETIC or isinstance(node, exp.Pow)
        base: float | None = 10.0
        operands = [node.this, *([node.expression] if binary else []), *node.expressions]
        if kind is exp.Log and node.expression is not None:  # LOG(base, x)
            base, operands = self.compile(node.this).const, [node.expression]
        args = [self.typed(o, "number", node) for o in operands]
        if binary:
            op, p = ARITHMETIC.get(kind), args[1].const

            def apply(r: list[Result]) -> Result:
                x, lo, hi = op(r[0], r[1]) if op is not None else power(r[0], r[1], p)
                return number_result(x, lo, hi, r[0].exact and r[1].exact, r[0].null | r[1].null)

            return self.numeric(node, args, apply)
        if kind in (exp.Least, exp.Greatest):
            return self.numeric(node, args, lambda r: least_or_greatest(kind is exp.Least, r))
        if kind in UNARY:
            if node.args.get("decimals") is not None or node.args.get("to") is not None:
                raise self.refuse(node, "takes one argument here")
            f = UNARY[kind]
        elif kind is exp.Round:
            digits = node.args.get("decimals")
            d = self.typed(digits, "number", node).const if digits else 0.0
            if d is None or not d.is_integer() or node.args.get("truncate") is not None:
                raise self.refuse(node, "needs a whole-number literal for its digits")
            f = monotone(lambda v: round_digits(v, d))
        else:
            if base is None or not base > 0 or base == 1:
                raise self.refuse(node, "needs a positive number literal other than 1 as its base")
            f = monotone({10.0: np.log10, 2.0: np.log2}.get(base, lambda v: np.log(v) / math.log(base)), 0.0)
        return self.numeric(node, args, lambda r: f(r[0]))

    def cast(self, node: exp.Expression) -> Compiled:
        to = node.args["to"].this
        if to not in CASTS or any(node.args.get(a) is not None for a in ("format", "default", "action")):
            raise self.refuse(node, "is not supported: numbers cast AS DOUBLE, INTEGER or BIGINT")
        bits = CASTS[to]
        f = monotone(cast_to_int(bits)) if bits else (lambda r: r)
        inner = self.compile(node.this)  # text is read as TRY_CAST reads it: NULL where not a number
        if inner.kind == "boolean":
            raise self.refuse(node, "casts a boolean to a number; use CASE WHEN … THEN 1 ELSE 0 END")
        return self.numeric(node, [as_parsed(inner)], lambda r: f(r[0]))

    def compare(self, node: exp.Expression) -> Compiled:
        _, (a, b) = self.meet(node, [self.compile(node.this), self.compile(node.expression)])
        return compare_nodes(COMPARISONS[type(node)], a, b)

    def logic(self, node: exp.Expression) -> Compiled:
        parts = [self.typed(p, "boolean", node) for p in (node.this, node.args.get("expression")) if p]
        if isinstance(node, exp.Not):
            return fold(parts, lambda x, _: 1.0 - x)
        return fold(parts, sql_and if isinstance(node, exp.And) else sql_or)

    def is_null(self, node: exp.Expression) -> Compiled:
        if not isinstance(node.expression, exp.Null):
            raise self.refuse(node, "is not supported: only IS [NOT] NULL")
        a = self.compile(node.this)

        def run(leaves: Sequence[Values], n: int) -> Result:
            r = a.run(leaves, n)
            return Result("boolean", (~present(r)).astype(np.float64), r.exact)

        return Compiled("boolean", run, a.leaves)

    def member(self, node: exp.Expression) -> Compiled:
        items = node.expressions
        subquery = any(node.args.get(a) for a in ("query", "unnest", "field"))
        if subquery or not items or not all(map(is_literal, items)):
            raise self.refuse(node, "needs a list of literals")
        _, (x, *values) = self.meet(node, [self.compile(node.this), *(self.compile(i) for i in items)])
        return fold([compare_nodes(operator.eq, x, v) for v in values], sql_or)

    def between(self, node: exp.Expression) -> Compiled:
        if node.args.get("symmetric"):
            raise self.refuse(node, "is not supported: use BETWEEN without SYMMETRIC")
        _, (x, low, high) = self.meet(node, [self.compile(node.args[a]) for a in ("this", "low", "high")])
        return fold([compare_nodes(operator.ge, x, low), compare_nodes(operator.le, x, high)], sql_and)

    def case(self, node: exp.Expression) -> Compiled:
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
                c = compare_nodes(operator.eq, subject_c, c)
            conds.append(c)
            results.append(self.compile(then))
        results.append(self.compile(default if default is not None else exp.Null()))
        kind, results = self.meet(node, results)

        def run(leaves: Sequence[Values], n: int) -> Result:
            cs, parts = [c.run(leaves, n) for c in conds], [r.run(leaves, n) for r in results]
            picks = [as_boolean(c, n) == 1 for c in cs] + [np.ones(n, bool)]
            decided = all(c.exact for c in cs)  # exact conditions: the truth takes the same branch
            out = choose_branch(kind, parts, picks, decided and all(p.exact for p in parts), n)
            union = [
                (as_number(p, n), picks[-1])
                for p, r in zip(parts, results, strict=True)
                if not r.null_literal
            ]
            return out if decided else widen(out, union, null=any(r.null_literal for r in results))

        return Compiled(kind, run, frozenset().union(*(c.leaves for c in conds + results)))

    def coalesce(self, node: exp.Expression) -> Compiled:
        """COALESCE: the first value that is not NULL; NULLIF(a, b): a, or NULL where a = b."""
        nullif = isinstance(node, exp.Nullif)
        args = [self.compile(a) for a in [node.this, node.expression] if a is not None] if nullif else []
        args = args or [self.compile(a) for a in [node.this, *node.expressions]]
        kind, args = self.meet(node, args)

        def run(leaves: Sequence[Values], n: int) -> Result:
            parts = [a.run(leaves, n) for a in args]
            exact = all(p.exact for p in parts)
            if nullif:
                same = as_boolean(compare(operator.eq, parts[0], parts[1], n), n) == 1
                out = choose_branch(kind if kind != "null" else "any", parts[:1], [~same], exact, n)
                return (
                    out
                    if exact or out.kind != "number"
                    else number_result(out.x, out.lo, out.hi, False, True)
                )
            picks = [present(p) for p in parts]
            out = choose_branch(kind, parts, picks, exact, n)
            union = [
                (as_number(p, n), m if p.exact else np.ones(n, bool))
                for p, m, a in zip(parts, picks, args, strict=True)
                if not a.null_literal
            ]
            return widen(out, union, stop=True)

        return Compiled(kind, run, frozenset().union(*(a.leaves for a in args)))


_HANDLERS: dict[type[exp.Expression], Callable[[_Compiler, Any], Compiled]] = {
    **dict.fromkeys([*UNARY, *ARITHMETIC, exp.Pow, exp.Round, exp.Log], _Compiler.numbers),
    exp.Least: _Compiler.numbers, exp.Greatest: _Compiler.numbers,
    **dict.fromkeys(COMPARISONS, _Compiler.compare),
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
    top = node.unalias()
    while isinstance(top, exp.Paren):
        top = top.this
    integer = isinstance(top, exp.Cast) and CASTS.get(top.to.this) is not None
    return Formula(
        _KINDS.get(c.kind, "other"), tuple(sorted(c.leaves)), node.sql(dialect="duckdb"), c.run, integer
    )


def compile_predicate(
    node: exp.Expression, leaf: Leaf, where: str = "HAVING", kind_of: LeafKind | None = None
) -> Formula:
    """Compile a condition (HAVING): a Formula of kind boolean whose values are True, False or None."""
    compiler = _Compiler(leaf, where, kind_of)
    c = compiler.typed(node, "boolean", node) if kind_of is not None else compiler.compile(node)
    if c.kind not in ("boolean", "null", "any"):
        raise compiler.refuse(node, f"is not a condition (it gives {c.kind} values, not TRUE or FALSE)")
    return Formula("boolean", tuple(sorted(c.leaves)), node.sql(dialect="duckdb"), c.run)
