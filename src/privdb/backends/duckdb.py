"""The embedded default engine: DuckDB, one database file per privdb database directory. The connection,
its per-thread cursors and prepared statements, the schema cache and the timed queries are here; how a table
is written (types, a load in one transaction, the hidden per-unit counts) is privdb.backends.duckdb_tables.

Never listed nor found (``tables``, ``resolve``): a name beginning ``__privdb`` (privdb.backends.names), and a
table whose load has not finished (its comment marked ``PENDING``: privdb.backends.duckdb_tables).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from privdb.backends.base import find_table
from privdb.backends.duckdb_layout import write_layout
from privdb.backends.duckdb_open import first_line, no_progress_bar, open_data
from privdb.backends.duckdb_tables import (
    VISIBLE_COLUMNS,
    Loaded,
    append_in_transaction,
    clear_leftovers,
    engine_type,
    load_in_transaction,
    pending_loads,
)
from privdb.backends.names import (
    HIDDEN_PREFIX,
    Layout,
    check_name,
    quote,
    reserved_column,
    unit_choice_column,
    unit_rows_column,
)
from privdb.backends.watchdog import WATCHDOG
from privdb.catalog.files import ReadOptions, release
from privdb.errors import InvalidParameter, ParseError
from privdb.perthread import PerThread

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DuckDBBackend"]

T = TypeVar("T")
_AGAIN = 0.05  # s: a query past its limit is interrupted again at this interval until it stops
_PREPARED_PER_CURSOR = 64  # prepared statements kept per thread's cursor, least recently used dropped
_STATEMENT_NUMBERS = itertools.count()  # names of prepared statements (unique in the process)


class _ThreadCursor:
    """A thread's cursor and the statements prepared on it (the generation they were prepared at)."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self.cursor = cursor
        self.statements: OrderedDict[str, str] = OrderedDict()
        self.generation = -1

    def close(self) -> None:
        with contextlib.suppress(duckdb.Error):
            self.cursor.close()


class DuckDBBackend:
    """Loads files, describes tables and runs SQL on a DuckDB file.

    The schema (tables, column types, comments) and the queries known to bind are cached in memory: a
    DuckDB file has one writer at a time, so while this connection is open only this object changes the
    schema, and every method that may change it (``load``, ``load_frame``, ``raw``, ``write_layout``)
    clears the cache.
    """

    dialect = "duckdb"

    def __init__(self, path: str | Path | None, *, read_only: bool = False) -> None:
        self.path = None if path is None else Path(path)
        self._con = open_data(self.path, read_only)  # privdb.backends.duckdb_open
        self._lock = threading.Lock()
        self._schema: dict[str, dict[str, tuple[str, str | None]]] | None = None
        self._bound: dict[str, list[str]] = {}
        self._verified: set[tuple[str, str]] = set()  # layout columns found current this session
        # counts the changes of the schema or of any table's rows made here (the only writer while this
        # connection is open): what was planned from them stays valid while it stands
        # (privdb.sql.plan.prepared)
        self.generation = 0
        # each thread's own cursor, so queries of threads run in parallel; closed when its thread ends
        self._cursors: PerThread[_ThreadCursor] = PerThread(self._open_cursor, _ThreadCursor.close)

    def close(self) -> None:
        self._cursors.close()
        self._con.close()

    def release_thread(self) -> None:
        """Close the calling thread's cursor now (a PostgreSQL session ends; privdb.perthread)."""
        self._cursors.release()

    def _open_cursor(self) -> _ThreadCursor:
        with self._lock:
            cursor = self._con.cursor()
        no_progress_bar(cursor)
        return _ThreadCursor(cursor)

    def _prepared(self, cursor: duckdb.DuckDBPyConnection, sql: str) -> str:
        """``EXECUTE name`` for ``sql``, prepared once on this thread's cursor: a query text that comes
        back (the same shape at another ε, a dashboard) skips DuckDB's parse, bind and optimise (about
        0.7 ms of a 2 ms count on 1M rows). DuckDB re-binds a prepared statement when the catalog changes
        and reads the data afresh at every EXECUTE; privdb's own writes (``generation``) drop them too."""
        local = self._cursors.get()
        statements = local.statements
        if local.generation != self.generation:
            if statements:
                with contextlib.suppress(duckdb.Error):
                    for name in statements.values():
                        cursor.execute(f"DEALLOCATE {name}")
            statements.clear()
            local.generation = self.generation
        known = statements.get(sql)
        if known is not None:
            statements.move_to_end(sql)
            return f"EXECUTE {known}"
        name = f"__privdb_q{next(_STATEMENT_NUMBERS)}"
        cursor.execute(f"PREPARE {name} AS {sql}")
        statements[sql] = name
        if len(statements) > _PREPARED_PER_CURSOR:
            _, oldest = statements.popitem(last=False)
            cursor.execute(f"DEALLOCATE {oldest}")
        return f"EXECUTE {name}"

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the database (DuckDB connections are not shared between threads;
        cursors are, and run their queries concurrently)."""
        return self._cursors.get().cursor

    def _invalidate(self) -> None:
        self.generation += 1
        self._schema = None
        self._bound.clear()
        self._verified.clear()

    def _describe(self) -> dict[str, dict[str, tuple[str, str | None]]]:
        """table → column → (DuckDB type, comment), from one catalog query; cached."""
        cached = self._schema
        if cached is not None:
            return cached
        with self._lock:
            if self._schema is None:
                rows = self._con.execute(*VISIBLE_COLUMNS).fetchall()  # none reserved, none unfinished
                schema: dict[str, dict[str, tuple[str, str | None]]] = {}
                for table, column, dtype, comment in rows:
                    schema.setdefault(table, {})[column] = (dtype, comment)
                self._schema = schema
            return self._schema

    def tables(self) -> list[str]:
        return sorted(self._describe())

    # ---- what a crash can leave (privdb.backends.duckdb_tables, privdb.catalog.loads)
    def pending_loads(self) -> dict[str, str]:
        """Table → the record it committed with, for each table whose load has not finished."""
        with self._lock:
            return pending_loads(self._con)

    def finish_load(self, table: str) -> None:
        """Lift the unfinished-load mark of ``table``: from now on it is listed and queried."""
        try:
            self._execute(f"COMMENT ON TABLE {quote(table)} IS NULL")
        finally:
            self._invalidate()

    def clear_leftovers(self) -> tuple[list[str], list[str]]:
        """Drop the staging views an earlier privdb's crashed loads left; their names, and the tables named
        with privdb's reserved prefix (never listed nor queried: for the owner to drop)."""
        try:
            with self._lock:
                return clear_leftovers(self._con)
        finally:
            self._invalidate()

    def resolve(self, table: str) -> str:
        """The stored name of ``table`` (case-insensitive), or ``unknown_table`` with a suggestion."""
        return find_table(table, self.tables(), "")

    def columns(self, table: str) -> dict[str, str]:
        """Column name → privdb type, in table order (privdb's hidden columns left out)."""
        name = self.resolve(table)
        return {
            column: engine_type(dtype)
            for column, (dtype, _) in self._describe()[name].items()
            if not column.startswith(HIDDEN_PREFIX)
        }

    def stored_types(self, table: str) -> dict[str, str]:
        """Column name → DuckDB type, in table order (privdb's hidden columns left out)."""
        name = self.resolve(table)
        return {c: t for c, (t, _) in self._describe()[name].items() if not c.startswith(HIDDEN_PREFIX)}

    # ---- the hidden per-unit layout (privdb.backends.duckdb_layout: user-level bounding reads it)
    def write_layout(self, table: str, layout: Layout | None) -> None:
        """Write ``layout``'s hidden columns on every row of ``table`` (None: drop them all)."""
        name = self.resolve(table)
        columns = list(self._describe()[name])  # before the lock: describing takes it
        try:
            with self._lock:
                write_layout(self._con, name, layout, columns)
        finally:
            self._invalidate()

    def unit_rows(self, table: str, unit: str) -> str | None:
        """The hidden unit-count column of ``table`` if current, else None (every unit is then bounded)."""
        return self._current(self.resolve(table), unit_rows_column(unit))

    def unit_choice(self, table: str, unit: str, column: str) -> str | None:
        """The hidden column of each unit's drawn group in ``column`` if current, else None."""
        return self._current(self.resolve(table), unit_choice_column(unit, column))

    def _current(self, name: str, column: str) -> str | None:
        """``column`` if present and stamped with the table's row count, checked once per session (while
        this connection is open only privdb writes the file)."""
        info = self._describe()[name].get(column)
        if info is None:
            return None
        if (name, column) not in self._verified:
            if info[1] != str(self._row_count(name)):
                return None
            with self._lock:
                self._verified.add((name, column))
        return column

    def _row_count(self, name: str) -> int:
        with self._lock:
            row = self._con.execute(f"SELECT COUNT(*) FROM {quote(name)}").fetchone()
        return int(row[0]) if row else 0

    def _execute(self, sql: str) -> None:
        with self._lock:
            self._con.execute(sql)

    def load(
        self,
        table: str,
        source: str | Path,
        options: ReadOptions | None = None,
        check: Callable[[dict[str, str]], Layout | None] | None = None,
        record: Callable[[], str] | None = None,
    ) -> Loaded:
        """Create or replace ``table`` from a file read as ``options`` say (privdb.catalog.files: CSV with
        its delimiter and header detected unless given, Parquet, JSON, Excel), atomically: the new rows, the
        checks and the hidden per-unit columns happen in one DuckDB transaction, and the old table stays until
        it commits (a failure, an interrupt or a killed process leaves it as it was). The file is staged as
        a temporary view of a connection of its own, closed at the end: nothing of it outlives the load.
        ``check`` gets the new table's columns (name → privdb type), raises to refuse them, and returns the
        layout to write (privdb.backends.duckdb_layout; None: none). ``record``: the table commits marked as
        an unfinished load holding that text, and stays unlisted until :meth:`finish_load` (privdb.
        backends.duckdb_tables). Returns the rows loaded, the CSV lines skipped as malformed
        (``options.skip_bad_lines``; without it they are refused) and the text columns of mostly numbers."""
        check_name(table)
        return self._write(source, lambda reader: load_in_transaction(
            reader, table, Path(source), options or ReadOptions(), check, record
        ))  # fmt: skip

    def append(
        self, table: str, source: str | Path, options: ReadOptions | None, layout: Layout | None
    ) -> Loaded:
        """Add a file's rows to ``table`` atomically, as a load replaces one: its columns must be the
        table's, read as the table's types; its ``layout`` (privdb.backends.duckdb_layout, or None) is
        brought up to date in the same transaction. A failure leaves the table as it was."""
        name = self.resolve(table)
        return self._write(source, lambda reader: append_in_transaction(
            reader, name, Path(source), options or ReadOptions(), layout
        ))  # fmt: skip

    def _write(self, source: str | Path, work: Callable[[duckdb.DuckDBPyConnection], Loaded]) -> Loaded:
        """``work`` on a cursor of its own: a connection of its own, so nothing pending on the shared one
        stops it and the file's temporary view (privdb.catalog.files) is its alone and goes when it closes;
        what it registered released after and the schema cache cleared."""
        try:
            with self._lock:
                reader = self._con.cursor()
                try:
                    return work(reader)
                finally:
                    release(reader)
                    reader.close()
        except duckdb.Error as err:
            raise InvalidParameter(
                f"could not read {str(source)!r}: {str(err).splitlines()[0]}; check the reading options "
                "(--no-header, --delimiter, --quote, --null)"
            ) from None
        finally:
            self._invalidate()

    def load_frame(self, table: str, frame: pd.DataFrame) -> int:
        """Create or replace ``table`` from a pandas DataFrame (used by generators and tests)."""
        check_name(table)
        with self._lock:
            self._con.register("_privdb_frame", frame)
            try:
                self._con.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM _privdb_frame")
            finally:
                self._con.unregister("_privdb_frame")
                self._invalidate()
        self._refuse_hidden(table)
        return len(frame)

    def _refuse_hidden(self, table: str) -> None:  # a frame may not bring columns named like privdb's
        clash = [c for c in self._describe()[table] if c.startswith(HIDDEN_PREFIX)]
        if clash:
            self._execute(f"DROP TABLE {quote(table)}")
            self._invalidate()
            raise reserved_column(clash[0])

    def bind(self, sql: str) -> list[str]:
        """Check that ``sql`` binds (names and types) without reading any data; returns column names."""
        known = self._bound.get(sql)
        if known is not None:
            return known
        try:
            rel = self._cursor().sql(sql)
        except duckdb.Error as err:
            raise ParseError(f"the query does not fit the table: {first_line(err)}") from None
        self._bound[sql] = columns = list(rel.columns)
        return columns

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame:
        """Run ``sql`` and return its result (the engine reads data here). After ``timeout`` seconds the
        query is interrupted and ``TimeoutError`` raised; so is a result that came back later than that
        (an interrupt can arrive after the last chunk), so the limit holds whatever the timing."""
        return self._timed(sql, params, timeout, lambda result: result.df())

    def fetch_columns(self, sql: str, *, timeout: float | None = None) -> dict[str, list[Any]]:
        """``fetch`` as column name → Python values, without building a DataFrame (a third of a small
        aggregate's cost): what the noise step reads (privdb.sql.answer.noise)."""

        def columns(result: duckdb.DuckDBPyConnection) -> dict[str, list[Any]]:
            names = [d[0] for d in result.description or ()]
            rows = result.fetchall()
            return {name: [row[i] for row in rows] for i, name in enumerate(names)}

        return self._timed(sql, None, timeout, columns)

    def _timed(
        self,
        sql: str,
        params: list[Any] | None,
        timeout: float | None,
        take: Callable[[duckdb.DuckDBPyConnection], T],
    ) -> T:
        """Run ``sql`` on this thread's cursor under the time limit and ``take`` its result."""
        cursor = self._cursor()
        started = time.monotonic()
        alarm = None if timeout is None else WATCHDOG.arm(timeout, cursor.interrupt, _AGAIN)
        fired = False
        try:
            if params:
                out = take(cursor.execute(sql, params))
            else:
                out = take(cursor.execute(self._prepared(cursor, sql)))
        except duckdb.InterruptException:
            raise TimeoutError(f"the engine query ran longer than {timeout} s") from None
        finally:
            if alarm is not None:  # once cancelled, the interrupt cannot reach this cursor's next query
                fired = alarm.cancel()
        if fired or (timeout is not None and time.monotonic() - started > timeout):
            raise TimeoutError(f"the engine query ran longer than {timeout} s")
        return out

    def raw(self, sql: str, *, timeout: float | None = None) -> pd.DataFrame:
        """The owner's direct access: any SQL, result as a DataFrame (empty for statements). After
        ``timeout`` seconds the statement is interrupted and ``TimeoutError`` raised."""
        try:
            with self._lock:
                alarm = None if timeout is None else WATCHDOG.arm(timeout, self._con.interrupt, _AGAIN)
                try:
                    cursor = self._con.execute(sql)
                    if cursor is None:  # nothing but comments or semicolons
                        raise InvalidParameter("the SQL holds no statement; write one, e.g. SELECT 1")
                    if cursor.description:
                        return cursor.df()
                    import pandas as pd  # the owner's raw SQL: a frame, empty for a statement

                    return pd.DataFrame()
                finally:
                    if alarm is not None:  # before the lock is released: no late interrupt hits another
                        alarm.cancel()
        except duckdb.InterruptException:
            raise TimeoutError(f"the statement ran longer than {timeout} s") from None
        except duckdb.Error as err:
            raise ParseError(first_line(err)) from None
        finally:
            self._invalidate()
