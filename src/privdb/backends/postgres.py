"""PostgreSQL as an engine for attached tables (psycopg 3): the rewritten aggregate runs on the owner's
server, transpiled by sqlglot; only aggregates travel back.

Every query runs in a read-only transaction with ``statement_timeout`` set from privdb's time limit, so a
query can neither change the owner's data nor run on without bound. A lost connection (the server restarted)
is opened again when a query is prepared, before any budget is reserved; if the server cannot be reached the
query is refused with ``engine_unavailable`` and nothing is spent. A connection lost while the aggregate runs
is charged like any engine failure after reading (privdb cannot know how far the server got).
"""

from __future__ import annotations

import threading
from typing import Any

import pandas as pd

from privdb.backends.base import find_table
from privdb.errors import EngineUnavailable, ParseError, install_hint

__all__ = ["PostgresBackend", "postgres_type"]


def postgres_type(data_type: str) -> str:
    """privdb's type for an ``information_schema.columns.data_type``."""
    t = data_type.lower()
    if t == "boolean":
        return "bool"
    if t in ("smallint", "integer", "bigint"):
        return "int"
    if t in ("real", "double precision", "numeric", "decimal"):
        return "float"
    if t.startswith(("date", "timestamp", "time")):
        return "date"
    return "text"


class PostgresBackend:
    """One connection to a PostgreSQL database (``postgresql://user@host:port/dbname``)."""

    dialect = "postgres"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise EngineUnavailable(
                f"PostgreSQL needs the psycopg driver: {install_hint('postgres')} (nothing was spent)"
            ) from None

        self._psycopg = psycopg
        self._url = url
        self._con = self._connect()
        self._lock = threading.Lock()

    def _connect(self) -> Any:
        try:
            return self._psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        except self._psycopg.Error as err:
            raise EngineUnavailable(
                f"cannot connect to PostgreSQL ({type(err).__name__}: {str(err).strip().splitlines()[0]}); "
                "check the URL postgresql://user@host:port/dbname and that the server runs "
                "(nothing was spent)"
            ) from None

    def _live(self) -> Any:
        """The connection, opened again if it was lost (called before any budget is reserved)."""
        if self._con.closed or self._con.broken:
            self._con = self._connect()
        return self._con

    def close(self) -> None:
        self._con.close()

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run a catalog or planning statement (never one that reads the owner's rows); a connection the
        server dropped is opened once more and the statement repeated."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    with self._live().cursor() as cur:
                        cur.execute(sql, params or None)  # no parameters: a '%' in a LIKE is literal
                        return list(cur.fetchall())
                except self._psycopg.Error:
                    if not self._con.broken:
                        raise
                    if attempt == 2:
                        raise EngineUnavailable(
                            "the connection to PostgreSQL was lost twice; nothing was spent: try again "
                            "when the server runs"
                        ) from None
            raise AssertionError("unreachable")

    def tables(self) -> list[str]:
        rows = self._rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "ORDER BY 1"
        )
        return [str(r[0]) for r in rows]

    def resolve(self, table: str) -> str:
        return find_table(table, self.tables(), "the PostgreSQL database has ")

    def columns(self, table: str) -> dict[str, str]:
        name = self.resolve(table)
        rows = self._rows(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (name,),
        )
        return {str(r[0]): postgres_type(str(r[1])) for r in rows}

    def unit_rows(self, table: str, unit: str) -> str | None:
        return None  # the owner's database is never written: every unit goes through bounding

    def unit_choice(self, table: str, unit: str, column: str) -> str | None:
        return None  # no layout kept (unit_rows): every unit's group is drawn by the query

    def bind(self, sql: str) -> list[str]:
        """Plan ``sql`` without running it (EXPLAIN)."""
        try:
            self._rows("EXPLAIN " + sql)
            with self._lock, self._con.cursor() as cur:
                cur.execute(f"SELECT * FROM ({sql}) AS q LIMIT 0")
                return [d.name for d in cur.description or ()]
        except self._psycopg.Error as err:
            raise ParseError(
                f"the PostgreSQL engine cannot run this query: {str(err).splitlines()[0]}"
            ) from None

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame:
        psycopg = self._psycopg
        with self._lock:
            try:
                with self._con.transaction(), self._con.cursor() as cur:
                    cur.execute("SET TRANSACTION READ ONLY")
                    if timeout is not None:
                        cur.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
                    cur.execute(sql, params or None)
                    rows = cur.fetchall()
                    columns = [d.name for d in cur.description or ()]
            except psycopg.errors.QueryCanceled:
                raise TimeoutError(f"the PostgreSQL query ran longer than {timeout} s") from None
        frame = pd.DataFrame.from_records(rows, columns=columns)
        for i in range(frame.shape[1]):  # numeric aggregates come back as Decimal (by position: names repeat)
            values = frame.iloc[:, i]
            if values.dtype == object and len(frame) and type(values.iloc[0]).__name__ == "Decimal":
                frame.isetitem(i, values.astype(float).to_numpy())
        return frame
