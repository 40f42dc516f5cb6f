"""The catalog clients probe on connect (psql's ``\\d``, DBeaver's and Metabase's metadata queries,
``version()``, ``current_schema()``), answered from privdb's catalog and never from row data.

A catalog query (one that reads only ``pg_catalog``/``information_schema`` relations, or no table) is
first checked against the closed catalog language (privdb.server.pgwire.catalog_language: no generators,
no table functions but ``unnest``, text cut to a public length), then rewritten on its parse tree
(``current_user``, ``version()``, the ``pg_catalog`` relations DuckDB lacks: privdb.server.pgwire.pgcatalog)
and run in a *shadow*: an in-memory DuckDB holding, in schema ``public`` of database ``privdb``, one empty
table per table the principal may query, with the columns and types of privdb's metadata, so DuckDB's own
``pg_catalog`` and ``information_schema`` views describe exactly those tables and hold no row of data.

Shadows are shared, not per session: at most ``CACHED`` of them stay built (one per distinct set of
visible tables, least recently used closed first), and at most ``CATALOG_SLOTS.count`` catalog queries run
at once in the process, one per principal (privdb.sql.public.slots), each on one thread under
``MEMORY_LIMIT`` and the plain SELECT's time limit. So the catalog's memory is bounded by a constant
whatever the number of sessions, and a session holds none of it between queries. A shadow cannot read
files or load extensions, and its configuration is locked. DuckDB's own words never reach the client: a
query the shadow cannot run is refused in privdb's.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from privdb import __version__ as privdb_version
from privdb.errors import InvalidParameter, ParseError, UnsupportedQuery
from privdb.server.pgwire.catalog_language import check, cut
from privdb.server.pgwire.encoding import Answer, from_frame
from privdb.server.pgwire.errors import UnknownSetting
from privdb.server.pgwire.pgcatalog import MACROS, functions_in_from, rewrite_tree
from privdb.sql.public.slots import CATALOG_SLOTS

__all__ = ["CACHED", "MEMORY_LIMIT", "SERVER_VERSION", "VERSION", "Catalog", "Shadow", "is_catalog_query"]

SERVER_VERSION = "16.0"  # what clients are told (they pick their catalog queries by it)
VERSION = f"PostgreSQL {SERVER_VERSION} (privdb {privdb_version}: differentially private answers)"
CACHED = 4  # shadows kept built (beyond the ones running)
MEMORY_LIMIT = "256MB"  # a shadow's DuckDB memory cap
_CATALOG_SCHEMAS = {"pg_catalog", "information_schema"}
_NAMES = {exp.CurrentUser: "current_user", exp.SessionUser: "session_user", exp.CurrentVersion: "version"}
_TYPES = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}


# spellings removed before parsing (each only drops text: no quote or value is put in)
_REWRITES = [
    (re.compile(r"OPERATOR\s*\(\s*pg_catalog\s*\.\s*([~!*<>=]+)\s*\)", re.I), r"\1"),
    (re.compile(r"COLLATE\s+pg_catalog\s*\.\s*\"?default\"?", re.I), ""),
    (re.compile(r"\bpg_catalog\s*\.\s*(\w+)\s*\(", re.I), r"\1("),
    # an array of reg* (pgcli's proargtypes::regtype[]), which sqlglot cannot read: an array of oids
    (re.compile(r"::\s*(?:pg_catalog\s*\.\s*)?reg\w+\s*\[\s*\]", re.I), "::BIGINT[]"),
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
    no table at all (``SELECT version()``): such a query is answered from the catalog, free. A query naming
    any other table is privdb's (a DP-SELECT's or a plain SELECT's on public tables)."""
    try:
        trees = sqlglot.parse(text, read="postgres")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return re.search(r"\b(pg_catalog|information_schema|pg_\w+)\b", text, re.I) is not None
    relations, functions = 0, 0
    for tree in trees:
        if tree is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if table.name.lower() in ctes and not table.db:
                continue
            if not isinstance(table.this, exp.Identifier):  # a table function: unnest(…) of a catalog array
                functions += table.db.lower() != "pg_catalog"
                continue
            if not _catalog_table(table):
                return False
            relations += 1
    return relations > 0 or functions == 0  # FROM range(…) alone is no catalog query (the owner's SQL)


class Shadow:
    """Empty tables shaped like one set of visible tables, in an in-memory DuckDB (module doc)."""

    def __init__(self, tables: list[dict[str, Any]]) -> None:
        self.lock = threading.Lock()  # one query at a time
        self.runner: object | None = None  # the Catalog whose query runs now (cancel interrupts only it)
        self.users = 0  # catalogs holding it now (it is not closed while held)
        self._con = duckdb.connect(":memory:", config={"threads": 1, "memory_limit": MEMORY_LIMIT})
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
        con.execute("SET integer_division = true")  # PostgreSQL's: 160000 / 100 is 1600, an integer
        con.execute("SET enable_external_access = false")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        con.execute("SET lock_configuration = true")

    def run(self, sql: str, timeout: float, runner: object) -> Any:
        """The frame of ``sql`` (under :attr:`lock`), interrupted after ``timeout`` seconds."""
        timer = threading.Timer(timeout, self._con.interrupt)
        self.runner = runner
        timer.start()
        try:
            return self._con.execute(sql).df()
        finally:
            timer.cancel()
            self.runner = None

    def interrupt(self, runner: object) -> bool:
        """Stop the query running now if it is ``runner``'s."""
        if self.runner is runner:
            self._con.interrupt()
            return True
        return False

    def close(self) -> None:
        self._con.close()


class _Shadows:
    """The shadows built, by the visible tables they stand for, at most ``CACHED`` idle ones kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built: OrderedDict[str, Shadow] = OrderedDict()

    def hold(self, key: str, tables: list[dict[str, Any]]) -> Shadow:
        with self._lock:
            shadow = self._built.get(key)
            if shadow is not None:
                self._built.move_to_end(key)
                shadow.users += 1
                return shadow
        built = Shadow(tables)  # outside the lock: a build takes tens of milliseconds
        with self._lock:
            shadow = self._built.setdefault(key, built)
            self._built.move_to_end(key)
            shadow.users += 1
            idle = [k for k, s in self._built.items() if s.users == 0]
            while len(self._built) > CACHED and idle:
                self._built.pop(idle.pop(0)).close()
        if shadow is not built:
            built.close()
        return shadow

    def give_back(self, shadow: Shadow) -> None:
        with self._lock:
            shadow.users -= 1
            if shadow not in self._built.values() and shadow.users == 0:
                shadow.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._built)


SHADOWS = _Shadows()


class Catalog:
    """One session's catalog: the tables it may see, its user, and the query it runs now."""

    def __init__(self, tables: list[dict[str, Any]], user: str, principal: str, timeout: float) -> None:
        self.tables, self.user, self.principal, self.timeout = tables, user, principal, timeout
        self._key = repr([(t["name"], sorted((t.get("columns") or {}).items())) for t in tables])
        self._shadow: Shadow | None = None
        self.backend_pid = 0  # the backend key's process id (privdb.server.pgwire.cancel), once given
        self.settings: Callable[[str], str] = _no_settings  # the session's SHOW (Session sets it)

    def answer(self, text: str) -> Answer:
        """Check, rewrite and run a catalog query (module doc)."""
        sql = self._duckdb_sql(text)
        with CATALOG_SLOTS.take(self.principal, self.timeout):
            shadow = SHADOWS.hold(self._key, self.tables)
            try:
                with shadow.lock:
                    self._shadow = shadow
                    try:
                        frame = shadow.run(sql, self.timeout, self)
                    finally:
                        self._shadow = None
            except duckdb.InterruptException:
                raise InvalidParameter(
                    f"the catalog query ran longer than {self.timeout:g} s and was stopped"
                ) from None
            except duckdb.Error as err:
                raise _unsupported(err) from None
            finally:
                SHADOWS.give_back(shadow)
        answer = from_frame(frame)
        answer.columns = [_column_name(c) for c in answer.columns]
        return answer

    def _duckdb_sql(self, text: str) -> str:
        for pattern, replacement in _REWRITES:
            text = pattern.sub(replacement, text)
        try:
            trees = [t for t in sqlglot.parse(text, read="postgres") if t is not None]
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, RecursionError):
            raise ParseError(
                "privdb's catalog cannot read this query; it answers SELECTs on pg_catalog and "
                "information_schema as PostgreSQL writes them"
            ) from None
        if len(trees) != 1 or not isinstance(trees[0], exp.Query):
            raise ParseError("a catalog query is one SELECT on pg_catalog or information_schema")
        tree = trees[0]
        functions_in_from(tree)
        check(tree)
        for column in list(tree.find_all(exp.Column)):  # PostgreSQL's bare ``user`` is current_user
            if column.name.lower() == "user" and not column.this.quoted and not column.table:
                column.replace(exp.CurrentUser())
        for node in list(tree.find_all(exp.CurrentUser, exp.SessionUser, exp.CurrentVersion, exp.Anonymous)):
            value = self._session_value(node)
            if value is None:
                continue
            if isinstance(node.parent, exp.Select) and node.arg_key == "expressions":
                name = node.name.lower() if isinstance(node, exp.Anonymous) else _NAMES[type(node)]
                value = exp.alias_(value, name, quoted=True)  # PostgreSQL's column name
            node.replace(value)
        return cut(rewrite_tree(tree)).sql("duckdb")

    def _session_value(self, node: exp.Expr) -> exp.Expr | None:
        """The value of a function of the session itself (its user, the server's version, its backend
        key), or None for any other node."""
        if isinstance(node, exp.CurrentUser | exp.SessionUser):
            return exp.Literal.string(self.user)
        if isinstance(node, exp.CurrentVersion):
            return exp.Literal.string(VERSION)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "pg_backend_pid" and not node.expressions:
            return exp.Literal.number(self.backend_pid)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "current_setting" and node.expressions:
            return self._setting(node)
        return None

    def _setting(self, node: exp.Anonymous) -> exp.Expr:
        """``current_setting('name' [, missing_ok])`` from the session's settings (SHOW's values), never
        DuckDB's own."""
        name = node.expressions[0]
        name = name.this if isinstance(name, exp.Cast) else name
        if not (isinstance(name, exp.Literal) and name.is_string):
            raise UnsupportedQuery("current_setting takes a parameter's name as a literal, e.g. 'TimeZone'")
        missing_ok = len(node.expressions) > 1 and node.expressions[1].sql().upper() == "TRUE"
        try:
            return exp.Literal.string(self.settings(name.name))
        except UnknownSetting:
            if missing_ok:
                return exp.Null()
            raise

    def interrupt(self) -> None:
        """Stop this session's catalog query running now, if any (a cancel request)."""
        shadow = self._shadow
        if shadow is not None:
            shadow.interrupt(self)

    def close(self) -> None:
        """Nothing to close: the shadows are shared (kept or closed by the pool)."""


def _no_settings(name: str) -> str:
    raise UnknownSetting(f'unrecognized configuration parameter "{name}"')


def _column_name(name: str) -> str:
    """PostgreSQL's name for a result column DuckDB named otherwise (``format_type(…)`` → ``format_type``)."""
    call = re.fullmatch(r"(?:\w+\.)?(\w+)\(.*\)", name, re.S)
    return call.group(1) if call else name


_MISSING = re.compile(
    r"(Table|Function|Column|Type|Macro|Schema)[\w ]* with name \"?([\w.]+)\"? does not exist"
)


def _unsupported(err: Exception) -> UnsupportedQuery:
    """The shadow's refusal in privdb's words (DuckDB's own text never reaches the client); the missing
    name is told when DuckDB names one, since it is the client's own."""
    if isinstance(err, duckdb.OutOfMemoryException):
        return UnsupportedQuery(
            f"the catalog query needed more than the catalog's memory cap ({MEMORY_LIMIT}); narrow it"
        )
    found = _MISSING.search(str(err))
    if found is not None:
        kind = {"Macro": "function"}.get(found[1], found[1].lower())
        return UnsupportedQuery(
            f"privdb's catalog has no {kind} {found[2]!r}: it holds the parts of pg_catalog and "
            "information_schema that psql, JDBC, SQLAlchemy, pgcli, DBeaver, Metabase and Superset read"
        )
    return UnsupportedQuery(
        "privdb's catalog cannot answer this query (it uses a form or type of PostgreSQL's catalog that "
        "privdb does not have); nothing was read"
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
