"""Run a DP-SELECT end to end, in the one order privacy allows:

    parse → plan → bind (no data) → stored answer? → reserve budget → execute → noise → commit → result

Anything refused before ``execute`` releases the reservation: nothing is spent. Once the engine has read
data, the spend stands, even if the engine then fails (reported as ``query_failed`` without detail, since
the failure itself may depend on the data). The spend is committed before the answer is returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import sqlglot
from sqlglot import exp

from privdb import deadline
from privdb.accounting.composition import GaussianCost
from privdb.accounting.disclosure import presence_disclosure
from privdb.backends.base import Engine, find_table
from privdb.backends.duckdb import DuckDBBackend, quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.database import Database
from privdb.errors import (
    EngineUnavailable,
    InternalError,
    PrivdbError,
    QueryFailed,
    Unauthorized,
    UnknownTable,
    UnsupportedQuery,
)
from privdb.mechanisms._validate import exact
from privdb.result import Result
from privdb.sql import accuracy_first
from privdb.sql.accuracy import with_chosen_epsilon
from privdb.sql.charge import charged
from privdb.sql.explain import describe, describe_release
from privdb.sql.expr import Expr
from privdb.sql.gaussian_plan import zcdp_cost
from privdb.sql.noise import NoisyAnswer, Statistics, add_noise, canonical_key
from privdb.sql.parse import DPQuery, parse_dp_select
from privdb.sql.personal import losses_note, mark_accuracy, personal_table, sampled_source, summary
from privdb.sql.plan import Plan, Shape, plan_query, plan_shape
from privdb.sql.prepared import shape_of, shapes, state
from privdb.sql.public import answer_public, is_plain_select
from privdb.sql.relation import UNIT_ROWS, Relation, Tables, build_relation
from privdb.sql.release import (
    RELEASE_GUARANTEE,
    ReleasePlan,
    is_record_release,
    plan_release,
    randomize_records,
    release_sql,
)
from privdb.sql.rewrite import distinct_sql, engine_sql, histogram_sql, truncation_sql
from privdb.sql.sensitivity import DISTINCT_KINDS
from privdb.sql.truncation import QUERY as TRUNCATION_QUERY

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


class _DatabaseTables(Tables):
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
        backend, sources = _engine_of(self.db, relation.tables)
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


def _engine_of(db: Database, tables: tuple[str, ...]) -> tuple[Engine, dict[str, str]]:
    """The one engine holding every table of a query, and each table's quoted name there."""
    found = [db.backend_for(t) for t in tables]
    backend = found[0][0]
    if any(engine is not backend for engine, _ in found):
        raise UnsupportedQuery(
            f"the tables {', '.join(repr(t) for t in tables)} live in different engines; a query joins "
            "tables of one engine (load or attach them together)"
        )
    return backend, {t: quote(source) for t, (_, source) in zip(tables, found, strict=True)}


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
    of public tables only is answered exactly instead (raises :class:`_Exact`; kept shapes are never one)."""
    kept = shapes(db)
    hit = kept.lookup(db, text, analyst)
    if hit is not None:
        query, parts = hit
        relation = parts.relation
        planned = plan_query(query, relation.meta, db.evaluate_domain, relation, parts.shape)
        return planned, statistics_sql(db, planned)
    query = parse_dp_select(text)  # before the state is read: a refused text never opens the data
    if exact and analyst is not None and (answer := _exact_public(db, analyst, query)) is not None:
        raise _Exact(answer)
    before = state(db, analyst, (), ()) if shape_of(text, analyst) is not None else None
    tables = _DatabaseTables(db, analyst)
    plan, sql, shape = _prepare(db, query, tables)
    if before is not None and shape is not None and isinstance(plan, Plan):
        kept.keep(db, text, analyst, plan, shape, before, tables.read)
    return plan, sql


def _prepare(
    db: Database, query: DPQuery, tables: _DatabaseTables
) -> tuple[Plan | ReleasePlan, str, Shape | None]:
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
    if query.accuracy is not None:  # the smallest ε reaching the accuracy, from plans alone
        query = with_chosen_epsilon(query, relation, db.evaluate_domain)
    shape = plan_shape(query, relation.meta, db.evaluate_domain)
    plan = plan_query(query, relation.meta, db.evaluate_domain, relation, shape)
    if plan.query.schedule is not None:
        accuracy_first.calibrate(plan)  # every step's noise, before anything is read
    return plan, statistics_sql(db, plan), shape


def target(db: Database, meta: TableMeta) -> tuple[Engine, str, str | None]:
    """Where a table's engine SQL runs: the engine, the table's name there, and the hidden per-unit row
    count column the rewrite may use (None without a privacy unit, or where privdb keeps none)."""
    backend, source = db.backend_for(meta.name)
    return backend, source, backend.unit_rows(source, meta.privacy_unit) if meta.privacy_unit else None


def _plan_target(db: Database, plan: Plan) -> tuple[Engine, str, str | None, str | None]:
    """Where a plan's engine SQL runs: the engine, the base table's name there, its hidden per-unit row
    counts (a plain table only), and the FROM item of a subquery or JOIN (None: the table itself)."""
    relation = plan.relation
    if relation is None:
        return (*target(db, plan.table), None)
    backend, sources = _engine_of(db, relation.tables)
    _, base = db.backend_for(relation.base)
    personal = personal_table(db, plan)
    if personal is not None:  # the Sample mechanism: the query reads a sample of the table's units
        sources[personal.name] = sampled_source(personal, sources[personal.name], plan.epsilon)
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
    backend, source, unit_rows, from_ = _plan_target(db, plan)
    sql = for_engine(backend, plan, engine_sql(plan, source, unit_rows, from_))
    if sql:
        backend.bind(sql)
    return sql


_ENGINE_NAMES = {"postgres": "PostgreSQL", "sqlite": "SQLite", "spark": "Spark"}
_PORTABLE = (
    "the forms proven total on every engine: comparisons, IN, BETWEEN, LIKE, IS NULL, AND/OR/NOT, CASE, "
    "COALESCE, NULLIF; + - * / // ABS SIGN FLOOR CEIL GREATEST LEAST and CAST to INTEGER (of whole numbers) "
    "where every number read is a literal, an integer column or an aggregate's clamped column and no result "
    "can overflow, underflow or divide by 0 by the public bounds (ROUND, %, SQRT, LN, EXP, POWER, text and "
    "date functions stay DuckDB's)"
)


def for_engine(backend: Engine, plan: Plan | ReleasePlan | None, sql: str) -> str:
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
        if not sub.alias:
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_q{i}")))
    return tree.sql(dialect=backend.dialect)


def histogram_queries(db: Database, plan: Plan) -> dict[str, str]:
    """The engine queries of a plan's order statistics and modes (by histogram name) and of its distinct
    counts (by statistic name), bound."""
    backend, source, unit_rows, from_ = _plan_target(db, plan)
    out = {}
    for h in plan.histograms:
        out[h.name] = for_engine(backend, plan, histogram_sql(plan, h, source, unit_rows, from_))
        backend.bind(out[h.name])
    for stat in plan.statistics:
        if stat.kind in DISTINCT_KINDS:
            out[stat.name] = for_engine(backend, plan, distinct_sql(plan, stat, source, from_))
            backend.bind(out[stat.name])
    if over := truncation_sql(plan, source, unit_rows, from_):  # the statistics query has no place for it
        out[TRUNCATION_QUERY] = for_engine(backend, plan, over)
        backend.bind(out[TRUNCATION_QUERY])
    return out


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


def authorize(db: Database, analyst: str, table: str) -> str:
    """Refuse (before anything is spent) an unknown analyst, or a table they may not query; return the
    table's stored name. Suggestions come only from the tables the analyst may query, and a scoped analyst
    gets one refusal for any table outside the grant, whether or not it exists (``find_table``)."""
    if not db.catalog.has_analyst(analyst):
        raise Unauthorized(f"unknown analyst {analyst!r}; the owner creates analysts with `privdb grant`")
    return find_table(table, db.table_names(), visible=db.catalog.analyst_tables(analyst))


def _exact_public(db: Database, analyst: str, query: DPQuery) -> Result | None:
    """A DP-SELECT that reads public tables only, answered exactly and free, as the plain SELECT it is
    (privdb.sql.public): noise would protect no one. None where a table is private (or unknown, or not
    granted: the DP path then refuses it as before), or where plain SELECT does not answer the form
    (MEDIAN, QUANTILE, MODE, a record release, …): the DP path answers it then (docs/answers.md)."""
    try:
        ctes = {c.alias_or_name.lower() for c in query.select.find_all(exp.CTE)}
        names = {t.name for t in query.select.find_all(exp.Table)} - {""}
        named = [n for n in names if n.lower() not in ctes]
        if not named or not all(_DatabaseTables(db, analyst).meta(n).public for n in named):
            return None
        if is_record_release(query.select):
            return None
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
