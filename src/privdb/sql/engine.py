"""Run a DP-SELECT end to end, calling the stages in the one order privacy allows:

    prepare (parse → relation → plan → bind; no data) → stored answer? → reserve budget → read → noise
    → commit → result

Anything refused before the read releases the reservation: nothing is spent. Once the engine has read
data, the spend stands, even if the engine then fails (reported as ``query_failed`` without detail, since
the failure itself may depend on the data). The spend is committed before the answer is returned. The
decisions are the stages' own: privdb.sql.prepare, privdb.sql.run.read, privdb.sql.respond,
privdb.sql.spend and privdb.sql.charge (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from privdb import deadline
from privdb.database import Database
from privdb.errors import InternalError, PrivdbError, QueryFailed
from privdb.result import Result
from privdb.sql.access import check_analyst
from privdb.sql.answer.noise import NoisyAnswer
from privdb.sql.charge import charged
from privdb.sql.explain import explain
from privdb.sql.front.bigquery.quantiles import as_arrays
from privdb.sql.front.bigquery.report import as_reports
from privdb.sql.front.dpselect.parse import parse_bigquery
from privdb.sql.front.parameters import Value, bind_parameters
from privdb.sql.front.query import Options
from privdb.sql.implicit import staged
from privdb.sql.implicit_run import answer_staged
from privdb.sql.plan.personal import personal_table
from privdb.sql.plan.types import Plan
from privdb.sql.prepare import Exact, prepare
from privdb.sql.public.answer import answer_public, is_plain_select
from privdb.sql.public.wrapped import Session, answer_wrapped, granted_session, is_wrapped
from privdb.sql.release.plan import ReleasePlan
from privdb.sql.respond import responder
from privdb.sql.run.read import Read, reader
from privdb.sql.spend import Spend, base_table, spend_of

__all__ = ["Session", "explain", "prepare", "run"]


_ANY_EPSILON = Session(epsilon=1.0)  # is_wrapped with it: whether a text is plain SQL (not a DP query)


def run(
    db: Database,
    analyst: str,
    text: str,
    session: Session | None = None,
    parameters: Mapping[str, Value] | None = None,
) -> Result:
    """Answer ``text`` for ``analyst`` with differential privacy, paid from their budget; ``parameters``:
    the values of its ``@name`` parameters, written in as literals first (privdb.sql.front.parameters).

    A plain SELECT reads public tables only, free (privdb.sql.public); one holding DP queries (or, with
    ``session``'s ε, aggregates of private tables) is post-processing of their released rows
    (privdb.sql.public.wrapped). A refusal is written to the catalog's log of refused queries; answers
    are in the ledger's spends."""
    if parameters:
        check_analyst(db, analyst)
        text = bind_parameters(text, parameters)
    with db.catalog.snapshot():  # one catalog for the whole query, read once
        return _answer(db, analyst, text, session)


def _answer(db: Database, analyst: str, text: str, session: Session | None) -> Result:
    check_analyst(db, analyst)
    # a door without session settings: the grant's (privdb grant --query-epsilon), read for plain SQL only
    # (a DP query never needs it: one catalog read fewer on the busiest path)
    if session is None and isinstance(text, str) and is_wrapped(text, _ANY_EPSILON):
        session = granted_session(db, analyst)
    try:
        if isinstance(text, str) and is_wrapped(text, session):
            return answer_wrapped(
                db,
                analyst,
                text,
                dp=lambda inner: _run(db, analyst, inner),
                check=lambda inner: _check(db, analyst, inner),
                session=session,
            )
        if isinstance(text, str) and is_plain_select(text):
            return answer_public(db, analyst, text)
        return _run(db, analyst, text)
    except PrivdbError as err:
        if not isinstance(err, QueryFailed | InternalError):  # those were charged: the ledger has them
            db.catalog.log_refusal(analyst, text if isinstance(text, str) else repr(text), err.code)
        raise


def _check(db: Database, analyst: str, text: str) -> None:
    """Plan a DP query without reading data or spending (refused as it would be when run)."""
    with deadline.limit(db.query_timeout):
        prepare(db, text, analyst)


def _shaped(answer: Result, options: Options, bounding: dict[int, dict[str, Any]] | None = None) -> Result:
    """The answer as BigQuery's spelling shapes it: arrays of quantiles, reports (``bounding``: the bounds
    found from the data, by item: privdb.sql.implicit_run)."""
    return as_reports(as_arrays(answer, options.arrays), options.reports, bounding)


def _run(db: Database, analyst: str, text: str) -> Result:
    parsed = parse_bigquery(text)  # BigQuery's spelling, parsed once: its answer's shape, its implicit bounds
    shape = parsed.bigquery if parsed is not None and parsed.bigquery is not None else Options()
    with deadline.limit(db.query_timeout):  # planning: under the query's limit, refused free past it
        try:
            plan, sql = prepare(db, text, analyst, exact=True)
        except Exact as answered:
            return _shaped(answered.result, shape)
        stage = staged(db, analyst, parsed, plan) if isinstance(plan, Plan) else None
        bound = _bound(db, plan, sql) if stage is None else None
    if stage is not None:  # ZetaSQL's implicit bounds: found from the data first (privdb.sql.implicit)
        answer, bounding = answer_staged(
            db, analyst, stage, lambda p, s: _charge(db, analyst, _bound(db, p, s))
        )
        return _shaped(answer, shape, bounding)
    assert bound is not None
    return _shaped(_charge(db, analyst, bound), shape)


_Bound = tuple[Callable[[], Read], Callable[[Read], NoisyAnswer], Spend]


def _bound(db: Database, plan: Plan | ReleasePlan, sql: str) -> _Bound:
    """A prepared plan's read (every engine query bound now, before any spend), noise and spend."""
    aggregates = plan if isinstance(plan, Plan) else None
    read = reader(db, aggregates, base_table(plan), sql)
    personal = personal_table(db, aggregates.relation if aggregates is not None else None)
    return read, responder(plan, personal is not None, db.noise_source), spend_of(plan, personal)


def _charge(db: Database, analyst: str, bound: _Bound) -> Result:
    read, respond, spend = bound
    return charged(db, analyst, read=read, respond=respond, **vars(spend))
