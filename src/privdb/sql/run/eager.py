"""The statistics query of a join on the unit with its many-rows side aggregated first.

For ``one JOIN many ON one.u = many.u`` (privdb.sql.front.unit_join), when every GROUP BY key reads only
``one``'s columns, every WHERE conjunct only one side's, and every aggregate only ``many``'s (or is
``COUNT(*)``), the per-(unit, group) partial aggregates of the join are computed without the join's rows:

1. ``many`` per unit: ``r_u`` rows and the sums of the clamped values, its WHERE conjuncts applied;
2. ``one``'s rows (its conjuncts applied) with their keys, joined to step 1 on the unit;
3. per (unit, group): the sums of step 2's ``r_u`` and sums.

A unit's joined rows in a group are its ``a`` rows of ``one`` there times its ``r_u`` rows of ``many``, so
step 3 gives exactly the join's ``COUNT(*)`` and sums per (unit, group) for any data: the bounding that
follows (``bound_parts``) is the same, and so is the answer. With ``one`` at one row per unit (its declared
``max_contributions: 1``) step 2 joins one row per unit instead of every joined row (docs/proofs/sql.md,
"Aggregating the many side first"). The SQL's shape depends only on the query and the metadata.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from privdb.backends.names import quote
from privdb.sql.front.expr import Expr, render
from privdb.sql.front.relation import Eager, Relation
from privdb.sql.plan.types import Plan
from privdb.sql.run.rewrite import aggregate_sql, bound_parts, computed_stats, positions

__all__ = ["eager_sql"]


def _conjuncts(condition: Expr | None) -> Iterator[Expr]:
    if condition is None:
        return
    if condition.op == "and":
        for arg in condition.args:
            yield from _conjuncts(arg)
    else:
        yield condition


def _rows(rel: Relation, names: Mapping[str, str], sources: Mapping[str, str]) -> str:
    """One side's rows with its columns under their names in the join."""
    select = ", ".join(f"{quote(old)} AS {quote(new)}" for old, new in names.items())
    return f"SELECT {select} FROM {rel.source(sources)} AS _e"


def _where(conditions: list[Expr]) -> str:
    return f" WHERE {' AND '.join(f'({render(c)})' for c in conditions)}" if conditions else ""


def eager_sql(plan: Plan, sources: Mapping[str, str], dialect: str) -> str | None:
    """The statistics query in the eager form (module doc), or None when the plan is not of that form."""
    eager: Eager | None = plan.relation.eager if plan.relation is not None else None
    computed, _ = computed_stats(plan.statistics)
    if eager is None or plan.table.privacy_unit is None or plan.resolved.computed or not computed:
        return None
    one, many = set(eager.one_names.values()), set(eager.many_names.values())
    if not all({c.name for c in k.columns} <= one for k in plan.resolved.keys):
        return None
    for stat in computed:
        read = {c.name for c in (stat.column, stat.column2) if c is not None}
        if not read <= many:
            return None
    conditions: dict[bool, list[Expr]] = {True: [], False: []}  # on ``one``, on ``many``
    for c in _conjuncts(plan.resolved.where):
        read = {col.name for col in c.columns}
        if read <= one:
            conditions[True].append(c)
        elif read <= many:
            conditions[False].append(c)
        else:
            return None
    aggregates = "".join(f", {aggregate_sql(s)} AS {s.name}" for s in computed)
    per_unit = (
        f"SELECT {quote(eager.many_unit)} AS u, COUNT(*) AS r{aggregates} FROM "
        f"({_rows(eager.many, eager.many_names, sources)}) AS _m{_where(conditions[False])} GROUP BY 1"
    )
    keys = [k.sql for k in plan.resolved.keys]
    key_select = "".join(f", {k} AS k{i}" for i, k in enumerate(keys))
    rows = (
        f"SELECT {quote(eager.one_unit)} AS u{key_select} FROM "
        f"({_rows(eager.one, eager.one_names, sources)}) AS _o{_where(conditions[True])}"
    )
    sums = "".join(f", SUM(m.{s.name}) AS {s.name}" for s in computed)
    outer_keys = "".join(f", o.k{i} AS k{i}" for i in range(len(keys)))
    parts = (
        f"SELECT o.u AS u{outer_keys}, SUM(m.r) AS r{sums} FROM ({rows}) AS o JOIN ({per_unit}) AS m "
        f"ON o.u = m.u GROUP BY {positions(1 + len(keys))}"
    )
    return bound_parts(plan, parts, len(keys), dialect)
