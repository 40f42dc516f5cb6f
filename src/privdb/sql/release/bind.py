"""A record release prepared before anything is read: its one table (authorised), its plan and its engine
SQL, bound on the engine holding the table."""

from __future__ import annotations

from sqlglot import exp

from privdb.database import Database
from privdb.errors import UnsupportedQuery
from privdb.sql.front.query import DPQuery
from privdb.sql.release.plan import ReleasePlan, plan_release, release_sql
from privdb.sql.run.targets import DatabaseTables, for_engine, target

__all__ = ["prepare_release"]


def _table_of(query: DPQuery) -> str:
    source = query.select.args.get("from_") or query.select.args.get("from")
    if source is None:
        raise UnsupportedQuery("a DP-SELECT needs FROM <table>")
    table = source.this
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise UnsupportedQuery(
            "a record release reads one table: FROM <table> (subqueries and joins are for aggregates)"
        )
    if table.args.get("db") or table.args.get("catalog"):
        raise UnsupportedQuery("FROM must name a table of this database, without a schema")
    return str(table.name)


def prepare_release(db: Database, query: DPQuery, tables: DatabaseTables) -> tuple[ReleasePlan, str]:
    """The plan and bound engine SQL of a record release (refused, free, where it is not offered)."""
    if query.accuracy is not None:
        raise UnsupportedQuery("ACCURACY applies to aggregates; a record release takes an ε: DP-SELECT 1 …")
    meta = tables.meta(_table_of(query))
    if meta.personal is not None:
        raise UnsupportedQuery(
            f"table {meta.name!r} gives each person their own ε: it answers aggregates only (the Sample "
            "mechanism); a record release is not offered for it"
        )
    plan = plan_release(query, meta)
    backend, source, unit_rows = target(db, meta)
    sql = for_engine(backend, None, release_sql(plan, source, unit_rows))
    if sql:
        backend.bind(sql)
    return plan, sql
