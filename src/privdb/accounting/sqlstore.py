"""Where the ledger and the catalog keep their rows: a SQLite file in the database directory (the default)
or a PostgreSQL database that several privdb servers share (``--ledger postgresql://…``).

This module is the one seam between the two; the ledger's and the catalog's logic is written once, in SQLite's
SQL with ``?`` placeholders, and runs unchanged on both. What differs is here:

* **The write lock.** Every write transaction first takes the store's one write lock and holds it to its
  end: SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL a transaction-scoped advisory lock
  (``pg_advisory_xact_lock``) taken as the transaction's first statement, at ``READ COMMITTED``, so every
  later statement reads what every earlier lock holder committed (docs/proofs/ledger.md, "Several hosts").
  Writers on every host therefore run one at a time, exactly as processes sharing one SQLite file do.
  On SQLite, privdb's processes first queue on a file lock beside the database (``privdb.sqlite.lock``),
  held from ``BEGIN IMMEDIATE`` to the end of the transaction: SQLite's busy handler makes a waiting
  process sleep 1, 2, 5 … ms between tries, far longer than a spend's transaction (under a millisecond with
  its fsync), so two server workers left the cores idle waiting for each other. The file lock is released
  by the kernel when a process dies.
* **Durability.** ``durable=True``: SQLite ``synchronous=FULL``, PostgreSQL ``synchronous_commit=on`` (the
  commit returns once its WAL is flushed). ``durable=False`` (reservations, releases): ``NORMAL`` and
  ``off``, atomic and visible to every other writer at once, flushed by the next durable commit, which in
  both systems flushes the log up to itself.
* **Dialect.** Placeholders (``?`` becomes ``%s``), the new row's id, column types in ``CREATE TABLE``
  (``REAL`` is 4 bytes on PostgreSQL: it becomes ``DOUBLE PRECISION``), adding a column, "no limit", and the
  whole-word match of the log's table filter (``GLOB`` or ``~``).

psycopg is imported only when a PostgreSQL URL is opened (the ``postgres`` extra), so the default install
does not need it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from privdb.errors import InvalidParameter, install_hint
from privdb.perthread import PerThread
from privdb.private_files import create_private, private_dir

__all__ = ["Cursor", "SQLStore", "glob_word_match", "is_store_url", "open_store", "store_for"]

# the advisory lock every privdb write transaction on a PostgreSQL store takes (one per store, like
# SQLite's write lock per file): "privdb" in ASCII, a constant no other program is likely to use
_LOCK_KEY = int.from_bytes(b"privdb", "big")
_LOCK_WAIT = 60  # seconds a writer waits for the lock before failing (SQLite's busy_timeout below)


def _writers_lock(fd: int) -> None:
    """Take the writers' file lock, waiting at most ``_LOCK_WAIT`` seconds as SQLite would (then SQLite's
    own busy error): a holder ends its transaction within a millisecond or two, so the waiter polls at
    50 µs, backing off to 1 ms, and never sleeps long past the release."""
    deadline, pause = time.monotonic() + _LOCK_WAIT, 5e-5
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise sqlite3.OperationalError("database is locked") from None
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)


def _lock_file(path: Path) -> int:
    """The writers' lock file, opened (created owner-only if absent, whatever the umask)."""
    create_private(path)
    return os.open(path, os.O_RDWR)


def is_store_url(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL store rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def store_for(directory: Path, ledger: str | None) -> str | Path:
    """Where a database directory's catalog and ledger live: its own SQLite file, or ``ledger``'s URL."""
    if ledger is None:
        return directory / "privdb.sqlite"
    if not is_store_url(ledger):
        raise InvalidParameter(f"--ledger takes a postgresql://user@host:port/db URL, not {ledger!r}")
    return ledger


def open_store(target: str | Path, *, durable: bool = True) -> SQLStore:
    """A SQLite file, or a PostgreSQL database named by a ``postgresql://`` URL. ``durable``: whether a
    statement outside a transaction is synced (SQLite ``FULL`` rather than ``NORMAL``)."""
    if is_store_url(target):
        return PostgresStore(str(target))
    return SQLiteStore(Path(target), durable=durable)


class Cursor:
    """A DB-API cursor that takes SQLite's SQL (``?`` placeholders) on either store."""

    def __init__(self, raw: Any, dialect: str) -> None:
        self._raw = raw
        self._pg = dialect == "postgresql"

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        if self._pg:
            sql = sql.replace("%", "%%").replace("?", "%s")
        self._raw.execute(sql, tuple(args))
        return self

    def fetchone(self) -> Any:
        return self._raw.fetchone()

    def fetchall(self) -> list[Any]:
        return list(self._raw.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._raw.rowcount)

    def insert(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run an ``INSERT`` into a table with an ``id`` key; the new row's id."""
        if self._pg:
            return int(self.execute(sql + " RETURNING id", args).fetchone()[0])
        self.execute(sql, args)
        return int(self._raw.lastrowid)


class SQLStore:
    """One connection, used by one thread at a time (``lock``), to a SQLite file or a PostgreSQL database."""

    dialect: str
    no_limit: int | None  # what LIMIT takes for "no limit"

    def __init__(self, conn: Any) -> None:
        self.lock = threading.Lock()
        self._conn = conn

    def close(self) -> None:
        self._conn.close()

    def release_thread(self) -> None:
        """Close what the calling thread alone holds (its own connection, if the store keeps one)."""

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Cursor]:
        """One write transaction holding the store's write lock from its first statement to its end; rolled
        back if the block raises."""
        with self.lock:
            cur = Cursor(self._writer(durable).cursor(), self.dialect)
            self._begin(cur, durable)
            try:
                try:
                    yield cur
                except BaseException:
                    with contextlib.suppress(Exception):  # a broken connection has rolled back already
                        cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            finally:
                self._end()

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A cursor for statements outside a transaction: each is committed on its own, and a read sees what
        is committed when it runs."""
        with self.lock:
            yield Cursor(self._connection().cursor(), self.dialect)

    def execute(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """One statement on its own (a read, or a write that needs no check first); its rows."""
        with self.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall() if cur._raw.description is not None else []

    def create(self, statements: Sequence[str], added: Sequence[tuple[str, str, str]] = ()) -> None:
        """Create the tables (``CREATE TABLE IF NOT EXISTS``, SQLite's types) and the columns added since
        (table, column, declaration), in one write transaction (so servers starting together do not race;
        not synced: a schema lost to a power cut is created again)."""
        with self.transaction(durable=False) as cur:
            for statement in statements:
                cur.execute(self.ddl(statement))
            for table, column, declaration in added:
                self._add_column(cur, table, column, self.ddl(declaration))

    def ddl(self, statement: str) -> str:
        return statement

    def _connection(self) -> Any:
        """The connection, opened again first if it was lost (called under ``lock``)."""
        return self._conn

    def _writer(self, durable: bool) -> Any:
        """The connection a write transaction runs on (called under ``lock``)."""
        return self._connection()

    def word_match(self, text: str) -> str:
        """SQL true when the placeholder's word (letters, digits, _) occurs in ``text`` as a whole word."""
        return glob_word_match(text)

    def _begin(self, cur: Cursor, durable: bool) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        """After a write transaction ended (committed or rolled back)."""

    def _add_column(self, cur: Cursor, table: str, column: str, declaration: str) -> None:
        raise NotImplementedError


class SQLiteStore(SQLStore):
    """A SQLite file in WAL mode."""

    dialect = "sqlite"
    no_limit = -1

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        private_dir(path.parent)
        # created empty at 0600 before SQLite opens it: SQLite gives its -wal and -shm the main file's mode
        create_private(path)
        self._path, self._durable = path, durable
        super().__init__(self._open(durable=True))
        self._conn.execute("PRAGMA journal_mode=WAL")
        # write transactions that need no sync (reservations, releases) have a connection of their own, so
        # no transaction spends a statement setting ``synchronous``; a sync flushes the whole WAL file, with
        # what this connection wrote before it
        self._relaxed = self._open(durable=False)
        # each thread's connection for statements outside a transaction, closed when its thread ends (a
        # server's threads come and go: one per PostgreSQL client; privdb.perthread)
        self._own: PerThread[sqlite3.Connection] = PerThread(self._open, sqlite3.Connection.close)
        # privdb's writers queue on this file's lock before SQLite's: a waiting process wakes when the lock is
        # free, where SQLite's busy handler sleeps 1, 2, 5, 10 … ms between tries (module doc)
        # a file object: closed in close(), or when the store is collected
        self._lockfile = os.fdopen(_lock_file(Path(f"{path}.lock")), "r+b")
        self._writers = self._lockfile.fileno()

    def _open(self, *, durable: bool | None = None) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, timeout=60.0, check_same_thread=False)
        durable = self._durable if durable is None else durable
        conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        conn.execute(f"PRAGMA busy_timeout={_LOCK_WAIT * 1000}")
        return conn

    @contextlib.contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A cursor on this thread's own connection (WAL: a read never waits for a writer, nor for this
        process's write transaction and its fsync); each statement commits on its own, and SQLite's lock
        orders a write with every other (``busy_timeout``)."""
        raw = self._own.get().cursor()
        try:
            yield Cursor(raw, self.dialect)
        finally:
            raw.close()  # no statement left open: the next read starts a fresh snapshot

    def close(self) -> None:
        self._own.close()
        with self.lock:
            self._relaxed.close()
            self._lockfile.close()  # once only (a file object): the number may be another file's by now
        super().close()

    def release_thread(self) -> None:
        self._own.release()

    def _writer(self, durable: bool) -> sqlite3.Connection:
        return self._conn if durable else self._relaxed

    def _begin(self, cur: Cursor, durable: bool) -> None:
        _writers_lock(self._writers)
        try:
            cur.execute("BEGIN IMMEDIATE")
        except BaseException:
            fcntl.flock(self._writers, fcntl.LOCK_UN)
            raise

    def _end(self) -> None:
        fcntl.flock(self._writers, fcntl.LOCK_UN)

    def _add_column(self, cur: Cursor, table: str, column: str, declaration: str) -> None:
        if column not in {r[1] for r in cur.execute(f"PRAGMA table_info({table})").fetchall()}:
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


class PostgresStore(SQLStore):
    """A PostgreSQL database (psycopg 3), shared by several servers; the URL as libpq takes it."""

    dialect = "postgresql"
    no_limit = None

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise InvalidParameter(f"a PostgreSQL ledger needs psycopg: {install_hint('postgres')}") from None
        self._url = url
        try:
            conn = self._open()
        except psycopg.Error as err:
            raise InvalidParameter(
                f"cannot open the ledger at {_without_password(url)!r}: {str(err).strip().splitlines()[0]}"
            ) from None
        super().__init__(conn)

    def _open(self) -> Any:
        import psycopg

        conn = psycopg.connect(self._url, autocommit=True, connect_timeout=30)
        # a commit waits for its WAL flush whatever the server's default; a transaction left open by a host
        # that died (no FIN reached PostgreSQL) is ended, and its lock freed, after a minute
        conn.execute("SET synchronous_commit = on")
        conn.execute("SET idle_in_transaction_session_timeout = '60s'")
        conn.execute(f"SET lock_timeout = '{_LOCK_WAIT}s'")
        return conn

    def _connection(self) -> Any:
        # after PostgreSQL restarted (or a network cut), the request that met the broken connection failed
        # (its answer was not released); the next one opens a new connection instead of failing too
        if self._conn.broken or self._conn.closed:
            self._conn = self._open()
        return self._conn

    def _begin(self, cur: Cursor, durable: bool) -> None:
        cur.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        cur.execute(f"SET LOCAL synchronous_commit = {'on' if durable else 'off'}")
        cur.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))

    def ddl(self, statement: str) -> str:
        statement = statement.replace(
            "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        )
        return re.sub(r"\bREAL\b", "DOUBLE PRECISION", re.sub(r"\bINTEGER\b", "BIGINT", statement))

    def _add_column(self, cur: Cursor, table: str, column: str, declaration: str) -> None:
        present = cur.execute(  # look first: ALTER TABLE locks the table out even when it changes nothing
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? AND column_name = ?",
            (table, column),
        ).fetchone()
        if present is None:
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")

    def word_match(self, text: str) -> str:
        return f"(' ' || {text} || ' ') ~ ('[^a-z0-9_]' || ? || '[^a-z0-9_]')"  # POSIX regex


def glob_word_match(text: str) -> str:
    """SQLite's whole-word match (the word padded by two non-word characters, the text by spaces)."""
    return f"(' ' || {text} || ' ') GLOB ('*[^a-z0-9_]' || ? || '[^a-z0-9_]*')"


def _without_password(url: str) -> str:
    """The URL as it may be shown in a message: a password in it replaced by ``***``."""
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
