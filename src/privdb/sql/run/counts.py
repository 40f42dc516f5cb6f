"""The engine queries of order statistics, modes (per-cell counts) and distinct counts.

Bounded as the statistics query is (privdb.sql.run.rewrite): with a privacy unit each unit keeps at most
``G`` of its groups, chosen at random — with ``G = 1`` on engines with ``arg_max`` (DuckDB, Spark) by one
aggregate per unit, its group of largest random draw, otherwise by ``ROW_NUMBER()`` over a random order per
unit — and at most ``m`` rows' weight (counts) or ``m`` distinct values (distinct counts) in them. Which
groups a unit keeps is its own random choice either way, so the bound and the argument of
docs/proofs/sql.md ("One group per unit in one aggregate") hold alike. Ungrouped on Spark, a shorter form
with the same result: cells weigh each row by its unit's ``min(1, m/R)`` through one join to the per-unit
row counts. (A distinct count there keeps the window: one aggregate per unit holding its whole set of values,
``slice(shuffle(collect_set(v)), 1, m)``, was 2.4–3.2× faster but needs the largest unit's distinct values in
one executor's memory, so whether a query fails could depend on one person's data.)
"""

from __future__ import annotations

from privdb.backends.names import quote
from privdb.sql.front.expr.render import column_sql
from privdb.sql.plan.types import Histogram, Plan, Statistic
from privdb.sql.run.rewrite import ARG_MAX_DIALECTS, clamped, from_item, keys_of, positions, ranked, where_of

__all__ = ["distinct_sql", "histogram_sql"]


def _kept_groups(groups: str, key_cols: list[str], carried: list[str], g: int, dialect: str) -> str:
    """``u, k0 …`` and ``carried`` columns of at most ``g`` of each unit's rows of ``groups`` (one per
    (unit, group), with a ``random()`` draw ``rnd``), chosen at random: the largest draw by one ``arg_max``
    per unit when ``g = 1`` and the engine has it, else the ``g`` first in a ``ROW_NUMBER()`` order."""
    names = [*key_cols, *carried]
    if g == 1 and dialect in ARG_MAX_DIALECTS:
        fields = ", ".join(f"'{c}': {c}" for c in names)
        chosen = f"SELECT u, arg_max({{{fields}}}, rnd) AS kp FROM ({groups}) GROUP BY u"
        return f"SELECT u, {', '.join(f'kp.{c} AS {c}' for c in names)} FROM ({chosen})"
    return f"SELECT u, {', '.join(names)} FROM ({ranked(groups, 'gr')}) WHERE gr <= {g}"


def _cell(hist: Histogram) -> str:
    """The cell of a row's value: its nearest grid point (order statistics) or the value itself (modes).

    Rounding, not flooring: a value between two grid points must count at one of them, so that tied values
    make one candidate's rank interval wide (a point mass wins) rather than sit between candidates that all
    see it as a gap. ``FLOOR(z + 0.5)`` is monotone in the value on every engine."""
    if hist.values is not None:
        return column_sql(hist.column)
    value = clamped(hist.column)
    if hist.integer or hist.cells == 1:
        return f"TRY(CAST(FLOOR({value}) - {hist.lo!r} AS BIGINT))"
    step = f"({value} - {hist.lo!r}) / {hist.width!r}"
    return f"LEAST({hist.cells - 1}, TRY(CAST(FLOOR({step} + 0.5) AS BIGINT)))"


def histogram_sql(
    plan: Plan,
    hist: Histogram,
    table: str,
    unit_rows: str | None = None,
    source: str | None = None,
    dialect: str = "duckdb",
) -> str:
    """Per group and cell, the (bounded) number of rows: ``k0 …, c, n``.

    Row privacy: one ``GROUP BY``. With a privacy unit the rows are bounded as for sums (module doc): at
    most ``G`` groups per unit chosen at random, and each unit's counts scaled by ``min(1, m/R)``, so a unit
    moves any rank by at most ``m``; units small enough to need no bounding take the plain path."""
    keys = keys_of(plan)
    key_cols = [f"k{i}" for i in range(len(keys))]
    cell = _cell(hist)
    # a NULL value is no candidate's: left out (LEAST in the cell ignores NULL, so test the column itself)
    conditions = [f"({quote(hist.column.name)}) IS NOT NULL", f"({cell}) IS NOT NULL"]
    condition = where_of(plan)
    if condition is not None:
        conditions.append(condition)
    key_select = "".join(f"{k} AS {c}, " for k, c in zip(keys, key_cols, strict=True))
    outer = "".join(f"{c}, " for c in key_cols)
    by = "".join(f"{c}, " for c in key_cols)
    source = from_item(plan, table, source)
    unit = plan.table.privacy_unit

    def rows(extra: str | None = None) -> str:
        cond = " AND ".join([*conditions, *([extra] if extra else [])])
        return (
            f"SELECT {key_select}{cell} AS c, COUNT(*) AS n FROM {source} WHERE {cond} "
            f"GROUP BY {positions(len(keys) + 1)}"
        )

    if unit is None:
        return rows()
    m, g = plan.table.max_contributions, plan.table.max_groups
    if dialect == "spark" and not key_cols and not unit_rows:
        # ungrouped: every row of a unit weighs min(1, m/R), R the unit's rows; each row joined to its unit's
        # count, so no per-(unit, cell) aggregate is shuffled and joined back twice (the same sums)
        cells = f"SELECT {quote(unit)} AS u, {cell} AS c FROM {source} WHERE {' AND '.join(conditions)}"
        return (
            f"WITH cells AS ({cells}), units AS (SELECT u, COUNT(*) AS total FROM cells GROUP BY u) "
            f"SELECT c, SUM(LEAST(1.0, {m} / units.total)) AS n FROM cells JOIN units "
            "ON cells.u IS NOT DISTINCT FROM units.u GROUP BY c"
        )
    small = min(m, g) if key_cols else m
    big = f"{quote(unit_rows)} > {small}" if unit_rows else None
    cond = " AND ".join([*conditions, *([big] if big else [])])
    parts = (
        f"SELECT {quote(unit)} AS u, {key_select}{cell} AS c, COUNT(*) AS r FROM {source} WHERE {cond} "
        f"GROUP BY {positions(len(keys) + 2)}"
    )
    same = " AND ".join(f"p.{c} IS NOT DISTINCT FROM kept.{c}" for c in ["u", *key_cols])
    if key_cols:
        groups = (
            f"SELECT u, {outer}SUM(r) AS rg, random() AS rnd FROM parts GROUP BY u, {', '.join(key_cols)}"
        )
        kept = _kept_groups(groups, key_cols, ["rg"], g, dialect)
    else:
        kept = "SELECT u, SUM(r) AS rg FROM parts GROUP BY u"
    scaled = (
        f"SELECT {''.join(f'p.{c}, ' for c in key_cols)}p.c, p.r * LEAST(1.0, {m} / units.total) AS n "
        f"FROM parts p JOIN kept ON {same} JOIN units ON p.u IS NOT DISTINCT FROM units.u"
    )
    body = f"{rows(f'{quote(unit_rows)} <= {small}')} UNION ALL {scaled}" if unit_rows else scaled
    units = "SELECT u, SUM(rg) AS total FROM kept GROUP BY u"
    return (
        f"WITH parts AS ({parts}), kept AS ({kept}), units AS ({units}) "
        f"SELECT {outer}c, SUM(n) AS n FROM ({body}) GROUP BY {by}c"
    )


def distinct_sql(
    plan: Plan,
    stat: Statistic,
    table: str,
    unit_rows: str | None = None,
    source: str | None = None,
    dialect: str = "duckdb",
) -> str:
    """Per group, the number of distinct non-null values of a column: ``k0 …, n``.

    Without a privacy unit (each row a unit, reaching ``k`` rows through public joins) this is
    ``COUNT(DISTINCT v)``. With one, each unit's distinct (group, value) pairs are sampled first: at most
    ``G`` of its groups, chosen at random, and at most ``m`` pairs in them, at random; a unit then adds at
    most ``m`` values over at most ``G`` groups, whatever the others hold (docs/proofs/sql.md, "Distinct
    counts"). ``COUNT(DISTINCT unit)`` is the same with the unit as the value: one per group it reaches.

    ``unit_rows`` (the hidden per-unit row count, where current): a unit with at most ``min(m, G)`` rows
    (``m`` ungrouped) has at most that many pairs and groups, so sampling keeps all of them; its rows give
    their values directly, and only larger units' pairs are drawn (the same answer, less work)."""
    assert stat.column is not None
    keys = keys_of(plan)
    key_cols = [f"k{i}" for i in range(len(keys))]
    key_select = "".join(f"{k} AS {c}, " for k, c in zip(keys, key_cols, strict=True))
    value = column_sql(stat.column)
    conditions = [f"({value}) IS NOT NULL"]
    if (condition := where_of(plan)) is not None:
        conditions.append(condition)
    where = " AND ".join(conditions)
    src = from_item(plan, table, source)
    unit = plan.table.privacy_unit
    outer = "".join(f"{c}, " for c in key_cols)
    by = f" GROUP BY {', '.join(key_cols)}" if key_cols else ""
    if unit is None:
        by_position = f" GROUP BY {positions(len(keys))}" if keys else ""
        return f"SELECT {key_select}COUNT(DISTINCT {value}) AS n FROM {src} WHERE {where}{by_position}"
    m, g = plan.table.max_contributions, plan.table.max_groups
    small = min(m, g) if key_cols else m
    big = f" AND {quote(unit_rows)} > {small}" if unit_rows else ""
    pairs = f"SELECT DISTINCT {quote(unit)} AS u, {key_select}{value} AS v FROM {src} WHERE ({where}){big}"
    chosen = "pairs"
    ctes = [f"pairs AS ({pairs})"]
    if key_cols:
        same = " AND ".join(f"p.{c} IS NOT DISTINCT FROM kg.{c}" for c in ["u", *key_cols])
        groups = (
            f"SELECT u, {outer}random() AS rnd FROM (SELECT DISTINCT u, {', '.join(key_cols)} FROM pairs)"
        )
        ctes.append(f"kg AS ({_kept_groups(groups, key_cols, [], g, dialect)})")
        ctes.append(f"pairs_g AS (SELECT p.* FROM pairs p JOIN kg ON {same})")
        chosen = "pairs_g"
    shuffled = f"SELECT *, random() AS rnd FROM {chosen}"
    ctes.append(f"kept AS (SELECT * FROM ({ranked(shuffled, 'pr')}) WHERE pr <= {m})")
    values = "kept"
    if unit_rows:  # the small units' values, each kept
        plain = (
            f"SELECT {key_select}{value} AS v FROM {src} WHERE ({where}) AND {quote(unit_rows)} <= {small}"
        )
        values = f"(SELECT {outer}v FROM kept UNION ALL {plain}) AS _v"
    return f"WITH {', '.join(ctes)} SELECT {outer}COUNT(DISTINCT v) AS n FROM {values}{by}"
