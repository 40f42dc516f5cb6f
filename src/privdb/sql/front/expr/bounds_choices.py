"""Bounds of choices: CASE, COALESCE, NULLIF, GREATEST and LEAST.

A choice's interval is the union of the intervals of the values it can give; its conditions (CASE's WHEN,
NULLIF's second argument) only choose and are left as written. COALESCE never gives an argument after one
that is never NULL; LEAST and GREATEST skip NULLs, so an argument that is never NULL caps the result.
"""

from __future__ import annotations

from dataclasses import replace

from privdb.sql.front.expr.bounds_core import BounderCore, Rewritten, any_nullable, rewritten
from privdb.sql.front.expr.types import Expr

__all__ = ["ChoiceBounds"]


class ChoiceBounds(BounderCore):
    """CASE, COALESCE, NULLIF, GREATEST and LEAST."""

    def case(self, e: Expr) -> Rewritten:
        *pairs, default = e.args
        args: list[Expr] = []
        results: list[Rewritten] = []
        for i in range(0, len(pairs), 2):
            result = self.value(pairs[i + 1])
            args += [pairs[i], result.expr]  # the condition is left as written
            results.append(result)
        otherwise = self.value(default)
        results.append(otherwise)
        return self.union(e, replace(e, args=(*args, otherwise.expr)), results, any_nullable(*results))

    def coalesce(self, e: Expr) -> Rewritten:
        values = [self.value(x) for x in e.args]
        reached: list[Rewritten] = []
        for v in values:  # arguments after one that is never NULL are never the result
            reached.append(v)
            if not v.nullable:
                break
        nullable = all(v.nullable for v in values)
        return self.union(e, replace(e, args=tuple(v.expr for v in values)), reached, nullable)

    def nullif(self, e: Expr) -> Rewritten:
        a = self.value(e.args[0])  # the second argument is only compared
        return rewritten(replace(e, args=(a.expr, e.args[1])), a.span, a.integer, True)

    def extreme(self, e: Expr) -> Rewritten:
        """LEAST/GREATEST skip NULL arguments (NULL only when all are): the result is the extreme of some
        non-empty set of the arguments that includes every argument that is never NULL."""
        values = [self.value(x) for x in e.args]
        out = replace(e, args=tuple(v.expr for v in values))
        present = [v for v in values if v.span is not None]
        integer = all(v.integer for v in present)
        nullable = all(v.nullable for v in values)
        if not present:
            return rewritten(out, None)
        lows = [v.span[0] for v in present if v.span is not None]
        highs = [v.span[1] for v in present if v.span is not None]
        sure = [v.span for v in present if not v.nullable and v.span is not None]
        if e.op == "least":
            upper = min(s[1] for s in sure) if sure else max(highs)
            return rewritten(out, self.span(e, min(lows), upper), integer, nullable)
        lower = max(s[0] for s in sure) if sure else min(lows)
        return rewritten(out, self.span(e, lower, max(highs)), integer, nullable)

    def union(self, e: Expr, out: Expr, values: list[Rewritten], nullable: bool) -> Rewritten:
        spans = [v.span for v in values if v.span is not None]
        if not spans:
            return rewritten(out, None)
        integer = all(v.integer for v in values if v.span is not None)
        ends = [x for s in spans for x in s]
        return rewritten(out, self.span(e, *ends), integer, nullable)
