"""SQLite as an engine for attached tables: the data stays in the owner's file, privdb sends it the
rewritten aggregate (transpiled to SQLite by sqlglot) and reads back only aggregates.

The file is opened read-only. Column types come from the declared types (SQLite's type affinity rules),
except where SQLite keeps each value's own type: a column declared without a type (``CREATE TABLE people
(pid, age, income)``, as the course writes it) or with BLOB or NUMERIC affinity gets its type from the
``typeof()`` of the values it holds (``StoredType``: counts only, read on the owner's side; cached until
another connection changes the file). A query that runs longer than its time limit is interrupted through
SQLite's progress handler.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

from privdb.backends.base import find_table
from privdb.backends.names import quote
from privdb.catalog.metadata import StoredType
from privdb.errors import InvalidParameter, ParseError

__all__ = ["SQLiteBackend", "affinity", "sqlite_type", "value_typed"]


def affinity(declared: str) -> str:
    """SQLite's affinity of a declared column type: INTEGER, TEXT, BLOB, REAL or NUMERIC (section 3.1 of
    its docs on data types, rules applied in order)."""
    t = (declared or "").upper()
    if "INT" in t:
        return "INTEGER"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in t or not t.strip():
        return "BLOB"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def value_typed(declared: str) -> bool:
    """Whether a column's type is read from its values: no declared type, or one with BLOB or NUMERIC
    affinity (SQLite stores such values as they come). BOOL, DATE and TIME types say what the owner means
    and keep their type."""
    t = (declared or "").upper()
    return affinity(t) in ("BLOB", "NUMERIC") and not any(k in t for k in ("BOOL", "DATE", "TIME"))


def sqlite_type(declared: str) -> str:
    """privdb's type for a SQLite declared type, by SQLite's affinity rules (section 3.1 of its docs)."""
    t = (declared or "").upper()
    if "BOOL" in t:
        return "bool"
    if "INT" in t:
        return "int"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if any(k in t for k in ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL")):
        return "float"
    if "DATE" in t or "TIME" in t:
        return "date"
    return "text"


class SQLiteBackend:
    """Read-only access to one SQLite file."""

    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise InvalidParameter(f"SQLite file {str(self.path)!r} does not exist")
        try:
            self._con = sqlite3.connect(
                f"file:{self.path.resolve()}?mode=ro", uri=True, check_same_thread=False
            )
            self._con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.Error as err:
            raise InvalidParameter(f"cannot open {str(self.path)!r} as SQLite: {err}") from None
        self._lock = threading.Lock()
        # (table, columns) -> (PRAGMA data_version when read, each column's type from its values)
        self._stored: dict[tuple[str, tuple[str, ...]], tuple[int, dict[str, StoredType]]] = {}

    def close(self) -> None:
        self._con.close()

    def tables(self) -> list[str]:
        with self._lock:
            rows = self._con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
                "ORDER BY name"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def resolve(self, table: str) -> str:
        return find_table(table, self.tables(), "the SQLite file has ")

    def columns(self, table: str) -> dict[str, str]:
        """Column name → privdb type: from the declared type, or from the values (``value_typed``)."""
        name = self.resolve(table)
        with self._lock:
            rows = self._con.execute(f"PRAGMA table_info({quote(name)})").fetchall()
            declared = {str(r[1]): str(r[2] or "") for r in rows}
            stored = self._stored_types(name, [c for c, t in declared.items() if value_typed(t)])
        return {column: stored.get(column) or sqlite_type(t) for column, t in declared.items()}

    def _stored_types(self, name: str, columns: list[str]) -> dict[str, StoredType]:
        """Each column's type from the ``typeof()`` of its values, in one pass over the table; kept until
        another connection commits a change to the file (``PRAGMA data_version``). Caller holds the lock."""
        if not columns:
            return {}
        version = int(self._con.execute("PRAGMA data_version").fetchone()[0])
        key = (name, tuple(columns))
        cached = self._stored.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        counts = ", ".join(
            f"COALESCE(SUM(typeof({q}) = 'integer'), 0), COALESCE(SUM(typeof({q}) = 'real'), 0), "
            f"COALESCE(SUM(typeof({q}) IN ('text', 'blob')), 0)"
            for q in map(quote, columns)
        )
        row = self._con.execute(f"SELECT {counts} FROM {quote(name)}").fetchone()
        types = {
            column: StoredType(
                integers=int(row[3 * i]), reals=int(row[3 * i + 1]), not_numbers=int(row[3 * i + 2])
            )
            for i, column in enumerate(columns)
        }
        self._stored[key] = (version, types)
        return types

    def unit_rows(self, table: str, unit: str) -> str | None:
        return None  # the owner's file is never written: every unit goes through bounding

    def unit_choice(self, table: str, unit: str, column: str) -> str | None:
        return None  # no layout kept (unit_rows): every unit's group is drawn by the query

    def bind(self, sql: str) -> list[str]:
        """Compile ``sql`` without running it (SQLite's EXPLAIN prepares the statement)."""
        with self._lock:
            try:
                self._con.execute("EXPLAIN " + sql).fetchall()
                cursor = self._con.execute(f"SELECT * FROM ({sql}) LIMIT 0")
            except sqlite3.Error as err:
                raise ParseError(f"the SQLite engine cannot run this query: {err}") from None
            return [d[0] for d in cursor.description or ()]

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame:
        with self._lock:
            deadline = None if timeout is None else time.monotonic() + timeout
            if deadline is not None:
                self._con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            try:
                cursor = self._con.execute(sql, params or [])
                rows = cursor.fetchall()
            except sqlite3.OperationalError as err:
                if "interrupted" in str(err):
                    raise TimeoutError(f"the SQLite query ran longer than {timeout} s") from None
                raise
            finally:
                self._con.set_progress_handler(None, 0)
        return pd.DataFrame.from_records(rows, columns=[d[0] for d in cursor.description or ()])
