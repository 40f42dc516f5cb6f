"""DuckDB tables as privdb writes them: DuckDB's column types as privdb's type names, a file loaded in one
transaction (its rows, the load-time checks and the hidden per-unit row counts commit together or not at
all), and those hidden counts (user-level bounding reads them to skip units that need no bounding). Apart
from privdb.backends.duckdb, which holds the connection and runs queries.

A load's table commits with its privacy metadata written into it, as the table's comment (:data:`PENDING`
and the record the caller gives): the catalog, where the metadata lives, is another store, so the two
cannot commit together. Until the caller has stored the metadata and lifted the mark
(``DuckDBBackend.finish_load``), the table is never listed nor queried; a process killed in between leaves
the mark, and the next writer finishes the load from it (privdb.catalog.loads).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import duckdb

from privdb.backends.names import HIDDEN_PREFIX, RESERVED_PREFIX, quote, unit_rows_column
from privdb.catalog.files import ReadOptions, bad_lines, read_relation
from privdb.crashpoint import crash_point
from privdb.errors import InvalidParameter

__all__ = [
    "PENDING",
    "VISIBLE_COLUMNS",
    "clear_leftovers",
    "engine_type",
    "load_in_transaction",
    "pending_loads",
    "write_unit_rows",
]

PENDING = "privdb: load not finished: "  # a table comment beginning so marks a load whose metadata is due
_MAIN = "database_name = current_database() AND schema_name = 'main'"  # the data file's own
# what DuckDBBackend describes (SQL and parameters): every column of the data file's tables and views but
# those named with privdb's reserved prefix and those of a table whose load has not finished
VISIBLE_COLUMNS = (
    f"SELECT table_name, column_name, data_type, comment FROM duckdb_columns() WHERE {_MAIN} "
    "AND NOT starts_with(lower(table_name), ?) AND table_name NOT IN (SELECT table_name "
    f"FROM duckdb_tables() WHERE {_MAIN} AND starts_with(comment, ?)) ORDER BY table_name, column_index",
    [RESERVED_PREFIX, PENDING],
)


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
    record: Callable[[], str] | None = None,
) -> tuple[int, int]:
    """The new table, checked and counted, committed in one transaction (rolled back on any failure,
    interrupts included). ``record`` (called after ``check``): the text the table commits with, marked
    :data:`PENDING`, for the caller to finish the load from (module doc)."""
    view = read_relation(reader, source, options)
    crash_point("staged")
    reader.execute("BEGIN TRANSACTION")
    try:
        reader.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM {view}")
        crash_point("table-written")
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
        if record is not None:
            reader.execute(f"COMMENT ON TABLE {quote(table)} IS {_literal(PENDING + record())}")
        row = reader.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
        reader.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            reader.execute("ROLLBACK")
        raise
    crash_point("committed")
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


def _literal(text: str) -> str:
    """``text`` as a SQL string literal (COMMENT ON takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def pending_loads(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Table → the record it committed with (:data:`PENDING` taken off), for each unfinished load."""
    rows = con.execute(
        f"SELECT table_name, comment FROM duckdb_tables() WHERE {_MAIN} AND starts_with(comment, ?)",
        [PENDING],
    ).fetchall()
    return {str(name): str(comment)[len(PENDING) :] for name, comment in rows}


def clear_leftovers(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """Drop the views named with privdb's reserved prefix (an earlier privdb staged files as lasting views
    so, and a crash left them: views over the raw file); their names, and the tables named so (privdb
    makes none: the owner's own SQL did)."""
    views = [
        str(r[0])
        for r in con.execute(
            f"SELECT view_name FROM duckdb_views() WHERE {_MAIN} AND NOT internal "
            "AND starts_with(lower(view_name), ?)",
            [RESERVED_PREFIX],
        ).fetchall()
    ]
    for view in views:
        con.execute(f"DROP VIEW IF EXISTS {quote(view)}")
    tables = con.execute(
        f"SELECT table_name FROM duckdb_tables() WHERE {_MAIN} AND starts_with(lower(table_name), ?)",
        [RESERVED_PREFIX],
    ).fetchall()
    return views, sorted(str(r[0]) for r in tables)
