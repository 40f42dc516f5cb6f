"""DP queries inside plain SQL: the plain query around them is post-processing of the rows they release.

    is_wrapped(text)                              → does a plain query hold DP queries (or, with a session
                                                    ε, aggregates of private tables)?
    answer_wrapped(db, analyst, text, dp, check, session) → the outer query's rows; ε = the DP queries' ε

BI tools send SQL they write themselves around the analyst's: Superset runs every SQL Lab query and
virtual dataset as ``SELECT … FROM (<query>) AS virtual_table LIMIT n``, and a chart over a table as a
plain ``SELECT key, AVG(x) FROM t GROUP BY key``. Here a DP query may stand as a subquery or a CTE body of
a plain SELECT — written as ``DP-SELECT …`` or BigQuery's ``SELECT WITH DIFFERENTIAL_PRIVACY …`` — and,
when the session has a per-query ε (``SET privdb.epsilon``: :class:`Session`), a plain SELECT with
aggregates over a private table stands for the DP-SELECT it reads as at that ε.

Each DP query is answered as on its own (planned, charged, logged; a repeat is the stored answer, free);
its rows — the released values, with their interval columns unless the session turns them off — become a
table of the sandbox of privdb.sql.public.answer, beside copies of the public tables the outer query names.
The outer query is written in the plain SELECT's closed language and may name only those: released rows
and public tables, never a private table. So what it computes is a function of released values and public
data alone: post-processing, which costs no privacy (docs/proofs/sql.md, "DP queries inside plain SQL").
Every check that can refuse — the outer query's language and tables, and each DP query's plan — runs before
any DP query reads data, so a refused statement spends nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from privdb.backends.base import Engine
from privdb.database import Database
from privdb.errors import ParseError, RawAccessDenied, UnsupportedQuery
from privdb.result import Result
from privdb.sql.access import authorize
from privdb.sql.front.dpselect.hints import check_within_group
from privdb.sql.front.limits import MAX_QUERY_LENGTH, check_text
from privdb.sql.front.qualified import unqualify
from privdb.sql.public.answer import answer_public, run_sandboxed
from privdb.sql.public.arrays import bigquery_arrays
from privdb.sql.public.language import plain_sql
from privdb.sql.public.spans import branches, dp_at, dp_spans, tokens_of
from privdb.sql.public.union_all import check_widths, concatenated, is_concatenation

__all__ = ["MAX_RELEASES", "Session", "answer_wrapped", "granted_session", "is_wrapped"]

MAX_RELEASES = 16  # DP queries one plain statement may hold
_DIALECT = "duckdb"
_RELEASED = "__privdb_released_{}"  # the sandbox's name of the k-th DP query's rows
_AGGREGATES = (exp.AggFunc,)
_PG_NAMES = re.compile(r"^([A-Za-z_]+)\(.*\)$", re.S)


@dataclass(frozen=True)
class Session:
    """A session's settings for plain SQL (the PostgreSQL endpoint's ``SET privdb.epsilon`` and kin):
    ``epsilon``/``delta``: what a plain aggregate over a private table is answered at (None: refused,
    as without a session); ``intervals``: whether released rows carry their interval columns (None, the
    default: a DP query the analyst wrote does, a plain aggregate answered at the session ε does not, since
    the chart that sent it has no place for them)."""

    epsilon: float | None = None
    delta: float | None = None
    intervals: bool | None = None  # None: on for DP queries the analyst wrote, off for plain aggregates


def granted_session(db: Database, analyst: str) -> Session:
    """The session of a door that sets none (HTTP, the Python API): the ε and δ the analyst's grant
    gives plain aggregate SQL (``privdb grant --query-epsilon``), if any."""
    epsilon, delta = db.catalog.plain_sql(analyst)
    return Session(epsilon=epsilon, delta=delta)


def is_wrapped(text: str, session: Session | None = None) -> bool:
    """Whether ``text`` is a plain query (SELECT, WITH or a parenthesis first) holding a DP query in
    parentheses, or, with a session ε, any plain query (its aggregates of private tables become DP)."""
    if not isinstance(text, str) or len(text) > MAX_QUERY_LENGTH:
        return False
    tokens = tokens_of(text)
    if not tokens or tokens[0].token_type not in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
        return False
    if dp_at(tokens, 0):  # a DP query, unless it is a branch of a set operation of DP queries
        return len(branches(tokens)) > 1
    try:
        return bool(dp_spans(text)) or (session is not None and session.epsilon is not None)
    except ParseError:
        return True  # refused with its message by answer_wrapped


@dataclass
class _Release:
    name: str
    text: str  # the DP query as answered on its own
    plain: bool = False  # a plain aggregate answered at the session's ε


def answer_wrapped(
    db: Database,
    analyst: str,
    text: str,
    dp: Callable[[str], Result],
    check: Callable[[str], None],
    session: Session | None = None,
) -> Result:
    """The outer query's rows over the DP queries' released rows and public tables (module doc).
    ``dp`` answers one DP query (charged); ``check`` plans one without reading or spending."""
    session = session or Session()
    check_text(text)
    outer_text, releases = _lift_spans(text)
    outer, lifted = _lift_aggregates(db, analyst, _parse_outer(outer_text), session, len(releases))
    releases += lifted
    if len(releases) > MAX_RELEASES:
        raise UnsupportedQuery(f"one statement holds at most {MAX_RELEASES} DP queries; split it")
    if not releases:  # a session ε, but no aggregate of a private table: a plain SELECT as any other
        return answer_public(db, analyst, text)
    names = {r.name for r in releases}
    sql = plain_sql(outer)  # the closed language, before anything is read
    public = _outer_tables(db, analyst, outer, names)
    concatenation = is_concatenation(outer, [r.name for r in releases])
    if concatenation:
        check_widths([r.text for r in releases])
    for release in releases:  # every DP query planned (free) before any of them reads data
        check(release.text)
    answers = [dp(release.text) for release in releases]
    if concatenation:  # the rows one after the other, their intervals kept
        columns, rows, accuracy = concatenated(answers)
        return _result(columns, rows, answers, accuracy, {"released": [r.text for r in releases]})
    frames = {
        release.name: answer.to_pandas(
            intervals=session.intervals if session.intervals is not None else not release.plain
        )
        for release, answer in zip(releases, answers, strict=True)
    }
    columns, rows, extra = run_sandboxed(db, analyst, sql, public, frames)
    return _result(columns, rows, answers, [], extra | {"released": [r.text for r in releases]})


def _result(
    columns: list[str],
    rows: list[list[Any]],
    answers: list[Result],
    accuracy: list[dict[str, Any]],
    extra: dict[str, Any],
) -> Result:
    """The statement's answer: its rows, and what the DP queries in it spent (the last one's budget)."""
    return Result(
        columns=columns,
        rows=rows,
        epsilon_spent=sum(a.epsilon_spent for a in answers),
        delta_spent=sum(a.delta_spent for a in answers),
        budget=answers[-1].budget,
        accuracy=accuracy,
        cached=all(a.cached for a in answers),
        extra=extra,
    )


def _lift_spans(text: str) -> tuple[str, list[_Release]]:
    """The text with each parenthesised DP query replaced by a query of its released rows."""
    releases, out, last = [], [], 0
    for k, (start, end) in enumerate(dp_spans(text)):
        name = _RELEASED.format(k)
        releases.append(_Release(name, text[start:end]))
        out += [text[last:start], f"SELECT * FROM {name}"]
        last = end
    return "".join([*out, text[last:]]), releases


def _parse_outer(text: str) -> exp.Query:
    try:
        trees = [t for t in sqlglot.parse(text, read=_DIALECT) if t is not None]
    except RecursionError:
        raise UnsupportedQuery("the statement is built too deep; split it into several") from None
    except SqlglotError as err:
        raise ParseError(f"the plain query around the DP query cannot be read: {str(err)[:200]}") from None
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        raise UnsupportedQuery("a plain query around DP queries is one SELECT")
    tree = bigquery_arrays(unqualify(trees[0]))  # q[OFFSET(k)] as DuckDB's q[k + 1]
    assert isinstance(tree, exp.Query)
    return tree


def _private(db: Database, analyst: str, table: exp.Table, released: set[str]) -> bool:
    if not isinstance(table.this, exp.Identifier) or table.name in released or table.db:
        return False
    name = authorize(db, analyst, table.name)
    return not db.metadata(name).public


def _lift_aggregates(
    db: Database, analyst: str, outer: exp.Query, session: Session, first: int
) -> tuple[exp.Query, list[_Release]]:
    """With a session ε: each outermost SELECT with aggregates (or GROUP BY) whose subtree reads a private
    table becomes the DP-SELECT it reads as, at that ε, and a query of its released rows in the tree (the
    new root is returned: the whole query may be one). Its unaliased aggregates are named as PostgreSQL
    names them (``AVG(x)`` → ``avg``), since the query around it refers to them so."""
    if session.epsilon is None:
        return outer, []
    released = {_RELEASED.format(k) for k in range(first)}
    ctes = {cte.alias_or_name for cte in outer.find_all(exp.CTE)}
    releases: list[_Release] = []
    for select in list(outer.find_all(exp.Select, bfs=True)):
        if select.root() is not outer or not _aggregates(select):
            continue  # inside one lifted already, or no aggregate to answer
        reads = [t for t in select.find_all(exp.Table) if t.name not in ctes]
        if not any(_private(db, analyst, t, released) for t in reads):
            continue
        name = _RELEASED.format(first + len(releases))
        releases.append(_Release(name, _dp_text(select, session), plain=True))
        lifted = sqlglot.parse_one(f"SELECT * FROM {name}", read=_DIALECT)
        assert isinstance(lifted, exp.Select)
        if select is outer:
            return lifted, releases
        select.replace(lifted)
    return outer, releases


def _aggregates(select: exp.Select) -> bool:
    if select.args.get("group") is not None:
        return True
    return any(item.find(*_AGGREGATES) is not None for item in select.expressions)


def _dp_text(select: exp.Select, session: Session) -> str:
    """The DP-SELECT a plain aggregate SELECT reads as at the session's ε (and δ)."""
    query = select.copy()
    for i, item in enumerate(query.expressions):
        if isinstance(item, exp.WithinGroup) and isinstance(item.this, exp.Func):
            query.expressions[i] = exp.alias_(item, item.this.sql_name().lower(), quoted=True)
        elif not isinstance(item, exp.Alias) and isinstance(item, exp.Func):
            named = _PG_NAMES.match(item.sql(dialect=_DIALECT))
            if named:
                query.expressions[i] = exp.alias_(item, named[1].lower(), quoted=True)
    _ordered_set_quantiles(query)
    body = query.sql(dialect=_DIALECT)
    assert body[:6].upper() == "SELECT"
    delta = f" DELTA {session.delta!r}" if session.delta else ""
    return f"DP-SELECT {session.epsilon!r}{delta} {body[6:].lstrip()}"


def _ordered_set_quantiles(query: exp.Select) -> None:
    """PostgreSQL's ordered-set quantiles, ``PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)`` (and
    ``PERCENTILE_DISC``; ``1 − p`` when the order is descending), as the ``QUANTILE(x, p)`` they mean:
    BI tools write them (Superset turns a ``MEDIAN(x)`` metric into one for PostgreSQL). Any other WITHIN
    GROUP is refused with the DP-SELECT's hint, before the DuckDB rendering (``QUANTILE_CONT(x, p ORDER BY
    x)``) could be read as something else."""
    for node in list(query.find_all(exp.WithinGroup)):
        func, order = node.this, node.expression
        keys = order.expressions if isinstance(order, exp.Order) else []
        share = func.this if isinstance(func, exp.PercentileCont | exp.PercentileDisc) else None
        if len(keys) != 1 or not isinstance(share, exp.Expression):
            continue
        if keys[0].args.get("desc"):
            if not isinstance(share, exp.Literal) or share.is_string:
                continue
            share = exp.Literal.number(f"{1 - float(share.this):.15g}")
        node.replace(exp.Quantile(this=keys[0].this.copy(), quantile=share.copy()))
    check_within_group(query)


def _outer_tables(
    db: Database, analyst: str, outer: exp.Query, released: set[str]
) -> dict[str, tuple[Engine, str]]:
    """The public tables the outer query names (authorised); a private one is refused, as in a plain
    SELECT: the outer query reads released rows and public tables only."""
    ctes = {cte.alias_or_name.lower() for cte in outer.find_all(exp.CTE)}
    tables: dict[str, tuple[Engine, str]] = {}
    for table in outer.find_all(exp.Table):
        if table.name in released or table.name.lower() in ctes:
            continue
        if not isinstance(table.this, exp.Identifier) or table.args.get("db") or table.args.get("catalog"):
            raise UnsupportedQuery(f"{table.sql(dialect=_DIALECT)[:80]}: name a public table or a DP query")
        name = authorize(db, analyst, table.name)
        if not db.metadata(name).public:
            raise RawAccessDenied(
                f"table {name!r} is not public: the plain query around a DP query reads only its released "
                f"rows and public tables; put {name!r} inside the DP query (DP-SELECT … FROM {name} …), or "
                "set a session ε (SET privdb.epsilon = 0.1) to answer plain aggregates of it with DP"
            )
        tables.setdefault(name, db.backend_for(name))
    return tables
