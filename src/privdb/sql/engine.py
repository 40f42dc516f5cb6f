"""Run a DP-SELECT end to end, in the one order privacy allows:

    parse → plan → bind (no data) → stored answer? → reserve budget → execute → noise → commit → result

Anything refused before ``execute`` releases the reservation: nothing is spent. Once the engine has read
data, the spend stands, even if the engine then fails (reported as ``query_failed`` without detail, since
the failure itself may depend on the data). The spend is committed before the answer is returned.
"""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
from sqlglot import exp

from privdb import deadline
from privdb.accounting.composition import GaussianCost
from privdb.accounting.disclosure import presence_disclosure
from privdb.backends.duckdb import DuckDBBackend
from privdb.database import Database
from privdb.errors import (
    InternalError,
    PrivdbError,
    QueryFailed,
    Unauthorized,
    UnsupportedQuery,
)
from privdb.mechanisms._validate import exact
from privdb.result import Result
from privdb.sql import accuracy_first
from privdb.sql.accuracy import with_chosen_epsilon
from privdb.sql.charge import charged
from privdb.sql.explain import describe, describe_release
from privdb.sql.gaussian_plan import zcdp_cost
from privdb.sql.noise import NoisyAnswer, Statistics, add_noise
from privdb.sql.parse import DPQuery, parse_dp_select
from privdb.sql.personal import losses_note, mark_accuracy, personal_table, summary
from privdb.sql.plan import Plan, Shape, plan_query, plan_shape
from privdb.sql.prepared import shape_of, shapes, state
from privdb.sql.public import answer_public, is_plain_select
from privdb.sql.relation import build_relation
from privdb.sql.release import (
    RELEASE_GUARANTEE,
    ReleasePlan,
    is_record_release,
    plan_release,
    randomize_records,
    release_sql,
)
from privdb.sql.targets import (
    DatabaseTables,
    authorize,
    for_engine,
    histogram_queries,
    statistics_sql,
    target,
)

__all__ = ["authorize", "charged", "explain", "prepare", "run", "statistics_sql", "target"]


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


class _Exact(Exception):
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

    A query of a kept shape (the same text and asker but for ε: privdb.sql.prepared) skips the parse, the
    relation and the resolution; the noise is sized and the engine SQL written afresh. ``exact``: a query
    of public tables only is answered exactly instead (raises :class:`_Exact`; such shapes are never kept)."""
    kept = shapes(db)
    hit = kept.lookup(db, text, analyst)
    if hit is not None:
        query, parts = hit
        relation = parts.relation
        planned = plan_query(query, relation.meta, db.evaluate_domain, relation, parts.shape)
        return planned, statistics_sql(db, planned)
    query = parse_dp_select(text)  # before the state is read: a refused text never opens the data
    before = state(db, analyst, (), ()) if shape_of(text, analyst) is not None else None
    tables = DatabaseTables(db, analyst)
    plan, sql, shape = _prepare(db, query, tables, exact)
    if before is not None and shape is not None and isinstance(plan, Plan):
        kept.keep(db, text, analyst, plan, shape, before, tables.read)
    return plan, sql


def _prepare(
    db: Database, query: DPQuery, tables: DatabaseTables, exact: bool = False
) -> tuple[Plan | ReleasePlan, str, Shape | None]:
    """:func:`prepare` after the parse; the shape is None where none is kept (record releases, and
    relations of public tables only, which a run answers exactly: a kept shape would skip that)."""
    plan: Plan | ReleasePlan
    if is_record_release(query.select):
        if query.accuracy is not None:
            raise UnsupportedQuery(
                "ACCURACY applies to aggregates; a record release takes an ε: DP-SELECT 1 …"
            )
        meta = tables.meta(_table_of(query))
        if meta.personal is not None:
            raise UnsupportedQuery(
                f"table {meta.name!r} gives each person their own ε: it answers aggregates only (the Sample "
                "mechanism); a record release is not offered for it"
            )
        plan = plan_release(query, meta)
        backend, source, unit_rows = target(db, meta)
        sql = for_engine(backend, plan, release_sql(plan, source, unit_rows))
        if sql:
            backend.bind(sql)
        return plan, sql, None
    relation = build_relation(query.select, tables)
    public = exact and relation.public and tables.analyst is not None
    if public and (answer := _exact_public(db, str(tables.analyst), query)) is not None:
        raise _Exact(answer)
    if query.accuracy is not None:  # the smallest ε reaching the accuracy, from plans alone
        query = with_chosen_epsilon(query, relation, db.evaluate_domain)
    shape = plan_shape(query, relation.meta, db.evaluate_domain)
    plan = plan_query(query, relation.meta, db.evaluate_domain, relation, shape)
    if plan.query.schedule is not None:
        accuracy_first.calibrate(plan)  # every step's noise, before anything is read
    return plan, statistics_sql(db, plan), None if relation.public else shape


def explain(db: Database, text: str, analyst: str | None = None) -> dict[str, Any]:
    """The plan, without reading data or spending (privdb.sql.explain): per output column its mechanism, ε
    share and 95% ±; per noisy statistic its sensitivity and noise; the engine SQL. ``analyst``: asked by
    that analyst, so only for a table granted to them (None: the owner). Under the query's time limit."""
    with deadline.limit(db.query_timeout):
        return _explain(db, text, analyst)


def _explain(db: Database, text: str, analyst: str | None) -> dict[str, Any]:
    plan, sql = prepare(db, text, analyst)
    if isinstance(plan, ReleasePlan):
        described = describe_release(plan, sql)
    else:
        described = describe(plan, [sql, *histogram_queries(db, plan).values()])
    if (personal := personal_table(db, plan)) is not None:
        described["personalised"] = summary(personal, plan.epsilon)
    if plan.query.accuracy is not None:
        half, confidence, most = plan.query.accuracy
        described["accuracy_request"] = {"half_width": half, "confidence": confidence, "max_epsilon": most}
        if isinstance(plan, Plan) and plan.query.schedule is not None:
            described["accuracy_first"] = accuracy_first.describe(plan)
    if isinstance(plan, Plan) and (cost := zcdp_cost(plan)) is not None:
        rho, eps_g, delta_g = cost
        described["composition"] = {
            "method": "zcdp", "rho": rho, "epsilon_plain": eps_g, "delta": delta_g,
            "note": "the Gaussian part is charged what this ρ adds to the analyst's Gaussian answers after "
                    "conversion at their summed δ: at most epsilon_plain, less after the first",
        }  # fmt: skip
    return described | {"disclosure": presence_disclosure(plan.epsilon)}


def run(db: Database, analyst: str, text: str) -> Result:
    """Answer ``text`` for ``analyst`` with differential privacy, paid from their budget.

    A plain SELECT reads public tables only, free (privdb.sql.public). A refusal is written to the
    catalog's log of refused queries; answers are in the ledger's spends."""
    with db.catalog.snapshot():  # one catalog for the whole query, read once
        return _answer(db, analyst, text)


def _answer(db: Database, analyst: str, text: str) -> Result:
    if not db.catalog.has_analyst(analyst):
        raise Unauthorized(f"unknown analyst {analyst!r}; the owner creates analysts with `privdb grant`")
    try:
        if isinstance(text, str) and is_plain_select(text):
            return answer_public(db, analyst, text)
        return _run(db, analyst, text)
    except PrivdbError as err:
        if not isinstance(err, QueryFailed | InternalError):  # those were charged: the ledger has them
            db.catalog.log_refusal(analyst, text if isinstance(text, str) else repr(text), err.code)
        raise


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


def _run(db: Database, analyst: str, text: str) -> Result:
    with deadline.limit(db.query_timeout):  # planning: under the query's limit, refused free past it
        try:
            plan, sql = prepare(db, text, analyst, exact=True)
        except _Exact as answered:
            return answered.result
        histograms = histogram_queries(db, plan) if isinstance(plan, Plan) else {}  # bound before any spend
        personal = personal_table(db, plan)
        cost = zcdp_cost(plan) if isinstance(plan, Plan) else None
    base = plan.relation.base if isinstance(plan, Plan) and plan.relation is not None else plan.table.name
    backend, _ = db.backend_for(base)

    def read() -> tuple[Statistics | None, dict[str, pd.DataFrame]]:
        # one deadline for all of the query's engine reads: the server's limit bounds the whole query
        deadline = None if db.query_timeout is None else time.monotonic() + db.query_timeout

        def left() -> float | None:
            if deadline is None:
                return None
            if (remaining := deadline - time.monotonic()) <= 0:
                raise TimeoutError("the query's engine reads ran past the limit")
            return remaining

        frame: Statistics | None = None
        if sql and isinstance(backend, DuckDBBackend) and isinstance(plan, Plan):
            frame = backend.fetch_columns(sql, timeout=left())  # the noise step reads Python values
        elif sql:
            frame = backend.fetch(sql, timeout=left())
        return frame, {name: backend.fetch(h, timeout=left()) for name, h in histograms.items()}

    def respond(data: tuple[Statistics | None, dict[str, pd.DataFrame]]) -> NoisyAnswer:
        frame, histograms = data
        if isinstance(plan, ReleasePlan):
            assert isinstance(frame, pd.DataFrame)
            return randomize_records(plan, frame, db.noise_source)
        if plan.query.schedule is not None:  # accuracy first: MAX reserved, the ex-post ε charged
            answer = accuracy_first.respond(plan, frame, db.noise_source)
        else:
            answer = add_noise(plan, frame, db.noise_source, histograms)
        return mark_accuracy(answer) if personal is not None else answer

    extra: dict[str, Any] = {"guarantee": RELEASE_GUARANTEE} if isinstance(plan, ReleasePlan) else {}
    note = " ".join(plan.query.text.split())
    if personal is not None:  # the answer and the ledger's note tell each class's loss
        extra["personalised"] = summary(personal, plan.epsilon)
        suffix = losses_note(personal, plan.epsilon)
        note = note[: 500 - len(suffix)] + suffix
        classes = [(personal.name, str(c["class"]), exact(c["epsilon_lost"])) for c in
                   summary(personal, plan.epsilon)["classes"]]  # fmt: skip
    tables = plan.relation.tables if isinstance(plan, Plan) and plan.relation is not None else (base,)
    gaussian = None
    if cost is not None:
        rho, eps_g, delta_g = cost
        gaussian = GaussianCost(rho=rho, delta=exact(delta_g), epsilon=min(exact(eps_g), exact(plan.epsilon)))
    return charged(
        db, analyst, key=plan.query.normalized, table=base, epsilon=plan.epsilon,
        delta=plan.delta, read=read, respond=respond, extra=extra, note=note,
        tables=tables, gaussian=gaussian, classes=classes if personal is not None else (),
    )  # fmt: skip
