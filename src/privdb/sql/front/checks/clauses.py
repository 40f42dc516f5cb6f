"""The clauses of a DP-SELECT read on their own, before its outputs are resolved
(privdb.sql.front.checks.validate): the allow-list of clauses, WHERE as a predicate of the closed expression
language, the columns a query may use, ``FILTER (WHERE …)`` rewritten as CASE, the GROUP BY keys (positions,
select-list aliases, DISTINCT) and select-list aliases in HAVING and ORDER BY. A record release
(privdb.sql.release.plan) checks its clauses here too.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import PrivdbError, UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.checks.aggregates import SUPPORTED, is_aggregate
from privdb.sql.front.expr import Expr, Type

__all__ = [
    "AGGREGATE_CLAUSES",
    "check_clauses",
    "check_predicate",
    "expand_aliases",
    "filters_as_case",
    "group_by",
    "has_aggregate",
    "strip_parens",
    "table_column",
]


def _refuse(what: str) -> UnsupportedQuery:
    return UnsupportedQuery(f"{what} is not supported; {SUPPORTED}")


def check_predicate(node: exp.Expression, table: TableMeta, where: str) -> Expr:
    """A WHERE predicate: a boolean expression of the closed language (privdb.sql.front.expr), so a number
    compared with non-numeric text is refused before any data is read."""
    return expr.check(node, table, where, Type.BOOL)


def table_column(ref: exp.Column, table: TableMeta, use: str = "cannot be aggregated") -> ColumnMeta:
    """The metadata of a column reference of the query's relation; identifying columns refused."""
    column = table.qualified(ref.table or None, ref.name)
    if column.identifier or column.private_id:
        raise UnsupportedQuery(f"column {column.name!r} identifies people and {use}")
    return column


_RECORD_CLAUSES = {"expressions", "from", "from_", "where", "group", "order", "limit", "kind"}
AGGREGATE_CLAUSES = _RECORD_CLAUSES | {"joins", "with", "with_", "having", "distinct"}
_CLAUSE_NAMES = {
    "joins": "a JOIN", "with": "a WITH clause", "with_": "a WITH clause", "having": "HAVING",
    "qualify": "QUALIFY", "windows": "WINDOW", "distinct": "SELECT DISTINCT", "laterals": "LATERAL",
    "offset": "OFFSET", "pivots": "PIVOT", "sample": "a sample (USING SAMPLE)", "into": "INTO",
}  # fmt: skip


def check_clauses(select: exp.Select, allowed: set[str] | None = None) -> None:
    """Refuse every clause outside the closed grammar (windows, samples, OFFSET, …): an allow-list, so a
    clause sqlglot learns later is refused too. Record releases (the default) also refuse joins, CTEs,
    HAVING and DISTINCT."""
    allowed = _RECORD_CLAUSES if allowed is None else allowed
    for key, value in select.args.items():
        if key in allowed or value is None or value == [] or value is False:
            continue
        raise _refuse(_CLAUSE_NAMES.get(key, f"the clause {key!r}"))
    if select.args.get("kind"):
        raise _refuse(f"SELECT {select.args['kind']}")
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on") is not None:
        raise _refuse("DISTINCT ON")
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


def strip_parens(node: exp.Expression) -> exp.Expression:
    """``node`` without the parentheses around it: ``(COUNT(*))`` is ``COUNT(*)``."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def filters_as_case(select: exp.Select) -> None:
    """``AGG(x) FILTER (WHERE c)`` as ``AGG(CASE WHEN c THEN x END)`` (``COUNT(*)``: ``THEN 1``), in place:
    the same rows are aggregated, and the argument's bounds are the unfiltered one's."""
    for node in list(select.find_all(exp.Filter)):
        aggregate, where = node.this, node.expression
        if not isinstance(aggregate, exp.AggFunc) or not isinstance(where, exp.Where):
            continue
        arg = aggregate.this
        distinct = isinstance(arg, exp.Distinct)
        inner = arg.expressions[0] if distinct and len(arg.expressions) == 1 else arg
        if inner is None or (distinct and inner is arg):
            continue
        value = exp.Literal.number(1) if isinstance(inner, exp.Star) else inner.copy()
        case = exp.Case(ifs=[exp.If(this=where.this.copy(), true=value)])
        new: Any = aggregate.copy()
        new.set("this", exp.Distinct(expressions=[case]) if distinct else case)
        if node.parent is select:  # an unnamed select item keeps its name as written
            new = exp.Alias(this=new, alias=exp.to_identifier(node.sql(dialect="duckdb")))
        node.replace(new)


def _ancestors(node: exp.Expression) -> list[Any]:
    out: list[Any] = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


def has_aggregate(node: exp.Expression) -> bool:
    """Whether an aggregate stands anywhere in ``node``."""
    return any(is_aggregate(n) for n in node.find_all(exp.Expression))


def group_by(select: exp.Select, table: TableMeta, items: list[exp.Expression]) -> list[exp.Expression]:
    """The GROUP BY keys as expressions: positions (GROUP BY 1) and select-list aliases resolved (a name
    that is a column of the relation stays the column); ``SELECT DISTINCT a, b`` without aggregates: a, b."""
    group = select.args.get("group")
    nodes: list[exp.Expression] = list(group.expressions) if group is not None else []
    distinct = select.args.get("distinct") is not None
    if distinct and not nodes and not any(has_aggregate(i) for i in items):
        # SELECT DISTINCT a, b (no aggregate): the keys a, b
        nodes = [i.this if isinstance(i, exp.Alias) else i for i in items]
    resolved: list[exp.Expression] = []
    for node in nodes:
        if isinstance(node, exp.Literal) and not node.is_string:
            if not str(node.this).isdigit():
                raise UnsupportedQuery(f"GROUP BY {node.this}: a position is a whole number (GROUP BY 1)")
            pos = int(node.this)
            if not 1 <= pos <= len(items):
                raise UnsupportedQuery(f"GROUP BY {pos}: there are only {len(items)} output columns")
            target = items[pos - 1]
            resolved.append(target.this if isinstance(target, exp.Alias) else target)
        elif isinstance(node, exp.Column) and not node.table:
            alias = next((i for i in items if isinstance(i, exp.Alias) and i.alias == node.name), None)
            try:
                table.qualified(None, node.name)
                is_column = True
            except PrivdbError:
                is_column = False
            resolved.append(alias.this if alias is not None and not is_column else node)
        else:
            resolved.append(node)
    for node in resolved:
        if has_aggregate(node):
            raise UnsupportedQuery(f"GROUP BY {node.sql(dialect='duckdb')}: a key cannot hold an aggregate")
    return resolved


def expand_aliases(
    node: exp.Expression, items: list[exp.Expression], table: TableMeta, keys: bool = False
) -> exp.Expression:
    """HAVING ``n > 100`` where ``n`` is the select list's alias of an aggregate or an expression over
    aggregates (``keys``: or of a key): the aliased expression in its place. A name inside an
    aggregate, or one that is a column of the relation, stays the column (as in DuckDB)."""
    aliases: dict[str, exp.Expression] = {
        i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias) and (keys or has_aggregate(i.this))
    }

    def alias_of(column: exp.Column) -> exp.Expression | None:
        if column.table or column.name.lower() not in aliases:
            return None
        if any(is_aggregate(p) for p in _ancestors(column)):
            return None
        try:
            table.qualified(None, column.name)
            return None  # a column of the relation
        except PrivdbError:
            return aliases[column.name.lower()]

    tree = node.copy()
    if isinstance(tree, exp.Column) and (target := alias_of(tree)) is not None:
        return target.copy()
    for column in list(tree.find_all(exp.Column)):
        if (target := alias_of(column)) is not None:
            column.replace(exp.Paren(this=target.copy()))
    return tree
