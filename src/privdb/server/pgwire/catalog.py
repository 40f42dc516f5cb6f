"""The catalog clients probe on connect (psql's ``\\d``, DBeaver's and Metabase's metadata queries,
``version()``, ``current_schema()``), answered from privdb's catalog and never from row data.

Each session has a *shadow*: an in-memory DuckDB holding, in schema ``public`` of database ``privdb``, one
empty table per table the principal may query (the analyst's granted tables; all for the owner), with the
columns and types of privdb's metadata. Catalog queries run there, so DuckDB's own ``pg_catalog`` and
``information_schema`` views describe exactly those tables and hold no row of data. The shadow cannot read
files or load extensions, runs on one thread with a memory cap, and is interrupted after
``CATALOG_TIMEOUT`` seconds. A few PostgreSQL spellings DuckDB lacks are rewritten first
(``OPERATOR(pg_catalog.~)``, ``COLLATE pg_catalog.default``, ``pg_catalog.``-qualified functions,
``version()``).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from privdb import __version__ as privdb_version
from privdb.errors import InvalidParameter, ParseError
from privdb.server.pgwire.encoding import Answer, from_frame
from privdb.server.pgwire.pgcatalog import MACROS, rewrite

__all__ = ["CATALOG_TIMEOUT", "SERVER_VERSION", "VERSION", "Shadow", "is_catalog_query"]

SERVER_VERSION = "16.0"  # what clients are told (they pick their catalog queries by it)
VERSION = f"PostgreSQL {SERVER_VERSION} (privdb {privdb_version}: differentially private answers)"
CATALOG_TIMEOUT = 10.0  # seconds a catalog query may run
_CATALOG_SCHEMAS = {"pg_catalog", "information_schema"}
_TYPES = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_REWRITES = [
    (re.compile(r"OPERATOR\s*\(\s*pg_catalog\s*\.\s*([~!*<>=]+)\s*\)", re.I), r"\1"),
    (re.compile(r"COLLATE\s+pg_catalog\s*\.\s*\"?default\"?", re.I), ""),
    (re.compile(r"(?:pg_catalog\s*\.\s*)?\bversion\s*\(\s*\)", re.I), _literal(VERSION)),
    (re.compile(r"\bpg_catalog\s*\.\s*(\w+)\s*\(", re.I), r"\1("),
]
_MACROS = [
    "CREATE TYPE regclass AS BIGINT",
    "CREATE TYPE regtype AS VARCHAR",
    "CREATE TYPE regproc AS VARCHAR",
    "CREATE MACRO pg_get_serial_sequence(t, c) AS NULL::VARCHAR",
    "CREATE MACRO pg_collation_is_visible(id) AS TRUE",
    "CREATE MACRO pg_get_userbyid(id) AS 'privdb'",
    "CREATE MACRO pg_encoding_to_char(id) AS 'UTF8'",
    "CREATE MACRO obj_description(id, kind := NULL) AS NULL::VARCHAR",
    "CREATE MACRO col_description(id, n) AS NULL::VARCHAR",
    "CREATE MACRO shobj_description(id, kind) AS NULL::VARCHAR",
    "CREATE MACRO pg_get_viewdef(id, pretty := NULL) AS NULL::VARCHAR",
    "CREATE MACRO to_regtype(name) AS NULL::BIGINT",
    "CREATE MACRO to_regclass(name) AS NULL::BIGINT",
    "CREATE MACRO pg_postmaster_start_time() AS TIMESTAMP '2000-01-01'",
]


def _catalog_table(table: exp.Table) -> bool:
    schema = table.db.lower()
    return schema in _CATALOG_SCHEMAS or (not schema and table.name.lower().startswith("pg_"))


def is_catalog_query(text: str) -> bool:
    """Whether a SELECT reads only catalog relations (``pg_catalog``, ``information_schema``, ``pg_*``) or
    no table at all (``SELECT version()``): such a query is answered from the shadow, free. A query naming
    any other table is privdb's (a DP-SELECT's or a plain SELECT's on public tables)."""
    try:
        trees = sqlglot.parse(text, read="postgres")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return re.search(r"\b(pg_catalog|information_schema|pg_\w+)\b", text, re.I) is not None
    for tree in trees:
        if tree is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if table.name.lower() in ctes and not table.db:
                continue
            if not _catalog_table(table):
                return False
    return True


class Shadow:
    """One session's catalog: empty tables shaped like the principal's visible tables."""

    def __init__(self, tables: list[dict[str, Any]], user: str) -> None:
        self._lock = threading.Lock()
        self._con = duckdb.connect(":memory:", config={"threads": 1, "memory_limit": "256MB"})
        con = self._con
        con.execute("ATTACH ':memory:' AS privdb")
        con.execute("USE privdb")
        con.execute("CREATE SCHEMA public")
        con.execute("USE privdb.public")
        for table in tables:
            columns = ", ".join(
                f"{_quote(name)} {_TYPES.get(str(spec.get('type')), 'VARCHAR')}"
                for name, spec in (table.get("columns") or {}).items()
            )
            con.execute(f"CREATE TABLE {_quote(table['name'])} ({columns or 'dummy VARCHAR'})")
        for macro in [*_MACROS, *MACROS]:
            con.execute(macro)
        con.execute("DETACH memory")
        con.execute("SET enable_external_access = false")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET lock_configuration = true")
        self.user = user

    def answer(self, text: str) -> Answer:
        """Run a catalog query; its DuckDB error, if any, as a ``parse_error`` (the shadow holds no data,
        so its messages reveal none)."""
        for pattern, replacement in _REWRITES:
            text = pattern.sub(replacement, text)
        user = _literal(self.user)
        text = re.sub(r"\b(current_user|session_user)\b(\s*\(\s*\))?", lambda _: user, text, flags=re.I)
        text = rewrite(text)
        with self._lock:
            try:
                statements = self._con.extract_statements(text)
            except duckdb.Error as err:
                raise _unsupported(err) from None
            if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
                raise ParseError("a catalog query is one SELECT on pg_catalog or information_schema")
            timer = threading.Timer(CATALOG_TIMEOUT, self._con.interrupt)
            timer.start()
            try:
                frame = self._con.execute(text).df()
            except duckdb.InterruptException:
                raise InvalidParameter(
                    f"the catalog query ran longer than {CATALOG_TIMEOUT:g} s and was stopped"
                ) from None
            except duckdb.Error as err:
                raise _unsupported(err) from None
            finally:
                timer.cancel()
        answer = from_frame(frame)
        answer.columns = [_column_name(c, user) for c in answer.columns]
        return answer

    def interrupt(self) -> None:
        """Stop the catalog query running now, if any (a cancel request)."""
        self._con.interrupt()

    def close(self) -> None:
        self._con.close()


def _column_name(name: str, user: str) -> str:
    """PostgreSQL's name for a result column DuckDB named otherwise (``version()`` → ``version``)."""
    if name == _literal(VERSION):
        return "version"
    if name == user:
        return "current_user"
    call = re.fullmatch(r"(?:\w+\.)?(\w+)\(.*\)", name, re.S)
    return call.group(1) if call else name


def _unsupported(err: Exception) -> ParseError:
    """DuckDB's refusal of a catalog query (its first line: the shadow holds no data to reveal)."""
    first = str(err).splitlines()[0] if str(err) else type(err).__name__
    return ParseError(f"this catalog query is not supported by privdb: {first}")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
