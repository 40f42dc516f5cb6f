"""DuckDB tables as privdb writes them: DuckDB's column types as privdb's type names, a file loaded in one
transaction (its rows, the load-time checks and the hidden per-unit row counts commit together or not at
all), and those hidden counts (user-level bounding reads them to skip units that need no bounding). Apart
from privdb.backends.duckdb, which holds the connection and runs queries.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import duckdb

from privdb.backends.names import HIDDEN_PREFIX, quote, unit_rows_column
from privdb.catalog.files import ReadOptions, bad_lines, read_relation
from privdb.errors import InvalidParameter

__all__ = ["engine_type", "load_in_transaction", "write_unit_rows"]


def engine_type(duck_type: str) -> str:
    """privdb's type name for a DuckDB column type."""
    t = duck_type.upper()
    if "[" in t or t.startswith(("STRUCT", "MAP", "UNION", "LIST", "JSON", "VARIANT")):
        return "nested"  # never a value of the expression language: read only as text (CAST … AS VARCHAR)
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


def load_in_transaction(
    reader: duckdb.DuckDBPyConnection,
    table: str,
    source: Path,
    options: ReadOptions,
    check: Callable[[dict[str, str]], str | None] | None,
) -> tuple[int, int]:
    """The new table, checked and counted, committed in one transaction (rolled back on any failure,
    interrupts included)."""
    view = read_relation(reader, source, options)
    reader.execute("BEGIN TRANSACTION")
    try:
        reader.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM {view}")
        skipped = bad_lines(reader, source, options)  # malformed CSV lines: refused, unless skipped
        described = reader.execute(f"DESCRIBE {quote(table)}").fetchall()
        clash = [str(r[0]) for r in described if str(r[0]).startswith(HIDDEN_PREFIX)]
        if clash:
            raise InvalidParameter(
                f"column {clash[0]!r}: names starting with {HIDDEN_PREFIX!r} are reserved for privdb; "
                "rename the column in the file"
            )
        columns = {str(r[0]): engine_type(str(r[1])) for r in described}
        unit = check(columns) if check is not None else None
        write_unit_rows(reader, table, unit, list(columns))
        row = reader.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
        reader.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            reader.execute("ROLLBACK")
        raise
    return (int(row[0]) if row else 0), skipped


def write_unit_rows(con: duckdb.DuckDBPyConnection, name: str, unit: str | None, columns: list[str]) -> None:
    """On ``con``: drop the hidden unit-count columns of ``name`` (of its ``columns``) but ``unit``'s, and
    write that one (see ``DuckDBBackend.count_unit_rows``)."""
    keep = unit_rows_column(unit) if unit else None
    for column in columns:
        if column.startswith(f"{HIDDEN_PREFIX}rows_per_") and column != keep:
            con.execute(f"ALTER TABLE {quote(name)} DROP COLUMN {quote(column)}")
    if unit is None or keep is None:
        return
    t, u, c = quote(name), quote(unit), quote(keep)
    con.execute(f"ALTER TABLE {t} ADD COLUMN IF NOT EXISTS {c} BIGINT")
    con.execute(
        f"UPDATE {t} SET {c} = n.rows FROM (SELECT {u} AS unit, COUNT(*) AS rows FROM {t} "
        f"GROUP BY {u}) AS n WHERE {t}.{u} IS NOT DISTINCT FROM n.unit"
    )
    row = con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()
    con.execute(f"COMMENT ON COLUMN {t}.{c} IS '{int(row[0]) if row else 0}'")
