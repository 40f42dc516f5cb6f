"""Rewrite a plan into one engine query that clamps values and bounds each unit's contribution.

Without a privacy unit every row is one unit: a single ``GROUP BY`` with clamped sums, as cheap as the raw
query. With a privacy unit ``u`` (``m`` = max_contributions, ``G`` = max_groups):

1. per (unit, group): row count ``r`` and sums of the clamped values — one pass, partial aggregates;
2. grouped queries keep at most ``G`` groups per unit, chosen at random (``ROW_NUMBER()`` over a
   ``random()`` order per unit) among the unit's partial aggregates;
3. each unit's partials are scaled by ``f = min(1, m / R)``, ``R`` its rows in the kept groups: the unit then
   weighs exactly as ``m`` of its rows would in expectation (sampling ``m`` rows at random has this mean),
   so counts contribute at most ``m`` and sums at most ``m·B`` in total — the bound the sensitivities use —
   without the row-level shuffle that makes per-row sampling slow.
"""

from __future__ import annotations

from sqlglot import exp

from privdb.backends.duckdb import quote
from privdb.catalog.metadata import ColumnMeta
from privdb.sql.plan import Plan, Statistic

__all__ = ["engine_sql"]


def _clamped(column: ColumnMeta) -> str:
    assert column.lower is not None and column.upper is not None
    return f"LEAST(GREATEST(CAST({quote(column.name)} AS DOUBLE), {column.lower!r}), {column.upper!r})"


def _row_value(stat: Statistic) -> str:
    """The per-row quantity a statistic sums."""
    if stat.kind == "rows":
        return "1"
    assert stat.column is not None
    if stat.kind == "nonnull":
        return f"CASE WHEN {quote(stat.column.name)} IS NULL THEN 0 ELSE 1 END"
    value = _clamped(stat.column)
    if stat.kind == "sum":
        return f"COALESCE({value}, 0)"
    return f"COALESCE(POWER({value}, 2), 0)"


def engine_sql(plan: Plan, table: str) -> str:
    """The one SQL statement that computes every statistic per group."""
    keys = [k.sql for k in plan.resolved.keys]
    key_cols = [f"k{i}" for i in range(len(keys))]
    where = plan.resolved.where
    where_sql = f" WHERE {where.sql(dialect='duckdb')}" if isinstance(where, exp.Expression) else ""
    source = quote(table)
    stats = plan.statistics
    unit = plan.table.privacy_unit
    key_select = "".join(f"{k} AS {c}, " for k, c in zip(keys, key_cols, strict=True))
    group_by = f" GROUP BY {', '.join(key_cols)}" if key_cols else ""
    if unit is None:
        sums = ", ".join(
            ("COUNT(*)" if s.kind == "rows" else f"SUM({_row_value(s)})") + f" AS {s.name}" for s in stats
        )
        return f"SELECT {key_select}{sums} FROM {source}{where_sql}{group_by}"

    m = plan.table.max_contributions
    g = plan.table.max_groups
    partial = ", ".join(f"SUM({_row_value(s)}) AS {s.name}" for s in stats)
    unit_sql = quote(unit)
    parts = (
        f"SELECT {unit_sql} AS u, {key_select}COUNT(*) AS r, {partial} FROM {source}{where_sql} "
        f"GROUP BY u{''.join(', ' + c for c in key_cols)}"
    )
    if key_cols:
        # which groups a unit keeps may depend on anything but other units' data: the bound holds for
        # any choice, so DuckDB's random() (not a CSPRNG) is fine here
        shuffled = "SELECT *, random() AS rnd FROM parts"
        ranked = f"SELECT *, ROW_NUMBER() OVER (PARTITION BY u ORDER BY rnd) AS gr FROM ({shuffled})"
        kept = f"SELECT * FROM ({ranked}) WHERE gr <= {g}"
    else:
        kept = "SELECT * FROM parts"
    scaled = ", ".join(f"{s.name} * f AS {s.name}" for s in stats)
    weights = f"SELECT *, LEAST(1.0, {m} / SUM(r) OVER (PARTITION BY u)) AS f FROM kept"
    outer_keys = "".join(f"{c}, " for c in key_cols)
    totals = ", ".join(f"SUM({s.name}) AS {s.name}" for s in stats)
    return (
        f"WITH parts AS ({parts}), kept AS ({kept}), weighted AS ({weights}), "
        f"scaled AS (SELECT {outer_keys}{scaled} FROM weighted) "
        f"SELECT {outer_keys}{totals} FROM scaled{group_by}"
    )
