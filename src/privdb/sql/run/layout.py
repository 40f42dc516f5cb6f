"""User-level bounding as one scan, where the table's layout is current (privdb.backends.duckdb_layout).

Bounding scales each unit's partial aggregates by ``f = min(1, m / R)``, ``R`` its rows in the kept groups
(privdb.sql.run.rewrite). A statistic is a sum over rows, so the unit's scaled partial is the sum over its
rows of the row's value times ``f``: the answer is one weighted aggregate over the rows, no grouping by unit,
wherever ``R`` and the kept group are known on every row before the query runs. They are when the query has
no WHERE (the bound applies after WHERE, so a WHERE changes ``R``) and reads one table privdb wrote:

- ungrouped: ``R`` is the unit's rows in the whole table, the stored ``n``: weight ``min(1, m / n)``;
- GROUP BY one column with ``max_groups: 1``: the stored choice ``c`` (the unit's rows in the value drawn for
  it at write time, uniformly among its values as the query's own draw is; 0 on its other rows) keeps the
  rows with ``c > 0``, weighted ``min(1, m / c)``.

A join of a table of one row per unit with a table of many (privdb.sql.run.eager) is the same with the
many side's ``n``: a unit's joined rows are its many rows. The units over the bound (the answer's
truncation estimate) are counted in the same scan, each of its ``k`` rows adding ``1 / k``. The answers
are today's (grouped: in distribution, the draw being made once per write instead of once per query); the
work is one scan of the rows whatever the data, and a unit's rows change it by their own number only.
docs/proofs/sql.md, "One scan over the layout".

Engines without a compensated sum (Spark) take the grouped form split instead (``split_sql``): rows of a
unit whose kept group holds at most ``m`` rows weigh 1, so they take the plain aggregate; the rows of
units over ``m`` in their kept group are bounded per unit as the rewrite does. The same answer, exact.
"""

from __future__ import annotations

from privdb.backends.names import quote
from privdb.sql.plan.truncation import COLUMN as T_COLUMN
from privdb.sql.plan.types import Plan, Statistic
from privdb.sql.run.rewrite import aggregate_sql, bound_parts, computed_stats, from_item, row_value

__all__ = ["chosen_column", "layout_sql", "row_values", "split_sql", "weighted_terms"]


def chosen_column(plan: Plan) -> str | None:
    """The one GROUP BY key's column when a stored choice can stand for the query's draw (``G = 1``, a
    bare column), else None."""
    keys = plan.resolved.keys
    if len(keys) != 1 or plan.table.max_groups != 1:
        return None
    key = keys[0]
    if key.expr is None or key.expr.op != "column" or len(key.columns) != 1:
        return None
    return key.columns[0].name


def row_values(stats: list[Statistic]) -> list[tuple[str, str, bool]]:
    """Each statistic's name, what it aggregates on a row and whether it counts it (rewrite.row_value)."""
    return [(stat.name, *row_value(stat)) for stat in stats]


def weighted_terms(plan: Plan, values: list[tuple[str, str, bool]], rows: str, kept: str | None) -> str:
    """The select list of the weighted aggregates (module doc) of ``values`` (``row_values``) over rows
    carrying the unit's row count ``rows`` and (grouped) its rows in the kept group ``kept``, each
    statistic by name, then the units over the bound as ``T_COLUMN`` when the plan counts them."""
    m = plan.table.max_contributions
    den = kept or rows
    weight = f"LEAST(1.0, {m} / {den})"
    # fsum: Kahan-compensated, so a unit's n weights of m / n add up to m as its one scaled part would (a
    # plain SUM drifts in the last bits: 1,000 rows of 1 / 1,000 gave 1.0000000000000007)
    parts = []
    for name, value, counted in values:
        if counted:
            term = weight if value == "*" else f"CASE WHEN {value} IS NOT NULL THEN {weight} END"
            parts.append(f"COALESCE(fsum({term}), 0) AS {name}")
        else:
            parts.append(f"COALESCE(fsum(({value}) * {weight}), 0) AS {name}")
    if plan.truncation_epsilon > 0:
        over = f"{rows} > {m}" + (f" OR {kept} < {rows}" if kept else "")
        # each of a unit's k rows adds 1/k: exactly 1 per unit over the bound, up to rounding
        parts.append(
            f"CAST(ROUND(SUM(CASE WHEN {over} THEN 1.0 / {den} ELSE 0 END)) AS BIGINT) AS {T_COLUMN}"
        )
    return ", ".join(parts)


def layout_sql(plan: Plan, table: str, unit_rows: str, kept: str | None) -> str:
    """The statistics query of a plan over one table with a current layout and no WHERE: the hidden
    per-unit row count ``unit_rows`` and (grouped) the choice column ``kept`` (module doc)."""
    computed, twins = computed_stats(plan.statistics)
    keys = [k.sql for k in plan.resolved.keys]
    key_select = "".join(f"{k} AS k{i}, " for i, k in enumerate(keys))
    terms = weighted_terms(plan, row_values(computed), quote(unit_rows), quote(kept) if kept else None)
    where = f" WHERE {quote(kept)} > 0" if kept else ""
    by = f" GROUP BY {', '.join(str(i + 1) for i in range(len(keys)))}" if keys else ""
    inner = f"SELECT {key_select}{terms} FROM {from_item(plan, table)}{where}{by}"
    if not twins:
        return inner
    # the columns in bound_parts' order: keys, statistics, their twins, the truncation count
    names = [*(f"k{i}" for i in range(len(keys))), *(s.name for s in computed)]
    names += [f"{twin} AS {name}" for name, twin in twins.items()]
    names += [T_COLUMN] if plan.truncation_epsilon > 0 else []
    return f"SELECT {', '.join(names)} FROM ({inner})"


def split_sql(plan: Plan, table: str, unit_rows: str, kept: str, dialect: str) -> str:
    """The statistics query of a grouped plan (``chosen_column``) over one table with its layout current
    and no WHERE, without a compensated sum (module doc): units whose kept group ``kept`` holds at most
    ``m`` rows in the plain aggregate, the others bounded per unit (privdb.sql.run.rewrite.bound_parts)."""
    computed, _ = computed_stats(plan.statistics)
    unit = plan.table.privacy_unit
    assert unit is not None
    m = plan.table.max_contributions
    n, c = quote(unit_rows), quote(kept)
    keys = [k.sql for k in plan.resolved.keys]
    key_select = "".join(f"{k} AS k{i}, " for i, k in enumerate(keys))
    by = ", ".join(str(i + 1) for i in range(len(keys)))
    aggregates = ", ".join(f"{aggregate_sql(s)} AS {s.name}" for s in computed)
    source = from_item(plan, table)
    # a unit of the plain rows is over the bound when it has rows outside its kept group (more than G = 1
    # groups): each of its c kept rows adds 1 / c, in DOUBLE (Spark reads 1.0 as a DECIMAL, whose division
    # per row doubled the query's time at 10M rows)
    over = (
        f", CAST(ROUND(SUM(CASE WHEN {n} > {c} THEN CAST(1 AS DOUBLE) / {c} ELSE 0 END)) AS BIGINT) "
        f"AS {T_COLUMN}"
        if plan.truncation_epsilon > 0
        else ""
    )
    plain = f"SELECT {key_select}{aggregates}{over} FROM {source} WHERE {c} > 0 AND {c} <= {m} GROUP BY {by}"
    # the larger units, one kept group each: ur their rows, ug 1 (the rows outside are another group)
    parts = (
        f"SELECT {quote(unit)} AS u, {key_select}COUNT(*) AS r, {aggregates}, MAX({n}) AS ur, 1 AS ug "
        f"FROM {source} WHERE {c} > {m} GROUP BY 1, {', '.join(str(i + 2) for i in range(len(keys)))}"
    )
    return bound_parts(plan, parts, len(keys), dialect, plain, one_each=True)
