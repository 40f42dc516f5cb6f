"""Plain SELECTs by analysts over public tables (metadata ``public: true``): rows about no one, read free.

    is_plain_select(text)  → does the text ask a plain SELECT (not a DP-SELECT)?
    answer_public(db, analyst, text) → the rows, spending nothing

Every table the query names (FROM, JOIN, subqueries, CTE bodies; CTE names are not tables) must be one the
analyst may query and must be public; anything else is refused before any data is read, with the same
message whatever the data. The query must be in the closed language of privdb.sql.public.language (the
DP-SELECT expression allow-list in every clause; no generators, table functions, recursion, windows), which
is checked first; its text-growing functions are cut there.

The query then runs in a sandbox: a fresh in-memory DuckDB per call, with external access off, extensions
neither installed nor loaded, and its configuration locked, holding only copies of the public tables it
names (at most ``MAX_PUBLIC_ROWS`` rows each, copied from whichever engine keeps them). At most
``MAX_RESULT_ROWS`` rows come back (``"truncated": true`` in the result's extra fields when cut), within the
database's ``query_timeout`` (``PUBLIC_TIMEOUT`` when it sets none), enforced by the
watchdog; at most ``PUBLIC_SLOTS.count`` sandboxes run at once in the process, one per analyst
(privdb.sql.public.slots), so their memory together stays under that many times the cap. The data is
public, so DuckDB's errors are passed on as they are.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from privdb.backends.base import Engine
from privdb.backends.names import quote
from privdb.backends.watchdog import WATCHDOG
from privdb.database import Database
from privdb.errors import (
    EngineUnavailable,
    ParseError,
    PrivdbError,
    RawAccessDenied,
    UnknownTable,
    UnsupportedQuery,
)
from privdb.result import Result
from privdb.sql.access import authorize, check_analyst
from privdb.sql.front.bigquery.syntax import is_bigquery
from privdb.sql.front.keys import canonical_key
from privdb.sql.front.limits import MAX_DEPTH, MAX_QUERY_LENGTH, check_text, nesting
from privdb.sql.front.qualified import unqualify
from privdb.sql.public.language import plain_sql
from privdb.sql.public.slots import PUBLIC_SLOTS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_PUBLIC_ROWS", "MAX_RESULT_ROWS", "PUBLIC_TIMEOUT", "answer_public", "is_plain_select"]

MAX_PUBLIC_ROWS = 1_000_000  # rows of one public table copied into the sandbox
MAX_RESULT_ROWS = 10_000  # rows of an answer
PUBLIC_TIMEOUT = 30.0  # s: a plain SELECT's time limit where the database sets none (query_timeout)
_DIALECT = "duckdb"
_SANDBOX: dict[str, str | int | float | list[str]] = {
    "enable_external_access": False,  # no files, no network, no ATTACH
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "python_enable_replacements": False,  # no Python variables read as tables
    "memory_limit": "1GB",
}
_AGAIN = 0.05  # s: a query past its limit is interrupted again at this interval until it stops
_COPY = "__privdb public copy"  # the registered frame's name: not a valid privdb table name


def is_plain_select(text: str) -> bool:
    """Whether ``text`` is a plain query (it starts with SELECT, WITH or FROM and holds no DP-SELECT), read
    from sqlglot's tokens. Text longer than the query limit, or not readable as tokens, is not: the
    DP-SELECT parser refuses it with its own message."""
    if not isinstance(text, str) or len(text) > MAX_QUERY_LENGTH:
        return False
    if text.lstrip(" \t\r\n").startswith("DP-SELECT"):  # its first token is DP: no need to read them all
        return False
    try:
        tokens = sqlglot.Dialect.get_or_raise(_DIALECT).tokenize(text)
    except SqlglotError:
        return False
    if not tokens or tokens[0].token_type not in (TokenType.SELECT, TokenType.WITH, TokenType.FROM):
        return False
    if is_bigquery(tokens):  # BigQuery's SELECT WITH DIFFERENTIAL_PRIVACY: a DP query
        return False
    return not any(_dp_select_at(tokens, i) for i in range(len(tokens)))


def _dp_select_at(tokens: list[Token], i: int) -> bool:
    return (
        i + 2 < len(tokens)
        and tokens[i].token_type == TokenType.VAR
        and tokens[i].text.upper() == "DP"
        and tokens[i + 1].token_type == TokenType.DASH
        and tokens[i + 2].token_type == TokenType.SELECT
    )


def answer_public(db: Database, analyst: str, text: str) -> Result:
    """Answer a plain SELECT over public tables for ``analyst``: the rows, JSON-ready, at no cost.

    Refused before anything is read: an unknown analyst (``unauthorized``), a table outside their grant
    (``forbidden``, the same for tables that do not exist), a private table (``raw_access_denied``), a query
    that is not one SELECT or names a table function (``parse_error``, ``unsupported_query``)."""
    check_analyst(db, analyst)
    query, _ = _parse(text)
    sql = plain_sql(query)  # the closed language: refused forms never reach the tables
    tables = _public_tables(db, analyst, query)
    columns, rows, extra = run_sandboxed(db, analyst, sql, tables)
    budget = db.budget(analyst)
    return Result(
        columns=columns,
        rows=rows,
        epsilon_spent=0.0,
        delta_spent=0.0,
        budget={
            "epsilon_remaining": float(budget.epsilon_remaining),
            "delta_remaining": float(budget.delta_remaining),
        },
        accuracy=[],
        extra=extra,
    )


def run_sandboxed(
    db: Database,
    analyst: str,
    sql: str,
    tables: dict[str, tuple[Engine, str]],
    frames: dict[str, pd.DataFrame] | None = None,
) -> tuple[list[str], list[list[object]], dict[str, object]]:
    """Run checked plain ``sql`` in a fresh sandbox holding copies of ``tables`` and ``frames`` (rows
    already released: privdb.sql.public.wrapped), within the time limit and a slot: its columns, its
    rows (JSON-ready, at most ``MAX_RESULT_ROWS``) and the result's extra fields."""
    limit = PUBLIC_TIMEOUT if db.query_timeout is None else db.query_timeout
    deadline = time.monotonic() + limit

    def left() -> float:
        if (remaining := deadline - time.monotonic()) <= 0:
            raise TimeoutError("the query ran past the limit")
        return remaining

    try:
        with PUBLIC_SLOTS.take(analyst, left()):  # sandboxes at once in this process: memory bounded
            con = _sandbox(db, tables, left)
            try:
                for name, frame in (frames or {}).items():
                    _add_frame(con, name, frame)
                columns, rows = _fetch(con, sql, left())
            finally:
                con.close()
    except TimeoutError:
        raise UnsupportedQuery(
            f"the query ran longer than the limit of {limit:g} s and was stopped; "
            "nothing was spent. Narrow it (fewer rows, simpler joins)"
        ) from None
    extra: dict[str, object] = {"public": True}
    if len(rows) > MAX_RESULT_ROWS:
        rows, extra["truncated"] = rows[:MAX_RESULT_ROWS], True
    return columns, [[canonical_key(v) for v in row] for row in rows], extra


def _add_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> None:
    con.register(_COPY, frame)
    try:
        con.execute(f"CREATE TABLE {quote(name)} AS SELECT * FROM {quote(_COPY)}")
    finally:
        con.unregister(_COPY)


def _too_deep() -> ParseError:
    return ParseError(
        f"the query nests more than {MAX_DEPTH} levels deep (parentheses, function calls, CASE, prefix "
        "operators such as NOT or unary minus, casts); write it with less nesting"
    )


def _parse(text: str) -> tuple[exp.Query, str]:
    """One SELECT (or set operation of SELECTs) in DuckDB's dialect, within the public limits
    (privdb.sql.front.limits), and the SQL the sandbox runs: the query as sqlglot writes it back (what was
    checked is what runs)."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the query is empty; write SELECT … FROM <public table>")
    check_text(text)
    dialect = sqlglot.Dialect.get_or_raise(_DIALECT)
    try:
        if nesting(dialect.tokenize(text)) > MAX_DEPTH:
            raise _too_deep()
        statements = [unqualify(s) for s in sqlglot.parse(text, read=_DIALECT) if s is not None]
        sql = statements[0].sql(dialect=_DIALECT, comments=False) if len(statements) == 1 else ""
        if nesting(dialect.tokenize(sql)) > MAX_DEPTH:  # as written back: a::INT is CAST(a AS INT)
            raise _too_deep()
    except RecursionError:
        raise _too_deep() from None
    except TokenError as err:
        raise ParseError(f"cannot read the query: {err}") from None
    except SqlglotParseError as err:
        info = err.errors[0] if err.errors else {}
        line, col = info.get("line"), info.get("col")
        where = f" (line {line}, column {col})" if line is not None else ""
        raise ParseError(f"{info.get('description', 'syntax error')}{where}") from None
    except SqlglotError as err:
        raise ParseError(f"cannot read the query: {err}") from None
    if len(statements) != 1:
        raise UnsupportedQuery(
            "only one statement per query: remove everything after the first ';'"
            if statements
            else "nothing to select; write SELECT … FROM <public table>"
        )
    query = statements[0]
    if not isinstance(query, exp.Select | exp.SetOperation | exp.Subquery):
        raise UnsupportedQuery("a plain query is one SELECT (or SELECTs joined by UNION, INTERSECT, EXCEPT)")
    if query.find(exp.Into) is not None:
        raise UnsupportedQuery("SELECT … INTO writes a table; a plain SELECT only reads")
    return query, sql


def _public_tables(db: Database, analyst: str, query: exp.Query) -> dict[str, tuple[Engine, str]]:
    """Every table ``query`` names, authorised and public: stored name → (engine, name there)."""
    ctes = _cte_scopes(query)
    tables: dict[str, tuple[Engine, str]] = {}
    for table in query.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise _table_function(table.this)
        if table.args.get("db") or table.args.get("catalog"):
            raise UnsupportedQuery(
                f"{table.sql(dialect=_DIALECT)}: name tables without a schema or catalog, e.g. FROM regions"
            )
        if _names_cte(table, ctes):
            continue
        name = authorize(db, analyst, table.name)
        try:
            public = db.metadata(name).public
        except UnknownTable:  # authorised, so registered: its attached engine lost the source
            raise EngineUnavailable(
                f"table {name!r} cannot be read now: its attached engine no longer has its source; "
                "nothing was spent: ask the owner to attach it again"
            ) from None
        if not public:
            raise RawAccessDenied(
                f"table {name!r} is not public: a plain SELECT would return raw rows; analysts ask with "
                f"DP-SELECT, e.g. DP-SELECT 0.5 COUNT(*) FROM {name}; plain SELECT reads only public tables "
                "(metadata public: true)"
            )
        tables.setdefault(name, db.backend_for(name))
    return tables


def _table_function(node: exp.Expr | None) -> UnsupportedQuery:
    text = node.sql(dialect=_DIALECT) if node is not None else "?"
    return UnsupportedQuery(
        f"{text[:80]}: a plain SELECT reads public tables by name; table functions (read_csv, glob, "
        "range, …) are not allowed"
    )


def _cte_scopes(query: exp.Query) -> dict[int, set[str]]:
    """For each query holding a WITH clause (by id): the lower-cased names of its CTEs."""
    scopes: dict[int, set[str]] = {}
    for cte in query.find_all(exp.CTE):
        holder = cte.parent.parent if cte.parent is not None else None
        if holder is not None:
            scopes.setdefault(id(holder), set()).add(cte.alias_or_name.lower())
    return scopes


def _names_cte(table: exp.Table, scopes: dict[int, set[str]]) -> bool:
    """Whether ``table`` names a CTE of a WITH clause around it. In a CTE's own body its name means the
    table, unless the WITH is RECURSIVE. (The sandbox holds no other tables either way.)"""
    name = table.name.lower()
    outside: set[int] = set()  # queries whose CTE of this name is the one being defined
    node: exp.Expr | None = table.parent
    while node is not None:
        if isinstance(node, exp.CTE) and node.alias_or_name.lower() == name:
            with_ = node.parent
            if with_ is not None and with_.parent is not None and not with_.args.get("recursive"):
                outside.add(id(with_.parent))
        if id(node) not in outside and name in scopes.get(id(node), ()):
            return True
        node = node.parent
    return False


def _sandbox(
    db: Database, tables: dict[str, tuple[Engine, str]], left: Callable[[], float | None]
) -> duckdb.DuckDBPyConnection:
    """A fresh in-memory DuckDB, locked down, holding a copy of each public table under its stored name."""
    con = duckdb.connect(":memory:", config=dict(_SANDBOX))
    try:
        con.execute("SET lock_configuration = true")
        for name, (backend, source) in tables.items():
            _copy(con, name, backend, source, left)
    except BaseException:
        con.close()
        raise
    return con


def _copy(
    con: duckdb.DuckDBPyConnection,
    name: str,
    backend: Engine,
    source: str,
    left: Callable[[], float | None],
) -> None:
    """Copy public table ``name`` (``source`` in ``backend``) into the sandbox; refuse more than
    ``MAX_PUBLIC_ROWS`` rows. Only the columns the engine describes are read (never privdb's hidden ones)."""
    try:
        types = backend.columns(source)
        counted = backend.fetch(
            _in_dialect(backend, f"SELECT COUNT(*) AS n FROM {quote(source)}"), timeout=left()
        )
        if int(counted.to_numpy()[0, 0]) > MAX_PUBLIC_ROWS:
            raise UnsupportedQuery(
                f"public table {name!r} has more than {MAX_PUBLIC_ROWS:,} rows, more than a plain SELECT "
                "copies; ask with DP-SELECT, or ask the owner for a smaller lookup table"
            )
        listed = ", ".join(quote(c) for c in types)
        frame = backend.fetch(
            _in_dialect(backend, f"SELECT {listed} FROM {quote(source)} LIMIT {MAX_PUBLIC_ROWS}"),
            timeout=left(),
        )
    except (PrivdbError, TimeoutError):
        raise
    except Exception as err:  # the table is public: its engine's message may be shown
        raise EngineUnavailable(
            f"public table {name!r} cannot be read now: {err}; nothing was spent"
        ) from None
    if backend.dialect != _DIALECT:  # other engines' rows come as Python values: restore the types
        frame = _typed(frame, types)
    con.register(_COPY, frame)
    try:
        cast = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN"}
        columns = ", ".join(
            f"TRY_CAST({quote(c)} AS {cast[t]}) AS {quote(c)}"
            if t in cast and backend.dialect != _DIALECT
            else quote(c)
            for c, t in types.items()
        )
        con.execute(f"CREATE TABLE {quote(name)} AS SELECT {columns} FROM {quote(_COPY)}")
    finally:
        con.unregister(_COPY)


def _typed(frame: pd.DataFrame, types: dict[str, str]) -> pd.DataFrame:
    """Text columns as text (an engine that types values may mix numbers into them)."""
    out = frame.copy()
    for column, kind in types.items():
        if kind not in ("int", "float", "bool") and out[column].dtype == object:
            out[column] = out[column].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return out


def _in_dialect(backend: Engine, sql: str) -> str:
    return (
        sql
        if backend.dialect == _DIALECT
        else sqlglot.transpile(sql, read=_DIALECT, write=backend.dialect)[0]
    )


def _fetch(
    con: duckdb.DuckDBPyConnection, sql: str, timeout: float
) -> tuple[list[str], list[tuple[object, ...]]]:
    """Run ``sql`` in the sandbox: its column names and at most ``MAX_RESULT_ROWS`` + 1 rows. After
    ``timeout`` seconds it is interrupted, again every ``_AGAIN`` s until it stops (``TimeoutError``)."""
    started = time.monotonic()
    alarm = WATCHDOG.arm(timeout, con.interrupt, _AGAIN)
    fired = False
    try:
        relation = con.sql(sql)
        if relation is None:
            raise UnsupportedQuery("the query returns no rows; a plain SELECT reads public tables")
        columns = list(relation.columns)
        rows = relation.limit(MAX_RESULT_ROWS + 1).fetchall()
    except duckdb.InterruptException:
        raise TimeoutError("the query ran past the limit") from None
    except (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException) as err:
        raise ParseError(f"the query does not fit the public tables: {str(err).strip()}") from None
    except duckdb.Error as err:
        raise UnsupportedQuery(f"the query failed on the public tables: {str(err).strip()}") from None
    finally:
        fired = alarm.cancel()
    if fired or time.monotonic() - started > timeout:
        raise TimeoutError("the query ran past the limit")
    return columns, rows
