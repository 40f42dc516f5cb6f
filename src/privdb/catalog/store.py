"""The catalog's durable state beside the ledger: table metadata, analysts and their tokens, stored answers.

It lives where the ledger does (:mod:`privdb.accounting.sqlstore`): the database directory's SQLite file, or
the PostgreSQL database several servers share, so a token granted once works on every one of them.

Tokens are stored as SHA-256 hashes only. Stored answers make a repeated query (same analyst, same
normalised text) return the same noisy answer at no cost, so repetition cannot average the noise away.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privdb.accounting.sqlstore import Cursor, is_store_url, open_store
from privdb.catalog.querylog import LOG_UNION, LogFilter, LogRow
from privdb.catalog.surveys import SURVEY_ADDED, SURVEY_SCHEMA, SurveyRecords
from privdb.crashpoint import crash_point
from privdb.errors import Unauthorized
from privdb.text import storable

__all__ = ["Catalog", "Principal"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tables (name TEXT PRIMARY KEY, metadata TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS analysts (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL, created REAL)",
    "CREATE TABLE IF NOT EXISTS answers (analyst TEXT NOT NULL, query TEXT NOT NULL, tbl TEXT NOT NULL,"
    " result TEXT NOT NULL, created REAL, PRIMARY KEY (analyst, query))",
    "CREATE TABLE IF NOT EXISTS owner_tokens (token_sha256 TEXT PRIMARY KEY, created REAL, revoked REAL)",
    "CREATE TABLE IF NOT EXISTS refusals (id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL,"
    " query TEXT NOT NULL, code TEXT NOT NULL, created REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS attachments (name TEXT PRIMARY KEY, engine TEXT NOT NULL,"
    " source TEXT NOT NULL)",
    *SURVEY_SCHEMA,
)
# columns added after the first release of the schema: (table, column, declaration)
_ADDED = (
    ("analysts", "revoked", "REAL"),  # when the token was revoked (NULL: valid)
    ("analysts", "expires", "REAL"),  # when the token stops working (NULL: never)
    ("analysts", "tables", "TEXT"),  # JSON list of the tables the analyst may query (NULL: all)
    # JSON {"epsilon": ε, "delta": δ}: what plain aggregate SQL is answered at by default (NULL: refused)
    ("analysts", "plain_sql", "TEXT"),
    ("answers", "tbls", "TEXT"),  # every table an answer read, lower-cased, each between newlines
    # JSON: what privdb wrote for a table it loaded into another engine (privdb.backends.spark_layout)
    ("attachments", "layout", "TEXT"),
    *SURVEY_ADDED,
)


@dataclass(frozen=True)
class Principal:
    """Who a bearer token speaks for: the owner, or one analyst."""

    name: str
    role: str  # owner | analyst
    tables: tuple[str, ...] | None = None  # tables an analyst may query (None: all)

    @property
    def is_owner(self) -> bool:
        return self.role == "owner"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Catalog(SurveyRecords):
    """The catalog's tables: in the same SQLite file as the ledger (WAL mode), or in the same PostgreSQL
    database (a ``postgresql://`` URL). The surveys' methods come from :class:`SurveyRecords`."""

    def __init__(self, path: str | Path) -> None:
        # SQLite at NORMAL, not FULL: in WAL mode a commit still survives a crash of privdb, and the next FULL
        # commit (the ledger's, on every spend) makes it durable against power loss too; a stored answer lost
        # to power loss only means the analyst pays again for that repeat, never that a spend goes missing.
        self._store = open_store(str(path) if is_store_url(path) else Path(path), durable=False)
        self._store.create(_SCHEMA, _ADDED)
        self._snapshot = threading.local()  # this thread's reads inside ``snapshot()``

    def close(self) -> None:
        self._store.close()

    def release_thread(self) -> None:
        """Close the calling thread's own connection to the store (privdb.perthread)."""
        self._store.release_thread()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Within the block, this thread reads each table's metadata, the attachments and the analyst's
        row once: one query sees one catalog (planning, the engine's choice and the spend all read it; a
        COUNT read it ten times) at a tenth of the round trips. Nested blocks share the outer one."""
        if getattr(self._snapshot, "rows", None) is not None:
            yield
            return
        self._snapshot.rows = {}
        try:
            yield
        finally:
            self._snapshot.rows = None

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of a catalog read, once per ``snapshot()`` block (rows are tuples: nothing to mutate)."""
        memo: dict[tuple[str, tuple[Any, ...]], list[Any]] | None = getattr(self._snapshot, "rows", None)
        if memo is not None and (sql, args) in memo:
            return memo[(sql, args)]
        with self._store.cursor() as cur:
            rows = cur.execute(sql, args).fetchall()
        if memo is not None:
            memo[(sql, args)] = rows
        return rows

    # ---- tables
    def set_metadata(self, table: str, metadata: dict[str, Any], *, durable: bool = False) -> None:
        """Store a table's metadata (``durable``: synced before it returns, as a load needs before it lifts
        its table's mark: privdb.catalog.loads)."""
        with self._store.transaction(durable=durable) as cur:
            self._set_metadata(cur, table, metadata)

    def _set_metadata(self, cur: Cursor, table: str, metadata: dict[str, Any]) -> None:
        cur.execute(
            "INSERT INTO tables VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET metadata = excluded.metadata",
            (table, json.dumps(metadata)),
        )
        self.forget_answers(table, cur)  # answers about a reloaded table are stale

    def forget_answers(self, table: str, cur: Cursor | None = None) -> None:
        """Drop every stored answer that read ``table`` (its data changed: a repeat is answered afresh, and
        paid again); in ``cur``'s transaction if given. An answer that read several tables goes with any of
        them (a name's ``_`` matching any letter only drops a few more)."""
        sql = "DELETE FROM answers WHERE lower(tbl) = lower(?) OR tbls LIKE ?"
        args = (table, f"%\n{table.lower()}\n%")
        if cur is None:
            with self._store.transaction(durable=False) as own:
                own.execute(sql, args)
        else:
            cur.execute(sql, args)

    def metadata(self, table: str) -> dict[str, Any] | None:
        rows = self._read("SELECT metadata FROM tables WHERE lower(name) = lower(?)", (table,))
        return None if not rows else dict(json.loads(rows[0][0]))

    # ---- analysts and tokens
    def add_analyst(
        self, name: str, *, tables: list[str] | None = None, expires_in: float | None = None
    ) -> str:
        """Create the analyst, or rotate their token (which also lifts a revocation); returns the new
        token, shown once. ``tables`` limits the tables they may query; ``expires_in`` (seconds) the
        token's life."""
        token = secrets.token_urlsafe(32)
        expires = None if expires_in is None else time.time() + expires_in
        scope = None if tables is None else json.dumps(sorted(tables))
        with self._store.cursor() as cur:
            cur.execute(
                "INSERT INTO analysts (name, token_sha256, created, revoked, expires, tables) "
                "VALUES (?, ?, ?, NULL, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "token_sha256 = excluded.token_sha256, revoked = NULL, expires = excluded.expires, "
                "tables = excluded.tables",
                (name, _hash(token), time.time(), expires, scope),
            )
        return token

    def set_plain_sql(self, name: str, epsilon: float | None, delta: float | None) -> None:
        """An analyst's default per-query ε and δ for plain aggregate SQL (None, None: none; plain
        aggregates over private tables are then refused unless the session sets ``privdb.epsilon``)."""
        value = None if epsilon is None else json.dumps({"epsilon": epsilon, "delta": delta})
        with self._store.cursor() as cur:
            cur.execute("UPDATE analysts SET plain_sql = ? WHERE name = ?", (value, name))

    def plain_sql(self, name: str) -> tuple[float | None, float | None]:
        """The analyst's default (ε, δ) for plain aggregate SQL: (None, None) if the grant gives none."""
        rows = self._read("SELECT plain_sql FROM analysts WHERE name = ?", (name,))
        if not rows or rows[0][0] is None:
            return None, None
        value = json.loads(rows[0][0])
        return float(value["epsilon"]), None if value.get("delta") is None else float(value["delta"])

    def revoke_analyst(self, name: str) -> bool:
        """Revoke the analyst's token at once; False if there is no such analyst."""
        with self._store.cursor() as cur:
            return (
                cur.execute("UPDATE analysts SET revoked = ? WHERE name = ?", (time.time(), name)).rowcount
                > 0
            )

    def add_owner_token(self) -> str:
        """A new owner token (the owner may hold several, e.g. one per machine); shown once."""
        token = secrets.token_urlsafe(32)
        with self._store.cursor() as cur:
            cur.execute("INSERT INTO owner_tokens VALUES (?, ?, NULL)", (_hash(token), time.time()))
        return token

    def has_owner_token(self) -> bool:
        with self._store.cursor() as cur:
            row = cur.execute("SELECT 1 FROM owner_tokens WHERE revoked IS NULL").fetchone()
        return row is not None

    def revoke_owner_tokens(self) -> None:
        with self._store.cursor() as cur:
            cur.execute("UPDATE owner_tokens SET revoked = ? WHERE revoked IS NULL", (time.time(),))

    def authenticate(self, token: str) -> Principal:
        """The principal a bearer token speaks for, or ``unauthorized`` saying why (unknown, revoked,
        expired) without revealing whose token it was."""
        digest = _hash(token)
        with self._store.cursor() as cur:
            owner = cur.execute(
                "SELECT revoked FROM owner_tokens WHERE token_sha256 = ?", (digest,)
            ).fetchone()
            analyst = cur.execute(
                "SELECT name, revoked, expires, tables FROM analysts WHERE token_sha256 = ?", (digest,)
            ).fetchone()
        if owner is not None:
            if owner[0] is not None:
                raise Unauthorized("this token was revoked; ask the owner for a new one")
            return Principal("owner", "owner")
        if analyst is None:
            raise Unauthorized(
                "unknown token; use the token `privdb grant` printed (Authorization: Bearer …)"
            )
        name, revoked, expires, tables = analyst
        if revoked is not None:
            raise Unauthorized("this token was revoked; ask the owner for a new one")
        if expires is not None and expires < time.time():
            raise Unauthorized("this token has expired; ask the owner for a new one")
        return Principal(str(name), "analyst", None if tables is None else tuple(json.loads(tables)))

    def analyst_tables(self, name: str) -> tuple[str, ...] | None:
        """The tables an analyst may query (None: all)."""
        rows = self._read("SELECT tables FROM analysts WHERE name = ?", (name,))
        return None if not rows or rows[0][0] is None else tuple(json.loads(rows[0][0]))

    def has_analyst(self, name: str) -> bool:
        return bool(self._read("SELECT tables FROM analysts WHERE name = ?", (name,)))

    def analyst_for_token(self, token: str) -> str | None:
        try:
            principal = self.authenticate(token)
        except Unauthorized:
            return None
        return None if principal.is_owner else principal.name

    def analysts(self) -> list[dict[str, Any]]:
        """Every analyst with the state of their token (never the token)."""
        with self._store.cursor() as cur:
            rows = cur.execute(
                "SELECT name, created, revoked, expires, tables, plain_sql FROM analysts ORDER BY name"
            ).fetchall()
        return [
            {
                "name": r[0],
                "created": r[1],
                "revoked": r[2] is not None,
                "expires": r[3],
                "tables": None if r[4] is None else json.loads(r[4]),
                "query_epsilon": None if r[5] is None else json.loads(r[5])["epsilon"],
                "query_delta": None if r[5] is None else json.loads(r[5]).get("delta"),
            }
            for r in rows
        ]

    # ---- tables that stay in another engine
    def attach(
        self,
        name: str,
        engine: str,
        source: str,
        metadata: dict[str, Any] | None = None,
        layout: dict[str, Any] | None = None,
    ) -> None:
        """Register an attached table and, if given, its metadata, in one transaction: a crash leaves both
        or neither (never an attached table without metadata, read as one row per person). ``layout``: what
        privdb wrote there, for a table it loaded into that engine (None: the owner's table, only read)."""
        with self._store.transaction(durable=metadata is not None) as cur:
            cur.execute(
                "INSERT INTO attachments (name, engine, source, layout) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET engine = excluded.engine, source = excluded.source, "
                "layout = excluded.layout",
                (name, engine, source, None if layout is None else json.dumps(layout)),
            )
            crash_point("attach-writing")
            if metadata is not None:
                self._set_metadata(cur, name, metadata)

    def attachments(self) -> dict[str, tuple[str, str]]:
        """Attached table name → (engine URL, the table's name in that engine)."""
        rows = self._read("SELECT name, engine, source FROM attachments ORDER BY name")
        return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}

    def layout(self, name: str) -> dict[str, Any] | None:
        """What privdb wrote for the attached table ``name`` (None: an owner's table privdb only reads)."""
        rows = self._read("SELECT layout FROM attachments WHERE name = ?", (name,))
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    # ---- the query log: refused queries here, spends in the ledger's table beside them (same file)
    def log_refusal(self, analyst: str, query: str, code: str) -> None:
        with self._store.cursor() as cur:
            cur.execute(
                "INSERT INTO refusals (analyst, query, code, created) VALUES (?, ?, ?, ?)",
                (analyst, storable(query[:500]), code, time.time()),
            )

    def log(
        self, database: str, filters: LogFilter, *, limit: int | None = None, offset: int = 0
    ) -> list[LogRow]:
        """One page of the query log: the ledger's spends on ``database`` and the refused queries, in time
        order (newest first if ``filters.newest_first``), filtered, ordered and paged in SQL."""
        where, args = filters.where(self._store.word_match)
        order = "DESC" if filters.newest_first else "ASC"
        sql = (
            f"SELECT time, analyst, query, epsilon, delta, outcome, code FROM ({LOG_UNION}) AS log{where} "
            f"ORDER BY time {order}, src {order}, id {order} LIMIT ? OFFSET ?"
        )
        no_limit = self._store.no_limit
        rows = self._store.execute(sql, (database, *args, no_limit if limit is None else limit, offset))
        return [LogRow(*r) for r in rows]

    def log_count(self, database: str, filters: LogFilter) -> int:
        """How many entries of the log pass ``filters`` (for paging)."""
        where, args = filters.where(self._store.word_match)
        return int(
            self._store.execute(f"SELECT COUNT(*) FROM ({LOG_UNION}) AS log{where}", (database, *args))[0][0]
        )

    # ---- stored answers
    def stored_answer(self, analyst: str, query: str) -> dict[str, Any] | None:
        with self._store.cursor() as cur:
            row = cur.execute(
                "SELECT result FROM answers WHERE analyst = ? AND query = ?", (analyst, query)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def store_answer(
        self,
        analyst: str,
        query: str,
        table: str,
        result: dict[str, Any],
        cur: Cursor | None = None,
        tables: Sequence[str] = (),
    ) -> None:
        """Keep the answer for repeats; in ``cur``'s transaction if given (the ledger's, with its spend).
        ``tables``: every table it read (default ``table``), so a change to any of them drops it."""
        sql = (
            "INSERT INTO answers (analyst, query, tbl, result, created, tbls) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (analyst, query) DO UPDATE SET tbl = excluded.tbl, result = excluded.result, "
            "created = excluded.created, tbls = excluded.tbls"
        )
        read = "".join(f"{t.lower()}\n" for t in (tables or (table,)))
        args = (analyst, query, table, json.dumps(result), time.time(), f"\n{read}")
        if cur is None:
            self._store.execute(sql, args)
        else:
            cur.execute(sql, args)
