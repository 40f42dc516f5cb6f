"""Rewrite a plan into one engine query that clamps values and bounds each unit's contribution.

Without a privacy unit every row is one unit: a single ``GROUP BY`` with clamped sums, as cheap as the raw
query. With a privacy unit ``u`` (``m`` = max_contributions, ``G`` = max_groups):

1. per (unit, group): row count ``r`` and sums of the clamped values — one pass, partial aggregates;
2. grouped queries keep at most ``G`` groups per unit, chosen at random among the unit's partial
   aggregates: with ``G = 1`` on DuckDB and Spark one ``arg_max(part, random())`` per unit, otherwise
   ``ROW_NUMBER()`` over a ``random()`` order per unit;
3. each unit's partials are scaled by ``f = min(1, m / R)``, ``R`` its rows in the kept groups: the unit then
   weighs exactly as ``m`` of its rows would in expectation (sampling ``m`` rows at random has this mean),
   so counts contribute at most ``m`` and sums at most ``m·B`` in total — the bound the sensitivities use —
   without the row-level shuffle that makes per-row sampling slow.

The same pass counts the units over the bound (more than ``m`` rows, or grouped more than ``G`` groups,
after the WHERE) for the answer's truncation estimate (privdb.sql.plan.truncation).

Units with at most ``min(m, G)`` rows in the whole table (``m`` when ungrouped) can break neither bound, so
when the table carries a current per-row unit size (a hidden column kept by the backend), their rows take
the plain aggregate and only the larger units go through steps 1–3 (``UNION ALL`` of the two). The answer is
the same as bounding every unit; only the work differs.
"""

from __future__ import annotations

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta
from privdb.sql.front.expr import render
from privdb.sql.front.expr.render import clamp_sql
from privdb.sql.plan.sensitivity import DISTINCT_KINDS
from privdb.sql.plan.truncation import COLUMN as T_COLUMN
from privdb.sql.plan.types import Plan, Statistic

ARG_MAX_DIALECTS = ("duckdb", "spark")  # engines with arg_max (Spark: max_by, by sqlglot's transpiler)
PLAIN_FLAG = "\0zero"  # in ``bound_parts``' plain rows: where their (zero) truncation flag goes

__all__ = [
    "ARG_MAX_DIALECTS",
    "PLAIN_FLAG",
    "aggregate_sql",
    "bound_parts",
    "clamped",
    "computed_stats",
    "engine_sql",
    "from_item",
    "keys_of",
    "positions",
    "ranked",
    "row_value",
    "truncation_sql",
    "where_of",
]


def from_item(plan: Plan, table: str, source: str | None = None) -> str:
    """What the engine SQL reads: the quoted table (or ``source``, the relation of a subquery or JOIN),
    with the hidden columns of aggregate arguments that are expressions (``AVG(age * 12)``) added."""
    base = source if source is not None else quote(table)
    computed = plan.resolved.computed
    if not computed:
        return base
    extra = ", ".join(f"{sql} AS {quote(name)}" for name, sql in computed)
    return f"(SELECT *, {extra} FROM {base} AS _s)"


def clamped(column: ColumnMeta) -> str:
    """The value as DOUBLE, clamped to its declared bounds. NULL stays NULL (aggregates skip it); DuckDB
    orders NaN above every number, so NaN clamps to the upper bound, as it does with LEAST/GREATEST.

    Always DOUBLE, whatever the column's type: an integer, REAL or DECIMAL column would otherwise be summed
    and multiplied in its own type (DuckDB reads ``0.0`` as a DECIMAL literal), and an overflow there on
    some rows would make the query fail depending on the data (``SUM(a * b)`` of two INTEGER columns)."""
    assert column.lower is not None and column.upper is not None
    name = quote(column.name)
    numeric = (column.storage or column.type) in ("int", "float")  # compared as stored (clamp_sql)
    return clamp_sql(
        f"TRY_CAST({name} AS DOUBLE)", column.lower, column.upper, stored=name if numeric else None
    )


def where_of(plan: Plan) -> str | None:
    """The WHERE predicate in its total rendering (privdb.sql.front.expr: no row can make it fail)."""
    where = plan.resolved.where
    return None if where is None else render(where)


def keys_of(plan: Plan) -> list[str]:
    return [k.sql for k in plan.resolved.keys]


def row_value(stat: Statistic) -> tuple[str, bool]:
    """What a statistic aggregates on each row, and whether it counts the rows where that is not NULL
    (``*``: every row) rather than summing it."""
    if stat.kind == "rows":
        return "*", True
    assert stat.column is not None
    if stat.kind == "nonnull":
        return quote(stat.column.name), True
    value = clamped(stat.column)
    if stat.column2 is not None:  # two-column statistics: over rows where both values are present
        other = clamped(stat.column2)
        if stat.kind == "pn":
            return f"{value} + {other}", True
        if stat.kind == "pprod":
            return f"{value} * {other}", False
        power = value if stat.kind == "psum" else f"POWER({value}, 2)"
        return f"CASE WHEN {other} IS NOT NULL THEN {power} END", False
    return (value if stat.kind == "sum" else f"POWER({value}, 2)"), False


def aggregate_sql(stat: Statistic) -> str:
    """The engine aggregate of one statistic over a set of rows (a group, or one unit's rows in it)."""
    value, counted = row_value(stat)
    return f"COUNT({value})" if counted else f"COALESCE(SUM({value}), 0)"


def ranked(rows: str, rank: str) -> str:
    """``rows`` (carrying a unit ``u`` and a ``random()`` draw ``rnd``) with each row's rank among its
    unit's rows in that random order: keeping ranks ≤ k keeps k of a unit's rows, chosen at random."""
    return f"SELECT *, ROW_NUMBER() OVER (PARTITION BY u ORDER BY rnd) AS {rank} FROM ({rows})"


def positions(n: int) -> str:
    return ", ".join(str(i + 1) for i in range(n))


def computed_stats(stats: tuple[Statistic, ...] | list[Statistic]) -> tuple[list[Statistic], dict[str, str]]:
    """Statistics the engine must compute, and for each repeated one (AVG's sum beside SUM's), the name of
    the computed twin. Each statistic still gets its own noise: only the exact aggregate is shared."""
    first: dict[str, str] = {}
    twins: dict[str, str] = {}
    computed: list[Statistic] = []
    for stat in stats:
        if stat.kind in DISTINCT_KINDS:  # their own query (distinct_sql)
            continue
        expr = aggregate_sql(stat)
        if expr in first:
            twins[stat.name] = first[expr]
        else:
            first[expr] = stat.name
            computed.append(stat)
    return computed, twins


def engine_sql(
    plan: Plan, table: str, unit_rows: str | None = None, source: str | None = None, dialect: str = "duckdb"
) -> str:
    """The one SQL statement that computes every statistic per group.

    ``unit_rows`` names the hidden column holding each row's unit size in the whole table (see
    ``DuckDBBackend.write_layout``): units with at most ``min(m, G)`` rows can exceed neither bound,
    so their rows take the plain aggregate, and only larger units go through bounding. ``dialect``: the
    engine the SQL is for (transpiled later, ``for_engine``); where it has ``arg_max`` (DuckDB, Spark's
    ``max_by``) a grouped query with ``G = 1`` keeps each unit's group with one aggregate, no window.
    """
    keys = keys_of(plan)
    key_cols = [f"k{i}" for i in range(len(keys))]
    condition = where_of(plan)
    source = from_item(plan, table, source)
    computed, twins = computed_stats(plan.statistics)
    if not computed:
        return ""  # only order statistics or modes: their histogram queries read the data
    unit = plan.table.privacy_unit
    key_select = "".join(f"{k} AS {c}, " for k, c in zip(keys, key_cols, strict=True))
    # over the table itself, group by position: a table column named like an output (k0, u, c, n) would
    # otherwise win the name lookup
    by_position = f" GROUP BY {positions(len(keys))}" if key_cols else ""
    copies = "".join(f", {twin} AS {name}" for name, twin in twins.items())

    def where_sql(*conditions: str | None) -> str:
        parts = [f"({c})" for c in conditions if c]
        return f" WHERE {' AND '.join(parts)}" if parts else ""

    aggregates = ", ".join(f"{aggregate_sql(s)} AS {s.name}" for s in computed)
    if unit is None:
        inner = f"SELECT {key_select}{aggregates} FROM {source}{where_sql(condition)}{by_position}"
        return f"SELECT *{copies} FROM ({inner})" if twins else inner

    m, g = plan.table.max_contributions, plan.table.max_groups
    small = min(m, g) if key_cols else m  # a unit this small is within both bounds whatever it does
    split = f"{quote(unit_rows)} > {small}" if unit_rows else None
    parts = (
        f"SELECT {quote(unit)} AS u, {key_select}COUNT(*) AS r, {aggregates} FROM {source}"
        f"{where_sql(condition, split)} GROUP BY {positions(1 + len(keys))}"
    )
    plain = None
    if unit_rows:  # the plain aggregate of the small units' rows
        plain = (
            f"SELECT {key_select}{aggregates}{PLAIN_FLAG} FROM {source}"
            f"{where_sql(condition, f'{quote(unit_rows)} <= {small}')}{by_position}"
        )
    return bound_parts(plan, parts, len(keys), dialect, plain)


def bound_parts(
    plan: Plan, parts: str, n_keys: int, dialect: str, plain: str | None = None, one_each: bool = False
) -> str:
    """Steps 2–3 of the module doc over ``parts``, the SQL of the per-(unit, group) partial aggregates
    (``u, k0 …, r`` and each computed statistic by name): the statistics query of a plan with a privacy
    unit. ``plain``: the rows that need no bounding, aggregated per group (``PLAIN_FLAG`` where the truncation
    flag goes), added to the bounded ones. ``one_each``: ``parts`` already holds one group per unit, with the
    unit's rows ``ur`` and groups ``ug`` before the choice (privdb.sql.run.eager)."""
    computed, twins = computed_stats(plan.statistics)
    key_cols = [f"k{i}" for i in range(n_keys)]
    outer_keys = "".join(f"{c}, " for c in key_cols)
    group_by = f" GROUP BY {', '.join(key_cols)}" if key_cols else ""
    m, g = plan.table.max_contributions, plan.table.max_groups
    counted = plan.truncation_epsilon > 0  # the number of units over the bound, in the same pass
    if one_each:
        kept = "SELECT * FROM parts"
        over = f"CASE WHEN ur > {m} OR ug > {g} THEN 1 ELSE 0 END"
    elif key_cols and g == 1 and dialect in ARG_MAX_DIALECTS:
        # one aggregate per unit: its part of largest random draw (uniform among its parts) as one struct,
        # so the kept key, r and sums are one part's; the unit's rows and parts before the cut beside it
        names = [*key_cols, "r", *(s.name for s in computed)]
        fields = ", ".join(f"'{c}': {c}" for c in names)
        tally = ", SUM(r) AS ur, COUNT(*) AS ug" if counted else ""
        drawn = "SELECT *, random() AS rnd FROM parts"
        chosen = f"SELECT arg_max({{{fields}}}, rnd) AS kp{tally} FROM ({drawn}) GROUP BY u"
        kept = f"SELECT {', '.join(f'kp.{c} AS {c}' for c in names)}{tally and ', ur, ug'} FROM ({chosen})"
        over = f"CASE WHEN ur > {m} OR ug > {g} THEN 1 ELSE 0 END"
    elif key_cols:
        # which groups a unit keeps may depend on anything but other units' data: the bound holds for
        # any choice, so DuckDB's random() (not a CSPRNG) is fine here
        # (DuckDB refuses a volatile window order, so random() is drawn a level below)
        shuffled = "SELECT *, random() AS rnd FROM parts"
        whole = (
            ", SUM(r) OVER (PARTITION BY u) AS ur, COUNT(*) OVER (PARTITION BY u) AS ug" if counted else ""
        )
        ranks = f"SELECT *{whole} FROM ({ranked(shuffled, 'gr')})"
        kept = f"SELECT * FROM ({ranks}) WHERE gr <= {g}"
        # one flag per unit, on its first kept group: its rows or groups before the cut exceed the bound
        over = f"CASE WHEN gr = 1 AND (ur > {m} OR ug > {g}) THEN 1 ELSE 0 END"
    else:
        kept = "SELECT * FROM parts"
        over = f"CASE WHEN r > {m} THEN 1 ELSE 0 END"  # ungrouped: one part per unit, r its rows
    flag, zero, total = (
        (f", {over} AS {T_COLUMN}", f", 0 AS {T_COLUMN}", f", SUM({T_COLUMN}) AS {T_COLUMN}")
        if counted
        else ("", "", "")
    )
    # one group per unit is left when ungrouped or G = 1: its own r is then the unit's R, no window needed
    rows = "r" if not key_cols or g == 1 else "SUM(r) OVER (PARTITION BY u)"
    scaled = ", ".join(f"{s.name} * LEAST(1.0, {m} / {rows}) AS {s.name}" for s in computed)
    bounded = f"SELECT {outer_keys}{scaled}{flag} FROM ({kept})"
    if plain is not None:
        bounded = f"{plain.replace(PLAIN_FLAG, zero)} UNION ALL {bounded}"
    totals = ", ".join(f"SUM({s.name}) AS {s.name}" for s in computed)
    return (
        f"WITH parts AS ({parts}) SELECT {outer_keys}{totals}"
        + "".join(f", SUM({twin}) AS {name}" for name, twin in twins.items())
        + f"{total} FROM ({bounded}){group_by}"
    )


def truncation_sql(plan: Plan, table: str, unit_rows: str | None = None, source: str | None = None) -> str:
    """The number of units over the bound (``t_over``) as a query of its own, for plans whose statistics
    query has no place for it (only order statistics, modes or distinct counts; "" otherwise): a unit is
    over when its rows kept by the WHERE number more than ``m``, or (grouped) reach more than ``G`` groups.
    Units with at most ``min(m, G)`` rows in the table (``m`` ungrouped) cannot be, so they are skipped
    where the hidden per-unit row count allows."""
    unit = plan.table.privacy_unit
    if unit is None or plan.truncation_epsilon <= 0 or computed_stats(plan.statistics)[0]:
        return ""  # no estimate, or the statistics query (engine_sql) counts them
    keys = keys_of(plan)
    m, g = plan.table.max_contributions, plan.table.max_groups
    small = min(m, g) if keys else m
    conditions = [c for c in (where_of(plan), f"{quote(unit_rows)} > {small}" if unit_rows else None) if c]
    where = f" WHERE {' AND '.join(f'({c})' for c in conditions)}" if conditions else ""
    key_select = "".join(f", {k} AS k{i}" for i, k in enumerate(keys))
    parts = (
        f"SELECT {quote(unit)} AS u{key_select}, COUNT(*) AS r FROM {from_item(plan, table, source)}{where} "
        f"GROUP BY {positions(1 + len(keys))}"
    )
    over = f"SUM(r) > {m}" + (f" OR COUNT(*) > {g}" if keys else "")
    return (
        f"WITH parts AS ({parts}) SELECT COUNT(*) AS {T_COLUMN} FROM "
        f"(SELECT u FROM parts GROUP BY u HAVING {over}) AS _o"
    )
