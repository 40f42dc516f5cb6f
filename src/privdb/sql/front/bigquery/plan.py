"""BigQuery's differentially private query read against its table: the DP-SELECT it asks.

The table's metadata decides (docs/answers.md, "BigQuery / ZetaSQL syntax"):

- ``privacy_unit_column`` must name the table's own privacy unit; a table without one refuses it.
- ``max_groups_contributed`` (``kappa``) may lower the table's ``max_groups``, never raise it: the plan's G
  is the smaller (:func:`tighten`); a larger one is refused.
- COUNT, SUM and AVG aggregate each privacy unit first, as BigQuery's do: over a table with a privacy unit
  the query becomes a per-unit subquery grouped by the unit and the keys, and the outer query sums (COUNT,
  SUM) or averages (AVG) the units' values, each clamped to its ``contribution_bounds_per_group``. Without a
  privacy unit each row is a unit and the row's value is clamped.
- PERCENTILE_CONT, VAR_POP and STDDEV_POP clamp each row to its ``contribution_bounds_per_row``.
- ``FROM t RIGHT OUTER JOIN (SELECT DISTINCT k FROM public) USING (k) GROUP BY k``: public groups, the
  per-unit values RIGHT JOINed to the public keys (privdb.sql.front.bigquery.groups).
- ``FROM t CROSS JOIN UNNEST([1, 2, 3]) AS x``: the literal array joined to the table inside the per-unit
  subquery, each unit bounded after the join (privdb.sql.front.bigquery.unnest).
- ``max_rows_contributed=r``: the plan's m narrowed to r (G to at most r), never widened (:func:`tighten`);
  COUNT and SUM are then DP-SELECT's over each unit's bounded rows.

Bounds are clamps written into the query (``LEAST(GREATEST(v, lower), upper)``) on top of the clamping the
metadata's bounds already impose, so the effective bounds are the intersection: a query's bounds can narrow
the metadata's and never widen them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from sqlglot import exp

from privdb.catalog.metadata import TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql.front.bigquery.groups import GROUPS, groups_join, over_groups
from privdb.sql.front.bigquery.unnest import split_unnest
from privdb.sql.front.query import Bounds, DPQuery, Options
from privdb.sql.front.relation.model import Relation, Tables

__all__ = ["dp_select_text", "tighten", "translate", "value_range"]

_GROUPED = (exp.Count, exp.Sum, exp.Avg)  # BigQuery aggregates each privacy unit first
_ROWS = (exp.PercentileCont, exp.VariancePop, exp.StddevPop)  # clamped per row
_FUNCTIONS = "COUNT, SUM, AVG, PERCENTILE_CONT, VAR_POP and STDDEV_POP"
PER_UNIT = "per_unit"  # the alias of the per-unit subquery


def dp_select_text(query: DPQuery) -> str:
    """The DP-SELECT a translated query is (what explain shows and the docs' property tests compare)."""
    return f"DP-SELECT {query.epsilon!r} DELTA {query.delta!r} {query.body()[len('SELECT ') :]}"


def translate(query: DPQuery, tables: Tables) -> DPQuery:
    """The DP-SELECT ``query`` (read from BigQuery's spelling) asks of its one table, or the refusal that
    says what to change. Reads the table's metadata only (authorised first), never its rows."""
    options = query.bigquery
    assert options is not None
    select = query.select
    table = _one_table(select)
    meta = tables.meta(table.name)
    _check_unit(options, meta, table)
    groups = options.max_groups
    if groups is not None and groups > meta.max_groups:
        raise InvalidParameter(
            f"max_groups_contributed={groups} is above the owner's max_groups for {table.name!r} "
            f"({meta.max_groups}): a query may narrow the owner's bounds, never widen them; write "
            f"max_groups_contributed={meta.max_groups} or less, or leave it out"
        )
    items = [_item(i, node, options) for i, node in enumerate(select.expressions)]
    rows = options.max_rows
    if rows is not None:
        _check_rows(rows, meta, table, items)
    grouped = any(isinstance(agg, _GROUPED) for _, agg, _ in items if agg is not None)
    per_row = [agg for _, agg, _ in items if agg is not None and not isinstance(agg, _GROUPED)]
    if meta.privacy_unit is not None and grouped and per_row and rows is None:
        raise UnsupportedQuery(
            f"{per_row[0].sql(dialect='duckdb')}: BigQuery computes COUNT, SUM and AVG per privacy unit "
            "first and PERCENTILE_CONT, VAR_POP, STDDEV_POP per row; ask them in two queries"
        )
    if meta.privacy_unit is not None and grouped and rows is None:
        written = _per_unit(select, items, meta, table)
    elif split_unnest(select)[1]:
        raise UnsupportedQuery(
            "public groups (RIGHT OUTER JOIN …) are read for COUNT, SUM and AVG per privacy unit; write "
            "DP-SELECT ε … for the others"
        )
    else:
        written = _per_row(select, items, meta)
    tightened = groups if groups is not None and groups < meta.max_groups else None
    narrowed = rows if rows is not None and rows < meta.max_contributions else None
    return replace(
        query,
        select=written,
        bigquery=None,
        max_groups=tightened,
        max_rows=narrowed,
        selection=options.selection,
    )


def tighten(relation: Relation, query: DPQuery) -> Relation:
    """The relation with the query's ``max_groups_contributed`` as its G, and its
    ``max_rows_contributed`` as its m (and G at most m), where those are smaller."""
    meta = relation.meta
    m = min(meta.max_contributions, query.max_rows or meta.max_contributions)
    g = min(meta.max_groups, query.max_groups or meta.max_groups)
    g = g if query.max_rows is None else min(g, m)  # r rows reach at most r groups
    if (m, g) == (meta.max_contributions, meta.max_groups):
        return relation
    return replace(relation, meta=replace(meta, max_contributions=m, max_groups=g))


def _check_rows(rows: int, meta: TableMeta, table: exp.Table, items: list[Item]) -> None:
    """``max_rows_contributed=r``: each unit's rows in the whole query, sampled to ``r`` after any join (as
    ZetaSQL samples them), so COUNT and SUM are DP-SELECT's over the bounded rows. It may narrow the
    owner's ``max_contributions``, never widen it; AVG and per-group bounds are per unit, which the
    rows' bound is not: refused."""
    if rows > meta.max_contributions:
        raise InvalidParameter(
            f"max_rows_contributed={rows} is above the owner's max_contributions for {table.name!r} "
            f"({meta.max_contributions}): a query may narrow the owner's bounds, never widen them; write "
            f"max_rows_contributed={meta.max_contributions} or less, or leave it out"
        )
    for _, agg, bounds in items:
        if isinstance(agg, exp.Avg) or (bounds is not None and bounds.per == "group"):
            raise UnsupportedQuery(
                "with max_rows_contributed, COUNT and SUM are over each unit's bounded rows, without "
                "per-unit AVG or contribution_bounds_per_group; ask those with max_groups_contributed "
                "instead"
            )


def _one_table(select: exp.Select) -> exp.Table:
    source = select.args.get("from_") or select.args.get("from")
    table = source.this if source is not None else None
    joins = split_unnest(select)[1]
    if (joins and groups_join(select) is None) or not isinstance(table, exp.Table) or table.args.get("db"):
        raise UnsupportedQuery(
            "BigQuery's spelling is read over one table in FROM (FROM professors), maybe CROSS JOIN "
            "UNNEST([…]) AS x or RIGHT JOINed to public groups; for other joins and subqueries "
            "write DP-SELECT ε … (docs/answers.md)"
        )
    if select.args.get("with_") or select.args.get("with"):
        raise UnsupportedQuery("WITH … AS (…) before BigQuery's spelling: write DP-SELECT ε … instead")
    return table


def _check_unit(options: Options, meta: TableMeta, table: exp.Table) -> None:
    if options.unit is None:
        return
    named = f"privacy_unit_column={'.'.join(filter(None, (options.unit_qualifier, options.unit)))}"
    if meta.privacy_unit is None:
        raise InvalidParameter(
            f"{named}: table {table.name!r} has no privacy unit (each row is one person); remove "
            "privacy_unit_column, or ask the owner to declare privacy_unit in the metadata"
        )
    known = {table.name.lower(), table.alias_or_name.lower()}
    if options.unit.lower() != meta.privacy_unit.lower() or (
        options.unit_qualifier is not None and options.unit_qualifier.lower() not in known
    ):
        raise InvalidParameter(
            f"{named}: the privacy unit of {table.name!r} is {meta.privacy_unit!r} (declared by the owner); "
            f"write privacy_unit_column={meta.privacy_unit} or leave it out"
        )


Item = tuple[exp.Expression, exp.Expression | None, Bounds | None]  # the item, its aggregate, its bounds


def _item(i: int, node: exp.Expression, options: Options) -> Item:
    """A select item: a key (no aggregate), one of BigQuery's DP aggregates, or an expression over one row
    aggregate (``ABS(PERCENTILE_CONT(x, 0.4) - 1.5) < 0.01``: post-processing of its noisy value), with
    its bounds."""
    inner = node.unalias()
    bounds = options.bounds_of(i)
    if not isinstance(inner, exp.AggFunc):
        found = list(inner.find_all(exp.AggFunc))
        if bounds is None and not found:
            return node, None, None
        over_units = bool(found) and all(isinstance(f, _GROUPED) for f in found) and bounds is None
        if not over_units and (len(found) != 1 or not isinstance(found[0], _ROWS)):
            raise UnsupportedQuery(
                f"{inner.sql(dialect='duckdb')}: BigQuery's spelling takes keys and aggregates as they are "
                f"({_FUNCTIONS}), and expressions over one PERCENTILE_CONT, VAR_POP or STDDEV_POP or over "
                "COUNT, SUM and AVG without bounds; write DP-SELECT ε … for others"
            )
        inner = found[0]
    if not isinstance(inner, _GROUPED + _ROWS):
        raise UnsupportedQuery(
            f"{inner.sql(dialect='duckdb')}: BigQuery's differentially private aggregates are {_FUNCTIONS}; "
            "write DP-SELECT ε … for the others"
        )
    if isinstance(inner.this, exp.Distinct):
        raise UnsupportedQuery(
            "COUNT(DISTINCT …) is not one of BigQuery's DP aggregates; write DP-SELECT ε …"
        )
    name = type(inner).__name__
    if bounds is not None and isinstance(inner, _GROUPED) and bounds.per != "group":
        raise UnsupportedQuery(f"{name.upper()} takes contribution_bounds_per_group, not _per_row")
    if bounds is not None and isinstance(inner, _ROWS) and bounds.per != "row":
        raise UnsupportedQuery(
            f"{inner.sql(dialect='duckdb')} takes contribution_bounds_per_row (each row is clamped), "
            "not _per_group"
        )
    return node, inner, bounds


def value_range(agg: exp.Expression, meta: TableMeta, per_unit: bool) -> tuple[float, float]:
    """The values the clamped quantity can take by the metadata alone: a row's value, or (``per_unit``) a
    unit's COUNT [0, m], SUM m·[min(L, 0), max(U, 0)] or AVG [L, U] in a group."""
    m = meta.max_contributions
    if isinstance(agg, exp.Count):
        return 0.0, float(m)
    arg = agg.this
    if not isinstance(arg, exp.Column):
        raise UnsupportedQuery(
            f"{agg.sql(dialect='duckdb')}: contribution bounds apply to a column here; write DP-SELECT ε … "
            "with the clamp you mean for an expression"
        )
    column = meta.column(arg.name)
    lower = -math.inf if column.lower is None else column.lower
    upper = math.inf if column.upper is None else column.upper
    if per_unit and isinstance(agg, exp.Sum):
        return m * min(lower, 0.0), m * max(upper, 0.0)
    return lower, upper


def _clamp(
    value: exp.Expression, bounds: Bounds | None, known: tuple[float, float], what: str
) -> exp.Expression:
    """``value`` clamped to the query's bounds met with what the metadata allows (``known``): never wider;
    NULL stays NULL (skipped, as BigQuery skips it); the value itself where the bounds change nothing."""
    if bounds is None:
        return value
    lower, upper = max(bounds.lower, known[0]), min(bounds.upper, known[1])
    if lower > upper:
        raise InvalidParameter(
            f"{what}: contribution bounds ({bounds.lower:g}, {bounds.upper:g}) do not meet the values it can "
            f"take by the metadata ({known[0]:g}, {known[1]:g}); choose bounds inside those"
        )
    if (lower, upper) == known:
        return value
    clamped = exp.func("LEAST", exp.func("GREATEST", value, _literal(lower)), _literal(upper))
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null())], default=clamped
    )


def _literal(x: float) -> exp.Expression:
    return exp.Literal.number(int(x) if x.is_integer() else repr(x))


def _per_row(select: exp.Select, items: list[Item], meta: TableMeta) -> exp.Select:
    """Each aggregate over its clamped argument (no privacy unit, or per-row aggregates only)."""
    out = select.copy()
    for (_, agg, bounds), target in zip(items, out.expressions, strict=True):
        if agg is None or bounds is None:
            continue
        inner = target.unalias()
        inner = inner if isinstance(inner, exp.AggFunc) else next(inner.find_all(exp.AggFunc))
        if isinstance(agg, exp.Count):
            _count_bounds(bounds, agg)
            continue
        inner.set(
            "this", _clamp(inner.this, bounds, value_range(agg, meta, False), agg.sql(dialect="duckdb"))
        )
    return out


def _count_bounds(bounds: Bounds, agg: exp.Expression) -> None:
    """Without a privacy unit a row adds 1 to COUNT(*) (0 or 1 to COUNT(x)): bounds that change that would
    count something else, so they must include it."""
    least = 1 if isinstance(agg.this, exp.Star) else 0
    if not bounds.lower <= least or bounds.upper < 1:
        raise InvalidParameter(
            f"{agg.sql(dialect='duckdb')}: each row is one person here and adds "
            f"{least if least else '0 or'} 1 to the count; contribution_bounds_per_group => "
            f"({bounds.lower:g}, {bounds.upper:g}) must include that (e.g. (0, 1)), or leave the bounds out"
        )


class _UnitValues:
    """The per-unit subquery's columns of the aggregates (``inner``, ``middle`` with public groups) and
    the outer aggregate of each unit's clamped value."""

    def __init__(self, meta: TableMeta, joined: bool, inner: list[Any], middle: list[Any]) -> None:
        self.meta, self.joined, self.inner, self.middle = meta, joined, inner, middle

    def combined(self, agg: exp.Expression, name: str, bounds: Bounds | None) -> exp.Expr:
        """``SUM`` (``AVG``) of each unit's clamped ``agg``, a count cast to BIGINT as BigQuery's INT64
        (the noisy sum rounded: post-processing)."""
        self.inner.append(exp.alias_(agg.copy(), name))
        value = _clamp(exp.column(name), bounds, value_range(agg, self.meta, True), agg.sql(dialect="duckdb"))
        if self.joined:
            self.middle.append(exp.alias_(value, name))
            value = exp.column(name, table=PER_UNIT)
        combined: exp.Expression = exp.Avg(this=value) if isinstance(agg, exp.Avg) else exp.Sum(this=value)
        if isinstance(agg, exp.Count):
            combined = exp.Cast(this=combined, to=exp.DataType.build("BIGINT"))
        return combined

    def expression(self, node: exp.Expression, name: str) -> exp.Expr:
        """``IF(COUNT(*) > 0, COUNT(*), …)``: each distinct aggregate a per-unit column once (the same
        aggregate twice is one release), the expression over their outer aggregates."""
        written = node.unalias().copy()
        seen: dict[str, exp.Expr] = {}
        for found in list(written.find_all(exp.AggFunc)):
            key = found.sql(dialect="duckdb")
            if key not in seen and isinstance(found, exp.Expression):
                seen[key] = self.combined(found, f"{name}_{len(seen) + 1}", None)
            found.replace(seen[key].copy())
        return exp.alias_(written, node.alias) if node.alias else written


def _per_unit(select: exp.Select, items: list[Item], meta: TableMeta, table: exp.Table) -> exp.Select:
    """``SELECT keys, OUTER(clamp(v)) FROM (SELECT unit, keys, AGG(x) AS v FROM t WHERE … GROUP BY unit,
    keys) GROUP BY keys``: each unit's COUNT, SUM or AVG per group, clamped, then summed or averaged."""
    if select.args.get("having"):
        raise UnsupportedQuery("HAVING with BigQuery's spelling: write DP-SELECT ε … instead")
    group = select.args.get("group")
    keys = list(group.expressions) if group is not None else []
    if not all(isinstance(k, exp.Column) for k in keys):
        raise UnsupportedQuery(
            "BigQuery's spelling groups by columns here (GROUP BY item); for expressions "
            "write DP-SELECT ε … with a subquery"
        )
    unit = str(meta.privacy_unit)
    qualifier = table.alias_or_name
    join = groups_join(select)  # public groups: the clamps go in a middle subquery (privdb…bigquery.groups)
    inner_items: list[Any] = [exp.column(unit, table=qualifier)]
    inner_items += [exp.alias_(k.copy(), k.name) for k in keys]
    middle_items: list[Any] = [exp.column(unit)] + [exp.column(k.name) for k in keys]
    outer_items: list[Any] = []
    per_unit = _UnitValues(meta, join is not None, inner_items, middle_items)
    for n, (node, agg, bounds) in enumerate(items):
        if agg is None:
            table_of = GROUPS if join is not None else None
            outer_items.append(
                exp.alias_(exp.column(node.unalias().name, table=table_of), node.alias_or_name)
            )
            continue
        name = node.alias or f"{type(agg).__name__.lower()}_{n + 1}"
        if node.unalias() is not agg:  # an expression over several: post-processing of their noisy values
            outer_items.append(per_unit.expression(node, node.alias or f"expr_{n + 1}"))
            continue
        outer_items.append(exp.alias_(per_unit.combined(agg, name, bounds), name))
    inner = exp.select(*inner_items).from_(table.copy())
    for array in split_unnest(select)[0]:  # each unit's rows joined with the array (bigquery.unnest)
        inner.append("joins", array.copy())
    if (where := select.args.get("where")) is not None:
        inner.set("where", where.copy())
    inner = inner.group_by(exp.column(unit, table=qualifier), *[k.copy() for k in keys])
    if join is not None:
        middle = exp.select(*middle_items).from_(
            exp.alias_(exp.Subquery(this=inner), "per_unit_values", table=True)
        )
        outer = over_groups(middle, join, keys[0].name, outer_items)
    else:
        outer = exp.select(*outer_items).from_(exp.alias_(exp.Subquery(this=inner), PER_UNIT, table=True))
    if keys and join is None:
        outer = outer.group_by(*[exp.column(k.name) for k in keys])
    for arg in ("order", "limit"):
        if (clause := select.args.get(arg)) is not None:
            outer.set(arg, clause.copy())
    if select.args.get("distinct"):
        outer.set("distinct", exp.Distinct())
    return outer
