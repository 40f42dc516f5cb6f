"""Where a DP-SELECT's engine SQL runs, and in which dialect: the tables an analyst may see (authorised
first), the one engine holding them, each plan's engine SQL bound there, and the forms sent to engines other
than DuckDB (only those proven total there). No data is read here but public tables while planning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from privdb.backends.base import Engine
from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.database import Database
from privdb.errors import EngineUnavailable, UnknownTable, UnsupportedQuery
from privdb.sql.access import authorize
from privdb.sql.front.expr import Expr
from privdb.sql.front.keys import canonical_key
from privdb.sql.front.relation.model import UNIT_ROWS, Relation, Tables
from privdb.sql.plan.personal import personal_table, sampled_source
from privdb.sql.plan.sensitivity import DISTINCT_KINDS
from privdb.sql.plan.truncation import QUERY as TRUNCATION_QUERY
from privdb.sql.plan.types import Plan
from privdb.sql.run.counts import distinct_sql, histogram_sql
from privdb.sql.run.eager import eager_sql
from privdb.sql.run.layout import chosen_column, layout_sql, split_sql
from privdb.sql.run.rewrite import computed_stats, engine_sql, truncation_sql

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DatabaseTables",
    "engine_of",
    "for_engine",
    "histogram_queries",
    "plan_target",
    "statistics_sql",
    "target",
]


class DatabaseTables(Tables):
    """The relation builder's view of the database: metadata of tables the analyst may query (authorised
    first, so nothing about another table reaches them), and reads of public tables only."""

    def __init__(self, db: Database, analyst: str | None) -> None:
        self.db = db
        self.analyst = analyst
        self.read: list[tuple[str, Any]] = []  # each table's stored metadata, read before use (prepared.py)

    def meta(self, name: str) -> TableMeta:
        table = name if self.analyst is None else authorize(self.db, self.analyst, name)
        self.read.append((table, self.db.catalog.metadata(table)))
        try:
            return self.db.metadata(table)
        except UnknownTable:
            if self.analyst is None:
                raise  # the owner: the lookup's own message, with suggestions from every table
            # authorised, so the table is registered: its attached engine no longer has the source (and
            # the lookup's suggestions would name that engine's other tables)
            raise EngineUnavailable(
                f"table {table!r} cannot be read now: its attached engine no longer has its source; "
                "nothing was spent: ask the owner to attach it again"
            ) from None

    def _read_public(self, relation: Relation, query: Callable[[str], str]) -> pd.DataFrame:
        """``query(<the relation as a FROM item>)`` run on its engine: public tables only."""
        assert relation.public, "only public tables are read to plan a query"
        # a relation of literals only (UNNEST([…])) reads no table: any engine runs it
        backend, sources = engine_of(self.db, relation.tables) if relation.tables else (self.db.backend, {})
        sql = query(relation.source(sources))
        return backend.fetch(for_engine(backend, None, sql), timeout=self.db.query_timeout)

    def max_matches(self, relation: Relation, keys: list[str]) -> int:
        by = f" GROUP BY {', '.join(keys)}" if keys else ""
        frame = self._read_public(
            relation,
            lambda rows: f"SELECT MAX(n) AS n FROM (SELECT COUNT(*) AS n FROM {rows} AS _p{by}) AS _m",
        )
        value = canonical_key(frame.iloc[0, 0]) if len(frame) else None
        return 0 if value is None else int(value)

    def values_of(self, sql: str, column: ColumnMeta, values: list[Any]) -> tuple[Any, ...] | None:
        return self.db.evaluate_domain(sql, column, values)

    def public_values(self, relation: Relation, limit: int) -> list[Any]:
        frame = self._read_public(
            relation, lambda rows: f"SELECT DISTINCT * FROM {rows} AS _p LIMIT {int(limit)}"
        )
        return [canonical_key(v) for v in frame.iloc[:, 0].tolist()] if frame.shape[1] else []


def engine_of(db: Database, tables: tuple[str, ...]) -> tuple[Engine, dict[str, str]]:
    """The one engine holding every table of a query, and each table's quoted name there."""
    found = [db.backend_for(t) for t in tables]
    backend = found[0][0]
    if any(engine is not backend for engine, _ in found):
        raise UnsupportedQuery(
            f"the tables {', '.join(repr(t) for t in tables)} live in different engines; a query joins "
            "tables of one engine (load or attach them together)"
        )
    return backend, {t: quote(source) for t, (_, source) in zip(tables, found, strict=True)}


def target(db: Database, meta: TableMeta) -> tuple[Engine, str, str | None]:
    """Where a table's engine SQL runs: the engine, the table's name there, and the hidden per-unit row
    count column the rewrite may use (None without a privacy unit, or where privdb keeps none)."""
    backend, source = db.backend_for(meta.name)
    return backend, source, backend.unit_rows(source, meta.privacy_unit) if meta.privacy_unit else None


def _sources(db: Database, plan: Plan, relation: Relation) -> tuple[Engine, dict[str, str]]:
    """The engine of a plan's relation and each table's quoted name there (sampled under Sample)."""
    backend, sources = engine_of(db, relation.tables)
    personal = personal_table(db, plan.relation)
    if personal is not None:  # the Sample mechanism: the query reads a sample of the table's units
        sources[personal.name] = sampled_source(personal, sources[personal.name], plan.epsilon)
    return backend, sources


def plan_target(db: Database, plan: Plan) -> tuple[Engine, str, str | None, str | None]:
    """Where a plan's engine SQL runs: the engine, the base table's name there, its hidden per-unit row
    counts (a plain table only), and the FROM item of a subquery or JOIN (None: the table itself)."""
    relation = plan.relation
    if relation is None:
        return (*target(db, plan.table), None)
    backend, sources = _sources(db, plan, relation)
    _, base = db.backend_for(relation.base)
    personal = personal_table(db, plan.relation)
    if relation.plain:
        unit = plan.table.privacy_unit
        sampled = sources[relation.base] if personal is not None else None
        return backend, base, backend.unit_rows(base, unit) if unit else None, sampled
    unit_rows = None
    if relation.carried_unit is not None and plan.table.privacy_unit is not None:
        unit_rows = backend.unit_rows(base, relation.carried_unit)  # no second read of the metadata
        if unit_rows is not None:
            sources[UNIT_ROWS] = quote(unit_rows)
    return backend, base, unit_rows, relation.source(sources)


def statistics_sql(db: Database, plan: Plan) -> str:
    """The plan's engine SQL in its engine's dialect, bound (names and types checked, no data read)."""
    backend, source, unit_rows, from_ = plan_target(db, plan)
    eager = None
    if plan.relation is not None and (join := plan.relation.eager) is not None:  # a join on the unit
        # each side's hidden per-unit row count, when current (a stored table, read whole)
        one_rows, many_rows = (
            backend.unit_rows(db.backend_for(side.base)[1], side.meta.privacy_unit)
            if side.plain and side.meta.privacy_unit and personal_table(db, plan.relation) is None
            else None
            for side in (join.one, join.many)
        )
        eager = eager_sql(plan, _sources(db, plan, plan.relation)[1], backend.dialect, one_rows, many_rows)
    sql = for_engine(
        backend,
        plan,
        eager
        or _over_layout(backend, plan, source, unit_rows, from_)
        or engine_sql(plan, source, unit_rows, from_, backend.dialect),
    )
    if sql:
        backend.bind(sql)
    return sql


def _over_layout(
    backend: Engine, plan: Plan, source: str, unit_rows: str | None, from_: str | None
) -> str | None:
    """The one-scan form over a table's current layout (privdb.sql.run.layout), where it applies: a plain
    table privdb wrote with its unit sizes current, no WHERE, and no GROUP BY (DuckDB: other engines split
    by the unit sizes already, engine_sql) or one bare column whose stored choice is current (other engines:
    the split form, having no compensated sum)."""
    unit = plan.table.privacy_unit
    if unit is None or unit_rows is None or from_ is not None:
        return None
    if plan.resolved.where is not None or not computed_stats(plan.statistics)[0]:
        return None
    duckdb = backend.dialect == "duckdb"
    if not plan.resolved.keys:
        return layout_sql(plan, source, unit_rows, None) if duckdb else None
    column = chosen_column(plan)
    kept = backend.unit_choice(source, unit, column) if column is not None else None
    if kept is None:
        return None
    if duckdb:
        return layout_sql(plan, source, unit_rows, kept)
    return split_sql(plan, source, unit_rows, kept, backend.dialect)


_ENGINE_NAMES = {"postgres": "PostgreSQL", "sqlite": "SQLite", "spark": "Spark"}
_PORTABLE = (
    "the forms proven total on every engine: comparisons, IN, BETWEEN, LIKE, IS NULL, AND/OR/NOT, CASE, "
    "COALESCE, NULLIF; + - * / // ABS SIGN FLOOR CEIL GREATEST LEAST and CAST to INTEGER (of whole numbers) "
    "where every number read is a literal, an integer column or an aggregate's clamped column and no result "
    "can overflow, underflow or divide by 0 by the public bounds (ROUND, %, SQRT, LN, EXP, POWER, text and "
    "date functions stay DuckDB's)"
)


def for_engine(backend: Engine, plan: Plan | None, sql: str) -> str:
    """The engine SQL in ``backend``'s dialect (sqlglot). Engines other than DuckDB have no ``TRY``, so a
    WHERE or key expression that could fail on some rows is refused there (whether a query fails must
    never depend on the data); the remaining ``TRY`` wrappers guard only casts of clamped values."""
    if backend.dialect == "duckdb" or not sql:
        return sql
    engine_name = _ENGINE_NAMES.get(backend.dialect, backend.dialect)
    if isinstance(plan, Plan) and (
        not plan.resolved.portable or (plan.relation is not None and not plan.relation.portable)
    ):
        raise UnsupportedQuery(
            f"the {engine_name} engine cannot run this query's subquery, join condition or aggregate "
            f"argument safely: outside DuckDB privdb sends only {_PORTABLE} (docs/engines.md); joins must be "
            "on columns stored alike. Other forms could fail on some rows there and make the query fail "
            "depending on the data: keep to these forms there, or load the tables into privdb's DuckDB "
            "for the whole language"
        )
    if isinstance(plan, Plan):
        checked: list[tuple[exp.Expression | None, Expr | None]] = [
            (k.node, k.expr) for k in plan.resolved.keys
        ]
        if plan.resolved.where is not None:
            checked.append((None, plan.resolved.where))
        for node, e in checked:
            if e is not None and not e.portable:
                text = e.source or (node.sql() if node is not None else "")
                raise UnsupportedQuery(
                    f"the {engine_name} engine cannot run {text} safely: outside DuckDB privdb sends only "
                    f"{_PORTABLE} (docs/engines.md); other forms could fail on some rows there and make the "
                    "query fail depending on the data; load the table into privdb's DuckDB for the whole "
                    "language"
                )
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except RecursionError:  # a long chain (256 parts at most) nests too deeply for the transpiler
        raise UnsupportedQuery(
            f"the query is too deeply nested for the {_ENGINE_NAMES.get(backend.dialect, backend.dialect)} "
            "engine; shorten its chains of AND/OR or arithmetic"
        ) from None
    for node in list(tree.find_all(exp.Try)):
        node.replace(node.this)
    for i, sub in enumerate(tree.find_all(exp.Subquery)):  # PostgreSQL wants every derived table named
        if not sub.alias and isinstance(sub.parent, (exp.From, exp.Join)):  # (not `x IN (SELECT …)`)
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_q{i}")))
    return tree.sql(dialect=backend.dialect)


def histogram_queries(db: Database, plan: Plan) -> dict[str, str]:
    """The engine queries of a plan's order statistics and modes (by histogram name) and of its distinct
    counts (by statistic name), bound."""
    backend, source, unit_rows, from_ = plan_target(db, plan)
    out = {}
    for h in plan.histograms:
        out[h.name] = for_engine(
            backend, plan, histogram_sql(plan, h, source, unit_rows, from_, backend.dialect)
        )
        backend.bind(out[h.name])
    for stat in plan.statistics:
        if stat.kind in DISTINCT_KINDS:
            out[stat.name] = for_engine(
                backend, plan, distinct_sql(plan, stat, source, unit_rows, from_, backend.dialect)
            )
            backend.bind(out[stat.name])
    if over := truncation_sql(plan, source, unit_rows, from_):  # the statistics query has no place for it
        out[TRUNCATION_QUERY] = for_engine(backend, plan, over)
        backend.bind(out[TRUNCATION_QUERY])
    return out
