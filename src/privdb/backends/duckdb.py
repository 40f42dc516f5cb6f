"""The embedded default engine: DuckDB, one database file per privdb database directory."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from privdb.errors import InvalidParameter, ParseError, UnknownTable
from privdb.sql.suggest import did_you_mean

__all__ = ["DuckDBBackend", "engine_type"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def engine_type(duck_type: str) -> str:
    """privdb's type name for a DuckDB column type."""
    t = duck_type.upper()
    if t in ("BOOLEAN", "BOOL"):
        return "bool"
    if any(
        t.startswith(p)
        for p in (
            "TINYINT",
            "SMALLINT",
            "INTEGER",
            "BIGINT",
            "HUGEINT",
            "UTINYINT",
            "USMALLINT",
            "UINTEGER",
            "UBIGINT",
            "INT",
        )
    ):
        return "int"
    if any(t.startswith(p) for p in ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")):
        return "float"
    if t.startswith(("DATE", "TIMESTAMP", "TIME")):
        return "date"
    return "text"


def check_name(name: str, what: str = "table") -> str:
    """A plain SQL identifier, so it can be quoted safely and typed in DP-SELECT."""
    if not _NAME.match(name):
        raise InvalidParameter(
            f"{what} name {name!r} must start with a letter or _ and hold only letters, digits and _"
        )
    return name


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DuckDBBackend:
    """Loads files, describes tables and runs SQL on a DuckDB file."""

    dialect = "duckdb"

    def __init__(self, path: str | Path | None) -> None:
        self.path = None if path is None else Path(path)
        self._con = duckdb.connect(":memory:" if path is None else str(path))
        self._lock = threading.Lock()

    def close(self) -> None:
        self._con.close()

    def tables(self) -> list[str]:
        with self._lock:
            rows = self._con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
            ).fetchall()
        return [r[0] for r in rows]

    def resolve(self, table: str) -> str:
        """The stored name of ``table`` (case-insensitive), or ``unknown_table`` with a suggestion."""
        names = self.tables()
        for name in names:
            if name.lower() == table.lower():
                return name
        raise UnknownTable(f"no table {table!r}{did_you_mean(table, names)}")

    def columns(self, table: str) -> dict[str, str]:
        """Column name → privdb type, in table order."""
        name = self.resolve(table)
        with self._lock:
            rows = self._con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                [name],
            ).fetchall()
        return {r[0]: engine_type(r[1]) for r in rows}

    def load(self, table: str, source: str | Path) -> int:
        """Create or replace ``table`` from a CSV (delimiter and header detected) or Parquet file."""
        check_name(table)
        path = Path(source)
        if not path.is_file():
            raise InvalidParameter(f"file {str(path)!r} does not exist")
        suffix = path.suffix.lower()
        reader = "read_parquet" if suffix in (".parquet", ".pq") else "read_csv_auto"
        try:
            with self._lock:
                self._con.execute(
                    f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM {reader}(?)", [str(path)]
                )
                count = self._con.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
        except duckdb.Error as err:
            kind = "Parquet" if reader == "read_parquet" else "CSV"
            raise InvalidParameter(
                f"could not read {str(path)!r} as {kind}: {str(err).splitlines()[0]}"
            ) from None
        return int(count[0]) if count else 0

    def load_frame(self, table: str, frame: pd.DataFrame) -> int:
        """Create or replace ``table`` from a pandas DataFrame (used by generators and tests)."""
        check_name(table)
        with self._lock:
            self._con.register("_privdb_frame", frame)
            try:
                self._con.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM _privdb_frame")
            finally:
                self._con.unregister("_privdb_frame")
        return len(frame)

    def bind(self, sql: str) -> list[str]:
        """Check that ``sql`` binds (names and types) without reading any data; returns column names."""
        with self._lock:
            try:
                rel = self._con.sql(sql)
            except duckdb.Error as err:
                raise ParseError(f"the query does not fit the table: {_first_line(err)}") from None
            return list(rel.columns)

    def fetch(self, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Run ``sql`` and return its result (the engine reads data here)."""
        with self._lock:
            return self._con.execute(sql, params or []).df()

    def raw(self, sql: str) -> pd.DataFrame:
        """The owner's direct access: any SQL, result as a DataFrame (empty for statements)."""
        with self._lock:
            try:
                cursor = self._con.execute(sql)
                return cursor.df() if cursor.description else pd.DataFrame()
            except duckdb.Error as err:
                raise ParseError(_first_line(err)) from None


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0]
