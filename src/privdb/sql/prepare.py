"""Prepare a DP-SELECT without touching the data or the budget: parse, build its relation (every table
authorised first), plan, and bind its engine SQL — or, for a shape kept already, plan afresh from the kept
parts (privdb.sql.plan.prepared). Record releases and ACCURACY clauses take their modes' paths here; a
query of public tables only may be answered exactly instead (:class:`Exact`)."""

from __future__ import annotations

from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.result import Result
from privdb.sql.accuracy import first as accuracy_first
from privdb.sql.accuracy.request import with_chosen_epsilon
from privdb.sql.front.bigquery.plan import tighten, translate
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.front.query import DPQuery
from privdb.sql.front.relation.from_clause import build_relation
from privdb.sql.plan.planner import plan_query, plan_shape
from privdb.sql.plan.prepared import keep, lookup, shape_of, state
from privdb.sql.plan.types import Plan, Shape
from privdb.sql.public.answer import answer_public
from privdb.sql.release.bind import prepare_release
from privdb.sql.release.plan import ReleasePlan, is_record_release
from privdb.sql.run.targets import DatabaseTables, statistics_sql

__all__ = ["Exact", "prepare", "prepare_query"]


class Exact(Exception):
    """The exact, free answer of a DP-SELECT that reads public tables only (:func:`_exact_public`),
    carried out of :func:`prepare` right after the parse."""

    def __init__(self, result: Result) -> None:
        self.result = result


def prepare(
    db: Database, text: str, analyst: str | None = None, *, exact: bool = False
) -> tuple[Plan | ReleasePlan, str]:
    """Parse, plan and bind (the statistics' SQL; order statistics' queries are bound by
    ``histogram_queries``) without touching the data or the budget. With ``analyst``, every table is
    authorised first: nothing about a table they may not query (its columns, bounds, errors) reaches them.

    A query of a kept shape (the same text and asker but for ε: privdb.sql.plan.prepared) skips the parse,
    the relation and the resolution; the noise is sized and the engine SQL written afresh. ``exact``: a
    query of public tables only is answered exactly instead (raises :class:`Exact`; such shapes are never
    kept)."""
    hit = lookup(db, text, analyst)
    if hit is not None:
        query, parts = hit
        relation = parts.relation
        planned = plan_query(query, relation.meta, db.evaluate_domain, relation, parts.shape)
        return planned, statistics_sql(db, planned)
    query = parse_dp_select(text)  # before the state is read: a refused text never opens the data
    before = state(db, analyst, (), ()) if shape_of(text, analyst) is not None else None
    tables = DatabaseTables(db, analyst)
    if query.bigquery is not None:  # BigQuery's spelling: the DP-SELECT it asks of its table
        query = translate(query, tables)
    if is_record_release(query.select):
        return prepare_release(db, query, tables)
    plan, shape = _plan(db, query, tables, exact)
    sql = statistics_sql(db, plan)
    if before is not None and shape is not None:
        keep(db, text, analyst, plan, shape, before, tables.read)
    return plan, sql


def prepare_query(db: Database, query: DPQuery, analyst: str | None = None) -> tuple[Plan, str]:
    """:func:`prepare` of a query already parsed (and maybe changed: privdb.sql.implicit writes the bounds
    it found into one); never kept as a shape, never answered exactly."""
    tables = DatabaseTables(db, analyst)
    if query.bigquery is not None:
        query = translate(query, tables)
    plan, _ = _plan(db, query, tables, False)
    return plan, statistics_sql(db, plan)


def _plan(db: Database, query: DPQuery, tables: DatabaseTables, exact: bool) -> tuple[Plan, Shape | None]:
    """An aggregate query's plan after the parse, and the shape to keep (None for relations of public
    tables only, which a run answers exactly: a kept shape would skip that)."""
    relation = tighten(build_relation(query.select, tables), query)
    public = exact and relation.public and tables.analyst is not None
    if public and (answer := _exact_public(db, str(tables.analyst), query)) is not None:
        raise Exact(answer)
    if query.accuracy is not None:  # the smallest ε reaching the accuracy, from plans alone
        query = with_chosen_epsilon(query, relation, db.evaluate_domain)
    shape = plan_shape(query, relation.meta, db.evaluate_domain)
    plan = plan_query(query, relation.meta, db.evaluate_domain, relation, shape)
    if plan.query.schedule is not None:
        accuracy_first.calibrate(plan)  # every step's noise, before anything is read
    return plan, None if relation.public else shape


def _exact_public(db: Database, analyst: str, query: DPQuery) -> Result | None:
    """A DP-SELECT whose relation reads public tables only, answered exactly and free, as the plain SELECT
    it is (privdb.sql.public): noise would protect no one. None where plain SELECT does not answer the form
    (MEDIAN, QUANTILE, MODE, …): the DP path answers it then (docs/answers.md)."""
    try:
        result = answer_public(db, analyst, query.body())
    except PrivdbError:
        return None
    result.extra = dict(result.extra or {}) | {"exact": True}
    return result
