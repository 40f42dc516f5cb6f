"""Build the relation (privdb.sql.front.relation.model) of a DP-SELECT's FROM clause.

An analyst's FROM may name a table (with an alias), a subquery or a CTE, and JOINs. privdb turns it into a
:class:`Relation`: the SQL that computes the rows (from the base tables' engine names), and a
:class:`RelationMeta` that describes its columns (types, bounds, public domains, which columns identify
people) and its privacy unit, so that the rest of the pipeline (validate → plan → rewrite → noise) treats it
exactly as a table. What is accepted, and why each form is sound (docs/proofs/sql.md, "Relations"):

- **row-wise subqueries** (expressions of the closed language, WHERE, renaming, ``SELECT *``), nested to any
  depth: every output row is a function of one input row, so a unit's rows map to at most as many rows and
  its contribution bound (after the outer bounding) is unchanged; the privacy unit is carried along hidden;
- **one aggregation per privacy unit** (``SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid``): each output
  row is a function of one unit's rows only; each value is bounded (counts cut to ``m``, sums clamped to
  ``m·[min(L, 0), max(U, 0)]``) so that its public bounds follow from the metadata;
- **joins with public tables** (metadata ``public: true``): a lookup. With a privacy unit the contribution
  bounding after the join keeps its bound; without one, a row that meets ``k`` public rows counts ``k``
  times, and ``k`` (the largest number of public rows sharing a join key, read from the public table) scales
  the sensitivities (``multiplicity``);
- **joins of two private tables on their common privacy unit** (``people.pid = visits.pid``): every joined
  row belongs to the one unit of both sides, and bounding is applied after the join.

A CROSS JOIN (or ``FROM t, p``) with a public table is ``JOIN … ON TRUE``; ``t RIGHT JOIN <public> g``
releases every public key (privdb.sql.front.relation.joins). Everything else (other private–private joins,
other RIGHT joins, FULL joins, GROUP BY in a subquery without the
privacy unit, LIMIT/windows in subqueries, DISTINCT in subqueries of private tables, recursive CTEs, set
operations) is refused before any
data is read, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from sqlglot import exp

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import UnknownColumn, UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Type
from privdb.sql.front.relation.joins import join_relations
from privdb.sql.front.relation.literal import literal_relation
from privdb.sql.front.relation.model import (
    UNIT_ROWS,
    Relation,
    RelationMeta,
    Tables,
    derived_column,
    derived_meta,
    hidden,
    unit_columns,
)
from privdb.sql.front.relation.per_unit import per_unit_relation
from privdb.sql.front.relation.right_join import check_right_join

__all__ = ["build_relation", "refuse_unsupported_forms"]

_FORMS = (
    "FROM accepts: a table [AS alias]; a subquery or CTE of row-wise expressions, WHERE and renaming over "
    "a private table, or one GROUP BY of the privacy unit; [INNER | LEFT] JOIN of a public table, or of "
    "two private tables ON their common privacy unit (a.pid = b.pid), with ON a = b [AND …] or USING (…); "
    "CROSS JOIN of a public table; RIGHT JOIN onto a public relation, last, for every public key"
)


def _refuse(what: str, instead: str = "") -> UnsupportedQuery:
    return UnsupportedQuery(f"{what} is not supported{'; ' + instead if instead else ''}. {_FORMS}")


def refuse_unsupported_forms(select: exp.Expression) -> None:
    """Forms refused anywhere in a query, each with what to write instead (item 10 of issue 14)."""
    for node in select.walk():
        if isinstance(node, exp.Window):
            raise UnsupportedQuery(
                f"{node.sql(dialect='duckdb')[:80]}: window functions (OVER …) are not supported: their "
                "value for one row depends on other people's rows; use GROUP BY, or an aggregation per "
                "privacy unit in a subquery"
            )
        if isinstance(node, exp.Union | exp.Intersect | exp.Except):
            raise UnsupportedQuery(
                "set operations (UNION, INTERSECT, EXCEPT) over private tables are not supported: ask one "
                "DP-SELECT per part and combine the noisy answers, or use OR in WHERE"
            )
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise UnsupportedQuery(
                "recursive CTEs (WITH RECURSIVE) are not supported: their rows have no public bound"
            )
        if isinstance(node, exp.Lateral):
            raise UnsupportedQuery("LATERAL is not supported: write the subquery in FROM")


def _column_name(item: exp.Expression) -> str:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return item.sql(dialect="duckdb")


def _scope_of(meta: TableMeta, qualifier: str, table: str | None = None) -> dict[str | None, dict[str, str]]:
    visible = {name.lower(): name for name in meta.columns if not hidden(name)}
    scope: dict[str | None, dict[str, str]] = {None: dict(visible), qualifier.lower(): dict(visible)}
    if table and table.lower() != qualifier.lower():
        scope[table.lower()] = dict(visible)
    return scope


class _Builder:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    # ---- FROM items
    def relation(self, select: exp.Select, ctes: Mapping[str, exp.Expression], top: bool = False) -> Relation:
        ctes = dict(ctes)
        with_ = select.args.get("with_") or select.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                ctes[cte.alias_or_name.lower()] = cte.this
        source = select.args.get("from_") or select.args.get("from")
        if source is None:
            raise UnsupportedQuery("a DP-SELECT needs FROM <table>")
        rel = self.item(source.this, ctes)
        joins = select.args.get("joins") or []
        for i, join in enumerate(joins):
            if str(join.args.get("side") or "").upper() == "RIGHT" and not (top and i == len(joins) - 1):
                raise UnsupportedQuery(
                    "a RIGHT JOIN onto a public relation is supported as the last join of the DP-SELECT's "
                    "own FROM (not in a subquery or CTE, not followed by another join)"
                )
            rel = self.join(rel, self.item(join.this, ctes), join)
        if top and not rel.tables:
            raise UnsupportedQuery(
                "this DP-SELECT reads no table, only UNNEST([…]) of literals: its answer is in the query; "
                "join the array to a table (FROM t CROSS JOIN UNNEST([…]) AS x)"
            )
        return rel

    def item(self, node: exp.Expression, ctes: Mapping[str, exp.Expression]) -> Relation:
        alias = node.alias_or_name if isinstance(node, exp.Table | exp.Subquery) else ""
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                raise _refuse(f"FROM {node.sql(dialect='duckdb')[:60]} (a table function)")
            if node.args.get("db") or node.args.get("catalog"):
                raise UnsupportedQuery("FROM must name a table of this database, without a schema")
            cte = ctes.get(node.name.lower())
            if cte is not None:
                inner = {k: v for k, v in ctes.items() if k != node.name.lower()}
                return self.derived(cte, alias or node.name, inner)
            return self.table(node.name, alias)
        if isinstance(node, exp.Subquery):
            if not alias:
                alias = "subquery"
            return self.derived(node.this, alias, ctes)
        if isinstance(node, exp.Unnest):
            return literal_relation(node)
        raise _refuse(f"FROM {node.sql(dialect='duckdb')[:60]}")

    def table(self, name: str, alias: str) -> Relation:
        meta = self.tables.meta(name)
        units = unit_columns(meta)
        scope = _scope_of(meta, alias or meta.name, meta.name)
        rmeta = RelationMeta(
            **{f: getattr(meta, f) for f in TableMeta.__dataclass_fields__},
            scope=scope,
            unit_columns=units,
        )
        return Relation(rmeta, (meta.name,), None, public=meta.public, carried_unit=meta.privacy_unit)

    # ---- subqueries
    def derived(self, node: exp.Expression, alias: str, ctes: Mapping[str, exp.Expression]) -> Relation:
        if not isinstance(node, exp.Select):
            raise UnsupportedQuery(
                "set operations (UNION, INTERSECT, EXCEPT) over private tables are not supported: ask one "
                "DP-SELECT per part and combine the noisy answers"
            )
        per_unit_having = node.args.get("group") is not None and select_has(node, "having")
        distinct = select_has(node, "distinct") and node.args.get("group") is None
        if distinct and not self.relation(node, ctes).public:
            distinct = False  # refused below: only a subquery of public tables may be DISTINCT
        for key in ("distinct", "limit", "offset", "order", "having", "qualify", "sample", "windows"):
            if key == "distinct" and distinct:
                if node.args["distinct"].args.get("on") is not None:
                    raise _refuse("DISTINCT ON in a subquery", "write SELECT DISTINCT over a public table")
                continue
            if select_has(node, key) and not (key == "having" and per_unit_having):
                what = {"having": "HAVING", "order": "ORDER BY", "distinct": "DISTINCT"}.get(key, key.upper())
                raise _refuse(
                    f"{what} in a subquery",
                    "a subquery's rows must each depend on one person's rows; filter with WHERE, and put "
                    "DISTINCT, ORDER BY, LIMIT and HAVING in the outer DP-SELECT",
                )
        inner = self.relation(node, ctes)
        if node.args.get("group") is not None:
            if not per_unit_having:
                return self.per_unit(node, alias, inner)
            having = node.args["having"].this
            grouped = self.per_unit(node.copy().having(None, append=False), alias, inner)
            return _filtered(grouped, _having_on_aliases(having, node), "HAVING")
        if any(isinstance(n, exp.AggFunc) for item in node.expressions for n in item.walk()):
            raise _refuse(
                "an aggregate in a subquery without GROUP BY of the privacy unit",
                "aggregate over all rows in the outer DP-SELECT, or GROUP BY the privacy unit inside",
            )
        return self.rowwise(node, alias, inner, distinct)

    def rowwise(self, node: exp.Select, alias: str, inner: Relation, distinct: bool = False) -> Relation:
        meta = inner.meta
        where_node = node.args.get("where")
        where = expr.check(where_node.this, meta, "WHERE", Type.BOOL) if where_node is not None else None
        outputs: list[tuple[str, str, ColumnMeta]] = []  # (visible name, SQL, metadata)
        units: set[str] = set()
        portable = inner.portable and (where is None or where.portable)
        for item in node.expressions:
            target = item.this if isinstance(item, exp.Alias) else item
            if isinstance(target, exp.Star) or (isinstance(target, exp.Column) and target.is_star):
                qualifier = target.table if isinstance(target, exp.Column) else None
                names = self._visible(meta, qualifier)
                for visible, internal in names:
                    column = meta.columns[internal]
                    outputs.append((visible, quote(internal), replace(column, name=visible)))
                    if internal in unit_columns(meta):
                        units.add(visible)
                continue
            name = _column_name(item)
            e = expr.check(target, meta, "a subquery's select list")
            portable = portable and e.portable
            column = derived_column(name, e, self.tables)
            outputs.append((name, expr.render(e), column))
            if e.is_column and e.value.name in unit_columns(meta):
                units.add(name)
        unit_sql = quote(meta.privacy_unit) if meta.privacy_unit is not None else None
        rmeta, body = derived_meta(
            alias, outputs, unit_sql, units, meta, meta.max_contributions, meta.max_groups, inner.public
        )
        condition = f" WHERE {expr.render(where)}" if where is not None else ""

        carries = inner.carries_unit_rows

        def sql(sources: Mapping[str, str]) -> str:
            extra = f", {sources[UNIT_ROWS]}" if carries and UNIT_ROWS in sources else ""
            word = "SELECT DISTINCT" if distinct else "SELECT"  # a public relation's rows only
            return f"{word} {body}{extra} FROM {inner.source(sources)} AS _q{condition}"

        return Relation(
            rmeta, inner.tables, sql, public=inner.public, portable=portable, carried_unit=inner.carried_unit
        )

    def _visible(self, meta: TableMeta, qualifier: str | None) -> list[tuple[str, str]]:
        """(output name, internal name) of the columns ``*`` or ``qualifier.*`` stands for."""
        scope = meta.scope if isinstance(meta, RelationMeta) else _scope_of(meta, meta.name)
        names = scope.get(qualifier.lower() if qualifier else None)
        if names is None:
            raise UnknownColumn(f"{qualifier}.*: no table or alias {qualifier!r} in FROM")
        out = []
        for visible, internal in names.items():
            if internal == "":
                raise UnsupportedQuery(
                    f"SELECT * would return two columns named {visible!r}; list the columns you need"
                )
            out.append((internal.rsplit(".", 1)[-1], internal))
        return out

    def per_unit(self, node: exp.Select, alias: str, inner: Relation) -> Relation:
        return per_unit_relation(node, alias, inner, self.tables)

    # ---- joins
    def join(self, left: Relation, right: Relation, join: exp.Join) -> Relation:
        return join_relations(left, right, join, self.tables)


def _having_on_aliases(having: exp.Expression, node: exp.Select) -> exp.Expression:
    """A per-unit subquery's HAVING over its own output columns: an aggregate written again
    (``HAVING COUNT(*) > 3`` beside ``COUNT(*) AS n``) is its alias."""
    named = {
        item.this.sql(dialect="duckdb"): item.alias
        for item in node.expressions
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.AggFunc)
    }
    tree = having.copy()
    for found in list(tree.find_all(exp.AggFunc)):
        alias = named.get(found.sql(dialect="duckdb"))
        if alias is None:
            raise UnsupportedQuery(
                f"HAVING {found.sql(dialect='duckdb')[:60]} in a subquery: name the aggregate in the "
                "subquery's select list (… AS n) and compare the name"
            )
        found.replace(exp.column(alias, quoted=True))
    return tree


def _filtered(rel: Relation, condition: exp.Expression, clause: str) -> Relation:
    """``rel`` keeping the rows where ``condition`` (over its own columns) is true: a row-wise filter."""
    where = expr.check(condition, rel.meta, clause, Type.BOOL)
    rendered = expr.render(where)

    def sql(sources: Mapping[str, str]) -> str:
        return f"SELECT * FROM {rel.source(sources)} AS _h WHERE {rendered}"

    return Relation(
        rel.meta, rel.tables, sql, public=rel.public, portable=rel.portable and where.portable,
        carried_unit=rel.carried_unit,
    )  # fmt: skip


def select_has(node: exp.Select, key: str) -> bool:
    value = node.args.get(key)
    return value is not None and value != [] and value is not False


MAX_IN_SUBQUERY = 1000  # values an IN (SELECT … FROM <public table>) may return (expr.MAX_IN_LIST)


def _in_public(builder: _Builder, node: exp.In) -> exp.Expression:
    """``x IN (SELECT c FROM <public table> …)`` as ``x IN (<its values>)``: the subquery is planned as a
    relation that must be public (every table it reads has ``public: true``) and is read now, before
    anything private is: its values are public information."""
    query = node.args["query"]
    inner = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
        raise UnsupportedQuery("IN (SELECT …) selects exactly one column of a public table")
    try:
        relation = builder.derived(inner, "in_subquery", {})
    except UnknownColumn as err:
        raise UnsupportedQuery(
            f"{inner.sql(dialect='duckdb')[:80]}: subqueries in WHERE cannot refer to the outer query "
            f"(correlated subqueries are not supported) ({err})"
        ) from None
    if not relation.public:
        raise UnsupportedQuery(
            "IN (SELECT …) reads public tables only (metadata public: true): a subquery over private "
            "tables would let one person's rows decide another's; JOIN the private table on the privacy "
            "unit instead"
        )
    values = builder.tables.public_values(relation, MAX_IN_SUBQUERY + 1)
    if len(values) > MAX_IN_SUBQUERY:
        raise UnsupportedQuery(
            f"IN (SELECT …) returns more than {MAX_IN_SUBQUERY} values; JOIN the public table instead"
        )
    if not values:
        return exp.false()
    literals: list[exp.Expression] = []
    for v in values:
        if v is None:
            literals.append(exp.null())
        elif isinstance(v, bool):
            literals.append(exp.Boolean(this=v))
        elif isinstance(v, int | float):
            literals.append(exp.Literal.number(v))
        else:
            literals.append(exp.Literal.string(str(v)))
    return exp.In(this=node.this.copy(), expressions=literals)


def _refuse_scalar_subqueries(select: exp.Select) -> None:
    for node in select.walk():
        if isinstance(node, exp.Exists):
            raise UnsupportedQuery(
                "EXISTS (SELECT …) is not supported: JOIN on the privacy unit, or IN (SELECT … FROM a public "
                "table)"
            )
        if isinstance(node, exp.Subquery) and not isinstance(node.parent, exp.From | exp.Join | exp.In):
            raise UnsupportedQuery(
                f"{node.sql(dialect='duckdb')[:80]}: a subquery used as a value is not supported (its value "
                "could depend on everyone's rows); ask it first with DP-SELECT and write the noisy value as "
                "a literal"
            )


def build_relation(select: exp.Select, tables: Tables) -> Relation:
    """The relation the DP-SELECT's FROM clause reads (CTEs of the query included). ``IN (SELECT …)``
    over public tables anywhere in the query is replaced by the list of its values first."""
    refuse_unsupported_forms(select)
    _refuse_scalar_subqueries(select)
    builder = _Builder(tables)
    for node in list(select.find_all(exp.In)):
        if node.args.get("query") is not None:
            node.replace(_in_public(builder, node))
    relation = builder.relation(select, {}, top=True)
    if relation.outer_nulls:
        check_right_join(select, relation)
    return relation
