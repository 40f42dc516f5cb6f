"""One aggregation per privacy unit in a subquery: ``SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid``.

Each output row is a function of one unit's rows only, so neighbouring databases (one unit in or out, or
substituted) differ in that unit's output rows alone. Each output value gets a public bound from the metadata,
as Wilson et al. (2020, "Differentially private SQL with bounded user contribution") bound a user's
contribution before aggregating, here per value (``m`` = the table's max_contributions):

| aggregate          | value                                            | bounds                           |
|--------------------|--------------------------------------------------|----------------------------------|
| COUNT(*), COUNT(x) | the unit's count, cut to ``m``                    | [0, m]                           |
| COUNT(DISTINCT x)  | the unit's distinct values, cut to ``m``          | [0, m]                           |
| SUM(x)             | the sum of clamped values, clamped                | m·[min(L, 0), max(U, 0)]         |
| AVG, MIN, MAX(x)   | of the clamped values                             | [L, U]                           |

(``[L, U]`` the argument's bounds by interval arithmetic, privdb.sql.front.expr.bounds.) Grouped by the unit
alone,
the result has exactly one row per unit (``m = G = 1``); grouped by the unit and other keys, a unit has
several rows and the outer query's contribution bounding applies to them as to any table's. Either way the
unit stays the relation's privacy unit (carried hidden), so the result can be joined back on it.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from privdb.catalog.metadata import ColumnMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Type
from privdb.sql.front.expr.bounds import bound
from privdb.sql.front.expr.render import clamp_sql, render_num
from privdb.sql.front.expr.totality import check_summable
from privdb.sql.front.relation.model import (
    Relation,
    RelationMeta,
    Tables,
    derived_column,
    derived_meta,
    hidden,
    unit_columns,
)

__all__ = ["per_unit_relation"]

_AGGREGATES = "COUNT(*), COUNT(x), COUNT(DISTINCT x), SUM(x), AVG(x), MIN(x), MAX(x)"


def _aggregate(node: exp.Expression, meta: RelationMeta, m: int, name: str) -> tuple[str, ColumnMeta, bool]:
    """The SQL of one per-unit aggregate and its output column's metadata (with its public bounds)."""
    where = f"the subquery's {node.sql(dialect='duckdb')[:60]}"
    arg = node.this
    if isinstance(node, exp.Count | exp.ApproxDistinct):
        distinct = isinstance(arg, exp.Distinct) or isinstance(node, exp.ApproxDistinct)
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise UnsupportedQuery(f"{where}: COUNT(DISTINCT …) takes one expression")
            arg = arg.expressions[0]
        portable = True
        if isinstance(arg, exp.Star) and not distinct:
            inner = "COUNT(*)"
        else:
            e = expr.check(arg, meta, where)
            portable = e.portable
            inner = f"COUNT({'DISTINCT ' if distinct else ''}{expr.render(e)})"
        count = f"CASE WHEN {inner} > {m} THEN {m} ELSE {inner} END"
        return count, ColumnMeta(name, "int", 0.0, float(m), storage="int"), portable
    kinds = {exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
    kind = next((k for t, k in kinds.items() if isinstance(node, t)), None)
    if kind is None or isinstance(arg, exp.Distinct):
        raise UnsupportedQuery(
            f"{where}: an aggregation per privacy unit takes {_AGGREGATES} (each gets a public bound)"
        )
    b = bound(expr.check(arg, meta, where, None), where)
    value = render_num(b.expr)
    portable = all(n.portable for n in b.expr.walk() if n.op in ("column", "clamp")) and b.expr.op in (
        "column",
        "clamp",
    )
    if kind in ("sum", "avg"):  # the engine adds up the unit's rows, as many as MAX_ROWS
        check_summable(max(abs(b.lower), abs(b.upper)), where)
    if kind == "sum":
        lo, hi = m * min(b.lower, 0.0), m * max(b.upper, 0.0)
        sql = clamp_sql(f"SUM({value})", lo, hi)
        return sql, ColumnMeta(name, "int" if b.integer else "float", lo, hi, storage="float"), portable
    sql = f"{kind.upper()}({value})"
    integer = b.integer and kind != "avg"
    made = ColumnMeta(name, "int" if integer else "float", b.lower, b.upper, storage="float")
    return sql, made, portable


def per_unit_relation(node: exp.Select, alias: str, inner: Relation, tables: Tables) -> Relation:
    """The relation of a subquery that groups ``inner`` by its privacy unit (module doc)."""
    meta = inner.meta
    assert isinstance(meta, RelationMeta)
    units = unit_columns(meta)
    if meta.privacy_unit is None:
        raise UnsupportedQuery(
            f"GROUP BY in the subquery {alias!r}: a subquery may group only by the privacy unit (each row "
            f"then depends on one person), and {inner.base!r} has none; aggregate in the outer DP-SELECT"
        )
    group = node.args["group"]
    for key, value in group.args.items():
        if key != "expressions" and value:
            raise UnsupportedQuery(f"GROUP BY {key.upper()} in a subquery is not supported")
    items = list(node.expressions)
    keys = []
    for g in group.expressions:
        if isinstance(g, exp.Literal) and not g.is_string and str(g.this).isdigit():
            pos = int(g.this)
            if not 1 <= pos <= len(items):
                raise UnsupportedQuery(f"GROUP BY {pos}: the subquery has {len(items)} output columns")
            target = items[pos - 1]
            g = target.this if isinstance(target, exp.Alias) else target
        keys.append(expr.check(g, meta, "the subquery's GROUP BY"))
    key_sql = [expr.render(k) for k in keys]
    unit_keys = [i for i, k in enumerate(keys) if k.is_column and k.value.name in units]
    if not unit_keys:
        raise UnsupportedQuery(
            f"GROUP BY in the subquery {alias!r} must include the privacy unit ({_unit_names(meta)}): "
            "then each row depends on one person's rows only; other groupings mix people and are "
            "aggregated in the outer DP-SELECT"
        )
    where_node = node.args.get("where")
    where = expr.check(where_node.this, meta, "WHERE", Type.BOOL) if where_node is not None else None
    m = meta.max_contributions
    portable = inner.portable and (where is None or where.portable) and all(k.portable for k in keys)
    outputs: list[tuple[str, str, ColumnMeta]] = []
    out_units: set[str] = set()
    for item in items:
        target = item.this if isinstance(item, exp.Alias) else item
        name = (
            item.alias
            if isinstance(item, exp.Alias)
            else (target.name if isinstance(target, exp.Column) else target.sql(dialect="duckdb"))
        )
        if isinstance(target, exp.AggFunc):
            sql, column, fits = _aggregate(item.this if isinstance(item, exp.Alias) else item, meta, m, name)
            portable = portable and fits
            outputs.append((name, sql, column))
            continue
        if any(isinstance(n, exp.AggFunc) for n in target.walk()):
            raise UnsupportedQuery(
                f"{target.sql(dialect='duckdb')[:60]}: in an aggregation per privacy unit, select the "
                "aggregates themselves and combine them in the outer query"
            )
        e = expr.check(target, meta, "the subquery's select list")
        rendered = expr.render(e)
        if rendered not in key_sql:
            raise UnsupportedQuery(
                f"{target.sql(dialect='duckdb')[:60]} is neither an aggregate nor a GROUP BY key of the "
                f"subquery {alias!r}"
            )
        outputs.append((name, rendered, derived_column(name, e, tables)))
        if key_sql.index(rendered) in unit_keys:
            out_units.add(name)
    one_row_per_unit = len(keys) == 1
    # the unit stays the relation's privacy unit (joins on it stay possible), carried hidden; one row per
    # unit: a unit contributes exactly one row, to one group
    rmeta, body = derived_meta(
        alias, outputs, key_sql[unit_keys[0]], out_units, meta,
        1 if one_row_per_unit else meta.max_contributions, 1 if one_row_per_unit else meta.max_groups, False,
    )  # fmt: skip
    condition = f" WHERE {expr.render(where)}" if where is not None else ""
    positions = ", ".join(str(i + 1) for i, (n, s, _) in enumerate(outputs) if s in key_sql)
    if len([s for _, s, _ in outputs if s in key_sql]) != len(keys):
        # a key not selected: group by its expression
        positions = ", ".join(key_sql)

    def make_sql(sources: Mapping[str, str]) -> str:
        return f"SELECT {body} FROM {inner.source(sources)} AS _q{condition} GROUP BY {positions}"

    return Relation(rmeta, inner.tables, make_sql, public=inner.public, portable=portable)


def _unit_names(meta: RelationMeta) -> str:
    names = sorted(n for n in meta.unit_columns if not hidden(n))
    return ", ".join(names) or "not selected in the inner query"
