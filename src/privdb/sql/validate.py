"""Validate a parsed DP-SELECT against the table's metadata and resolve what it asks for.

Supported: one table; a select list of aggregates (``COUNT(*)``, ``COUNT(col)``, ``SUM``, ``AVG``,
``VARIANCE``/``VAR``, ``STDDEV``, …) and GROUP BY keys; a ``WHERE`` predicate and GROUP BY expressions of
the closed expression language (privdb.sql.expr: typed, total, bounded cost); ``ORDER BY``/``LIMIT`` on the
noisy result. Every other clause is refused by an allow-list. Everything else is ``unsupported_query``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql import expr
from privdb.sql.expr import Expr, Type

__all__ = [
    "AggregateRef",
    "KeyRef",
    "Resolved",
    "check_clauses",
    "check_predicate",
    "pair_aggregate",
    "resolve",
    "table_column",
]

SUPPORTED = (
    "supported: DP-SELECT ε [DELTA δ] with COUNT(*), COUNT(col), SUM(col), AVG(col), VARIANCE(col), "
    "STDDEV(col), MEDIAN(col), QUANTILE(col, q), MIN(col), MAX(col), MODE(col), CORR(x, y), COVAR_POP(x, y), "
    "REGR_SLOPE(y, x), REGR_INTERCEPT(y, x) and GROUP BY keys, "
    "FROM one table, WHERE on rows, GROUP BY, ORDER BY, LIMIT; or "
    "randomised records: DP-SELECT ε col1, col2 (or *) FROM table [WHERE …]"
)

# order statistics: the exponential mechanism over a grid of the bounded domain (plan.py)
_QUANTILES: dict[type[exp.Expression], float | None] = {
    exp.Median: 0.5,
    exp.Min: 0.0,
    exp.Max: 1.0,
    exp.Quantile: None,  # QUANTILE(col, q)
    exp.PercentileCont: None,
}


@dataclass(frozen=True)
class AggregateRef:
    """An aggregate of the select list: its kind and the column it reads (``None`` for COUNT(*))."""

    output: str
    kind: str  # count_star | count | sum | avg | variance | stddev | quantile | mode
    column: ColumnMeta | None
    node: exp.Expression
    q: float | None = None  # the quantile's level, for kind == "quantile"
    column2: ColumnMeta | None = None  # the second column of CORR, COVAR_POP, REGR_SLOPE, REGR_INTERCEPT


@dataclass(frozen=True)
class KeyRef:
    """A GROUP BY key: its output name, engine SQL and the columns it reads."""

    output: str
    sql: str  # DuckDB SQL of the checked expression (expr.render)
    columns: tuple[ColumnMeta, ...]
    node: exp.Expression
    in_select: bool
    expr: Expr | None = None


@dataclass(frozen=True)
class Resolved:
    """What a DP-SELECT asks for, checked against the metadata."""

    table: TableMeta
    where: Expr | None  # checked, boolean
    keys: tuple[KeyRef, ...]
    aggregates: tuple[AggregateRef, ...]
    outputs: tuple[tuple[str, str, int], ...]  # (name, "key" | "aggregate", index)
    order: tuple[tuple[str, bool], ...]  # (output name, descending)
    limit: int | None


def _refuse(what: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"{what} is not supported; {SUPPORTED}")


def check_predicate(node: exp.Expression, table: TableMeta, where: str) -> Expr:
    """A WHERE predicate: a boolean expression of the closed language (privdb.sql.expr), so a number
    compared with non-numeric text is refused before any data is read."""
    return expr.check(node, table, where, Type.BOOL)


def _quantile_level(node: exp.Expression) -> float:
    level = node.args.get("quantile") or node.args.get("expression")
    if isinstance(level, exp.Neg) and isinstance(level.this, exp.Literal):
        level = exp.Literal.number(-float(level.this.this))
    if not isinstance(level, exp.Literal) or level.is_string:
        raise UnsupportedQuery(f"{node.sql()}: the quantile's level is a number between 0 and 1, e.g. 0.9")
    q = float(level.this)
    if not 0.0 <= q <= 1.0:
        raise InvalidParameter(f"{node.sql()}: the quantile's level must be between 0 and 1, got {q:g}")
    return q


_PAIRS: dict[type[exp.Expression], str] = {
    exp.Corr: "corr",
    exp.CovarPop: "covar",
    exp.RegrSlope: "regr_slope",
    exp.RegrIntercept: "regr_intercept",
}


def table_column(ref: exp.Column, table: TableMeta, use: str = "cannot be aggregated") -> ColumnMeta:
    """The metadata of a column reference of the DP-SELECT's one table; identifying columns refused."""
    if ref.table and ref.table.lower() != table.name.lower():
        raise UnsupportedQuery(f"column {ref.sql()} names another table; DP-SELECT reads one table")
    column = table.column(ref.name)
    if column.identifier or column.private_id:
        raise UnsupportedQuery(f"column {column.name!r} identifies people and {use}")
    return column


def _column_arg(node: exp.Expression, arg: exp.Expression | None, table: TableMeta) -> ColumnMeta:
    if not isinstance(arg, exp.Column):
        raise UnsupportedQuery(
            f"{node.sql()}: aggregates take columns (bounds are declared per column); "
            "compute expressions in WHERE or GROUP BY instead"
        )
    return table_column(arg, table)


def pair_aggregate(node: exp.Expression, table: TableMeta) -> tuple[str, ColumnMeta, ColumnMeta] | None:
    """(kind, first column, second column) of a two-column aggregate, as written (REGR_*(y, x))."""
    kind = _PAIRS.get(type(node))
    if kind is None:
        return None
    return kind, _column_arg(node, node.this, table), _column_arg(node, node.args.get("expression"), table)


def _aggregate(node: exp.Expression, table: TableMeta) -> tuple[str, ColumnMeta | None, float | None] | None:
    """(kind, column, quantile level) if ``node`` is a supported aggregate, ``None`` if not an aggregate."""
    kind = None
    q: float | None = None
    if type(node) in _QUANTILES:
        kind = "quantile"
        q = _QUANTILES[type(node)]
        if q is None:
            q = _quantile_level(node)
    elif isinstance(node, exp.Mode):
        kind = "mode"
    elif isinstance(node, exp.Count):
        kind = "count"
    elif isinstance(node, exp.Sum):
        kind = "sum"
    elif isinstance(node, exp.Avg):
        kind = "avg"
    elif isinstance(node, exp.VariancePop):
        kind = "variance_pop"
    elif isinstance(node, exp.StddevPop):
        kind = "stddev_pop"
    elif isinstance(node, exp.Variance) or (
        isinstance(node, exp.Anonymous) and str(node.this).upper() == "VAR"
    ):
        kind = "variance"
    elif isinstance(node, exp.Stddev | exp.StddevSamp):
        kind = "stddev"
    elif isinstance(node, exp.AggFunc):
        raise UnsupportedQuery(f"aggregate {node.sql()} is not supported; {SUPPORTED}")
    if kind is None:
        return None
    arg = node.expressions[0] if isinstance(node, exp.Anonymous) and node.expressions else node.this
    if isinstance(arg, exp.Distinct):
        raise _refuse(f"{kind.upper()}(DISTINCT …)")
    if kind == "count" and isinstance(arg, exp.Star):
        return "count_star", None, None
    return kind, _column_arg(node, arg, table), q


_CLAUSES = {"expressions", "from", "from_", "where", "group", "order", "limit", "kind"}
_CLAUSE_NAMES = {
    "joins": "a JOIN", "with": "a WITH clause", "with_": "a WITH clause", "having": "HAVING",
    "qualify": "QUALIFY", "windows": "WINDOW", "distinct": "SELECT DISTINCT", "laterals": "LATERAL",
    "offset": "OFFSET", "pivots": "PIVOT", "sample": "a sample (USING SAMPLE)", "into": "INTO",
}  # fmt: skip


def check_clauses(select: exp.Select) -> None:
    """Refuse every clause outside the closed grammar (joins, CTEs, windows, samples, …): an allow-list,
    so a clause sqlglot learns later is refused too."""
    for key, value in select.args.items():
        if key in _CLAUSES or value is None or value == [] or value is False:
            continue
        raise _refuse(_CLAUSE_NAMES.get(key, f"the clause {key!r}"))
    if select.args.get("kind"):
        raise _refuse(f"SELECT {select.args['kind']}")
    group = select.args.get("group")
    if group is not None:
        for key, value in group.args.items():
            if key != "expressions" and value:
                raise _refuse("GROUP BY ALL" if key == "all" else "ROLLUP, CUBE or GROUPING SETS")
    order = select.args.get("order")
    if order is not None:
        for key, value in order.args.items():
            if key != "expressions" and value:
                raise _refuse(f"ORDER BY {key.upper()}")


def resolve(select: exp.Select, table: TableMeta) -> Resolved:
    """Check the SELECT's shape and names; return its keys, aggregates and output order."""
    check_clauses(select)
    where_node = select.args.get("where")
    where = where_node.this if where_node is not None else None
    where_expr = check_predicate(where, table, "WHERE") if where is not None else None

    group = select.args.get("group")
    group_nodes: list[exp.Expression] = list(group.expressions) if group is not None else []
    items = list(select.expressions)
    # GROUP BY 1, 2: positions in the select list
    resolved_groups: list[exp.Expression] = []
    for node in group_nodes:
        if isinstance(node, exp.Literal) and not node.is_string:
            if not str(node.this).isdigit():
                raise UnsupportedQuery(f"GROUP BY {node.this}: a position is a whole number (GROUP BY 1)")
            pos = int(node.this)
            if not 1 <= pos <= len(items):
                raise UnsupportedQuery(f"GROUP BY {pos}: there are only {len(items)} output columns")
            target = items[pos - 1]
            resolved_groups.append(target.this if isinstance(target, exp.Alias) else target)
        elif isinstance(node, exp.Column) and not node.table:
            alias = next((i for i in items if isinstance(i, exp.Alias) and i.alias == node.name), None)
            is_column = node.name.lower() in {c.lower() for c in table.columns}
            resolved_groups.append(alias.this if alias is not None and not is_column else node)
        else:
            resolved_groups.append(node)
    key_exprs = [expr.check(g, table, "GROUP BY") for g in resolved_groups]
    key_sql = [expr.render(k) for k in key_exprs]
    if len(set(key_sql)) != len(key_sql):
        raise UnsupportedQuery("GROUP BY lists the same key twice")
    key_columns = [k.columns for k in key_exprs]
    for cols in key_columns:
        for col in cols:
            if col.identifier or col.private_id:
                raise UnsupportedQuery(f"column {col.name!r} identifies people and is never released")

    aggregates: list[AggregateRef] = []
    outputs: list[tuple[str, str, int]] = []
    key_outputs: dict[int, str] = {}
    for item in items:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star):
            raise UnsupportedQuery("SELECT * returns rows; list aggregates such as COUNT(*) instead")
        pair = pair_aggregate(node, table)
        found = None if pair is not None else _aggregate(node, table)
        if pair is not None:
            name = item.alias if isinstance(item, exp.Alias) else node.sql(dialect="duckdb")
            aggregates.append(AggregateRef(name, pair[0], pair[1], node, None, pair[2]))
            outputs.append((name, "aggregate", len(aggregates) - 1))
            continue
        if found is not None:
            name = item.alias if isinstance(item, exp.Alias) else node.sql(dialect="duckdb")
            kind, column, q = found
            aggregates.append(AggregateRef(name, kind, column, node, q))
            outputs.append((name, "aggregate", len(aggregates) - 1))
            continue
        if any(isinstance(sub, exp.AggFunc) for sub in node.walk()):
            raise UnsupportedQuery(
                f"{node.sql()}: expressions over aggregates are not supported; select the aggregates "
                "and combine the noisy values yourself"
            )
        text = node.sql(dialect="duckdb")
        rendered = expr.render(expr.check(node, table, "the select list"))
        if rendered not in key_sql:
            raise UnsupportedQuery(
                f"{text} is neither an aggregate nor a GROUP BY key; a DP-SELECT releases only "
                "aggregates and the keys they are grouped by"
            )
        index = key_sql.index(rendered)
        name = (
            item.alias
            if isinstance(item, exp.Alias)
            else (node.name if isinstance(node, exp.Column) else text)
        )
        key_outputs[index] = name
        outputs.append((name, "key", index))
    if not aggregates:
        raise UnsupportedQuery(
            "a DP-SELECT with GROUP BY needs at least one aggregate (COUNT, SUM, AVG, VARIANCE, STDDEV); "
            "to release randomised records, list columns without GROUP BY"
        )
    names = [o[0] for o in outputs]
    if len({n.lower() for n in names}) != len(names):
        raise UnsupportedQuery("two output columns have the same name; give them distinct aliases (AS …)")
    keys = tuple(
        KeyRef(
            output=key_outputs.get(i, f"key{i}"),
            sql=key_sql[i],
            columns=key_columns[i],
            node=resolved_groups[i],
            in_select=i in key_outputs,
            expr=key_exprs[i],
        )
        for i in range(len(resolved_groups))
    )

    order: list[tuple[str, bool]] = []
    order_node = select.args.get("order")
    if order_node is not None:
        for ordered in order_node.expressions:
            target = ordered.this
            text = target.sql(dialect="duckdb")
            match = None
            for name, role, index in outputs:
                by_name = (
                    isinstance(target, exp.Column)
                    and not target.table
                    and target.name.lower() == name.lower()
                )
                by_aggregate = role == "aggregate" and aggregates[index].node.sql(dialect="duckdb") == text
                by_key = role == "key" and keys[index].node.sql(dialect="duckdb") == text
                if by_name or by_aggregate or by_key:
                    match = name
                if match:
                    break
            if isinstance(target, exp.Literal) and not target.is_string and str(target.this).isdigit():
                pos = int(target.this)
                if 1 <= pos <= len(outputs):
                    match = outputs[pos - 1][0]
            if match is None:
                raise UnsupportedQuery(
                    f"ORDER BY {text}: order by an output column (its name, alias or position)"
                )
            order.append((match, bool(ordered.args.get("desc"))))
    limit = None
    limit_node = select.args.get("limit")
    if limit_node is not None:
        value = limit_node.expression
        if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
            raise UnsupportedQuery("LIMIT takes a whole number")
        limit = int(value.this)
    return Resolved(table, where_expr, keys, tuple(aggregates), tuple(outputs), tuple(order), limit)
