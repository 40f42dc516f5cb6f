"""The statistics query of a join on the unit with its many-rows side aggregated first.

For ``one JOIN many ON one.u = many.u`` (privdb.sql.front.relation.unit_join), when every GROUP BY key reads
only ``one``'s columns, every WHERE conjunct only one side's, and every aggregate only ``many``'s (or is
``COUNT(*)``), the per-(unit, group) partial aggregates of the join are computed without the join's rows:

1. ``many`` per unit: ``r_u`` rows and the sums of the clamped values, its WHERE conjuncts applied;
2. ``one``'s rows (its conjuncts applied) with their keys, joined to step 1 on the unit;
3. per (unit, group): the sums of step 2's ``r_u`` and sums.

A unit's joined rows in a group are its ``a`` rows of ``one`` there times its ``r_u`` rows of ``many``, so
step 3 gives exactly the join's ``COUNT(*)`` and sums per (unit, group) for any data, and the bounding that
follows (``bound_parts``) is the join form's. With ``G = 1`` (or no GROUP BY) on DuckDB and Spark, step 3 is
instead one part per unit: one of its step-2 rows chosen by the largest ``random()`` draw (ungrouped: their
sums) — the same part where the unit has one ``one`` row, as declared (``max_contributions: 1``), and still
at most ``m`` rows in one group where it has more; where ``one``'s stored per-unit row counts are current
(DuckDB, and Spark tables privdb wrote), rows of one-row units skip the choice. Where both sides' counts
are current, DuckDB weighs the join's rows of one-row units (privdb.sql.run.layout, one scan, its ``fsum``);
engines without a compensated sum instead give the plain aggregate of the joined rows of units with one
``one`` row and at most ``m`` many rows (within both bounds whatever the WHERE keeps: exact, no grouping by
unit) and bound the other units only. docs/proofs/sql.md, "Aggregating the many side first". The SQL's shape
depends only on the query, the metadata and the engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from privdb.backends.names import quote
from privdb.sql.front.expr import Expr, render
from privdb.sql.front.relation.model import Eager, Relation
from privdb.sql.plan.types import Plan, Statistic
from privdb.sql.run.layout import row_values, weighted_terms
from privdb.sql.run.rewrite import (
    ARG_MAX_DIALECTS,
    PLAIN_FLAG,
    aggregate_sql,
    bound_parts,
    computed_stats,
    positions,
)

__all__ = ["eager_sql"]


def _conjuncts(condition: Expr | None) -> Iterator[Expr]:
    if condition is None:
        return
    if condition.op == "and":
        for arg in condition.args:
            yield from _conjuncts(arg)
    else:
        yield condition


def _rows(
    rel: Relation, names: Mapping[str, str], sources: Mapping[str, str], extra: str | None = None
) -> str:
    """One side's rows with its columns under their names in the join (and the hidden column ``extra``)."""
    select = ", ".join(f"{quote(old)} AS {quote(new)}" for old, new in names.items())
    return f"SELECT {select}{f', {quote(extra)}' if extra else ''} FROM {rel.source(sources)} AS _e"


def _where(conditions: list[Expr]) -> str:
    return f" WHERE {' AND '.join(f'({render(c)})' for c in conditions)}" if conditions else ""


def eager_sql(
    plan: Plan,
    sources: Mapping[str, str],
    dialect: str,
    one_rows: str | None = None,
    many_rows: str | None = None,
) -> str | None:
    """The statistics query in the eager form (module doc), or None when the plan is not of that form.
    ``one_rows``, ``many_rows``: each side's hidden per-unit row count column, when current."""
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
    keys = [k.sql for k in plan.resolved.keys]
    key_select = "".join(f", {k} AS k{i}" for i, k in enumerate(keys))
    size = f", {quote(one_rows)} AS _n" if one_rows else ""
    rows = (
        f"SELECT {quote(eager.one_unit)} AS u{key_select}{size} FROM "
        f"({_rows(eager.one, eager.one_names, sources, one_rows)}) AS _o{_where(conditions[True])}"
    )
    key_cols = [f"k{i}" for i in range(len(keys))]
    stats = [s.name for s in computed]
    many_where = _where(conditions[False])
    weighted = plain = None
    m = plan.table.max_contributions
    if (
        one_rows
        and many_rows
        and dialect == "duckdb"
        and not conditions[False]
        and (not keys or plan.table.max_groups == 1)
    ):
        # units of one `one` row, the many side unfiltered: one weighted scan of the join (layout.py), and
        # the many side aggregated for the other units only
        weighted = _weighted(plan, _Counted(rows, eager, sources, many_rows), computed, key_cols)
        many_where = f" WHERE {quote(eager.many_unit)} IN (SELECT u FROM ({rows}) AS _s WHERE _n > 1)"
    elif one_rows and many_rows:
        # no compensated sum here: the small units' joined rows as they are (module doc), the others bounded
        plain = _plain(_Counted(rows, eager, sources, many_rows), computed, key_cols, m, many_where)
        several = f"SELECT u FROM ({rows}) AS _s WHERE _n > 1"
        others = f"{quote(many_rows)} > {m} OR {quote(eager.many_unit)} IN ({several})"
        many_where = f"{many_where} AND ({others})" if many_where else f" WHERE {others}"
    per_unit = (
        f"SELECT {quote(eager.many_unit)} AS u, COUNT(*) AS r{aggregates} FROM "
        f"({_rows(eager.many, eager.many_names, sources, many_rows if plain else None)}) AS _m{many_where} "
        "GROUP BY 1"
    )
    joined = f"({rows}) AS o JOIN ({per_unit}) AS m ON o.u = m.u"
    if weighted is not None:
        pick = _pick(joined, key_cols, stats, "o._n > 1")
        return bound_parts(plan, pick, len(keys), dialect, weighted, one_each=True)
    if one_rows and (not keys or plan.table.max_groups == 1):
        # units with one `one` row in the whole table: that row is their one part, as it stands; the others
        # go through the choice below (a unit's parts are the same either way: module doc)
        single = ", ".join([*(f"o.{c}" for c in key_cols), "m.r", *(f"m.{s.name}" for s in computed)])
        fast = f"SELECT o.u, {single}, m.r AS ur, 1 AS ug FROM {joined} WHERE o._n <= 1"
        return bound_parts(
            plan,
            f"{fast} UNION ALL {_pick(joined, key_cols, stats, 'o._n > 1')}",
            len(keys),
            dialect,
            plain,
            one_each=True,
        )
    if keys and plan.table.max_groups == 1 and dialect in ARG_MAX_DIALECTS:
        return bound_parts(plan, _pick(joined, key_cols, stats), len(keys), dialect, plain, one_each=True)
    sums = "".join(f", SUM(m.{s.name}) AS {s.name}" for s in computed)
    outer_keys = "".join(f", o.{c} AS {c}" for c in key_cols)
    parts = (
        f"SELECT o.u AS u{outer_keys}, SUM(m.r) AS r{sums} FROM {joined} GROUP BY {positions(1 + len(keys))}"
    )
    return bound_parts(plan, parts, len(keys), dialect, plain)


@dataclass(frozen=True)
class _Counted:
    """A join whose sides' per-unit row counts are current: `one`'s rows (``u``, ``k0 …``, its count
    ``_n``), the join, the sources, and the many side's hidden count column."""

    rows: str
    eager: Eager
    sources: Mapping[str, str]
    many_rows: str


def _plain(join: _Counted, computed: list[Statistic], key_cols: list[str], m: int, many_where: str) -> str:
    """The per-group aggregates of the joined rows of units with one `one` row (``rows``, with ``_n``) and
    at most ``m`` many rows in the whole table, the many side's conditions applied (``many_where``): within
    both bounds, so as they are (``PLAIN_FLAG`` where bound_parts puts their zero truncation flag). The
    `one` side's columns are renamed first, so none can meet a many column's name."""
    rows, eager, sources, many_rows = join.rows, join.eager, join.sources, join.many_rows
    hidden = "__privdb_o_"
    ones = ", ".join(f"{c} AS {hidden}{c}" for c in ["u", *key_cols, "_n"])
    many = f"SELECT * FROM ({_rows(eager.many, eager.many_names, sources, many_rows)}) AS _m{many_where}"
    keys = "".join(f"{hidden}{c} AS {c}, " for c in key_cols)
    aggregates = ", ".join(f"{aggregate_sql(s)} AS {s.name}" for s in computed)
    by = f" GROUP BY {positions(len(key_cols))}" if key_cols else ""
    on = f"o.{hidden}u = m.{quote(eager.many_unit)}"
    small = f"o.{hidden}_n <= 1 AND m.{quote(many_rows)} <= {m}"
    return (
        f"SELECT {keys}{aggregates}{PLAIN_FLAG} FROM (SELECT {ones} FROM ({rows}) AS _r) AS o "
        f"JOIN ({many}) AS m ON {on} WHERE {small}{by}"
    )


def _weighted(plan: Plan, join: _Counted, computed: list[Statistic], key_cols: list[str]) -> str:
    """The per-group weighted aggregates of the join's rows of units with one `one` row (``rows``, with
    ``_n``), each many row weighed by its unit's many rows (privdb.sql.run.layout): ``k0 …``, the
    statistics by name and the units over the bound."""
    rows, eager, sources, many_rows = join.rows, join.eager, join.sources, join.many_rows
    values = row_values(computed)
    inner = "".join(f", {value} AS _v{i}" for i, (_, value, _) in enumerate(values) if value != "*")
    many = (
        f"SELECT {quote(eager.many_unit)} AS u, {quote(many_rows)} AS _w{inner} FROM "
        f"({_rows(eager.many, eager.many_names, sources, many_rows)}) AS _m"
    )
    outer = [
        (name, value if value == "*" else f"m._v{i}", counted)
        for i, (name, value, counted) in enumerate(values)
    ]
    keys = "".join(f"o.{c} AS {c}, " for c in key_cols)
    by = f" GROUP BY {positions(len(key_cols))}" if key_cols else ""
    return (
        f"SELECT {keys}{weighted_terms(plan, outer, 'm._w', None)} FROM ({rows}) AS o JOIN ({many}) AS m "
        f"ON o.u = m.u WHERE o._n <= 1{by}"
    )


def _pick(joined: str, key_cols: list[str], stats: list[str], condition: str | None = None) -> str:
    """One part per unit from its joined `one` rows (``u, k0 …, r``, the statistics, and the unit's rows
    ``ur`` and `one` rows ``ug``): ungrouped, their sums; grouped (``G = 1``), the row of largest
    ``random()`` draw, uniform among them."""
    where = f" WHERE {condition}" if condition else ""
    if not key_cols:
        sums = "".join(f", SUM(m.{c}) AS {c}" for c in stats)
        return f"SELECT o.u, SUM(m.r) AS r{sums}, SUM(m.r) AS ur, 1 AS ug FROM {joined}{where} GROUP BY o.u"
    names = [*key_cols, "r", *stats]
    columns = ", ".join([*(f"o.{c}" for c in key_cols), *(f"m.{c}" for c in ["r", *stats])])
    fields = ", ".join(f"'{c}': {c}" for c in names)
    drawn = f"SELECT o.u AS u, {columns}, random() AS rnd FROM {joined}{where}"
    pick = (
        f"SELECT u, arg_max({{{fields}}}, rnd) AS kp, SUM(r) AS ur, COUNT(*) AS ug FROM ({drawn}) GROUP BY u"
    )
    return f"SELECT u, {', '.join(f'kp.{c} AS {c}' for c in names)}, ur, ug FROM ({pick})"
