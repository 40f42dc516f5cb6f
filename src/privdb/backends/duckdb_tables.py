"""DuckDB tables as privdb writes them: a file loaded in one transaction (its rows, the load-time checks and
the hidden per-unit columns commit together or not at all), rows added to a table the same way (the hidden
columns, privdb.backends.duckdb_layout, are what user-level bounding reads to be one scan). Apart from
privdb.backends.duckdb, which holds the connection and runs queries.

A load's table commits with its privacy metadata written into it, as the table's comment (:data:`PENDING`
and the record the caller gives): the catalog, where the metadata lives, is another store, so the two
cannot commit together. Until the caller has stored the metadata and lifted the mark
(``DuckDBBackend.finish_load``), the table is never listed nor queried; a process killed in between leaves
the mark, and the next writer finishes the load from it (privdb.catalog.loads). An append needs no mark:
the table keeps the metadata the catalog holds already, and its new rows commit in one transaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from privdb.backends.duckdb_layout import add_layout, write_layout
from privdb.backends.names import (
    HIDDEN_PREFIX,
    RESERVED_PREFIX,
    Layout,
    hidden_columns,
    quote,
    reserved_column,
)
from privdb.catalog.files import ReadOptions, bad_lines, read_relation
from privdb.catalog.mixed import MixedColumn, mixed_columns
from privdb.catalog.typed import append_columns, engine_type
from privdb.crashpoint import crash_point

__all__ = [
    "PENDING",
    "VISIBLE_COLUMNS",
    "Loaded",
    "append_in_transaction",
    "clear_leftovers",
    "engine_type",
    "load_in_transaction",
    "pending_loads",
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


@dataclass(frozen=True)
class Loaded:
    """What a load or an append did: the table's rows after it, the rows it added (a load: all), the CSV
    lines it left out (``skip_bad_lines``), the text columns of mostly numbers it found, and which it was."""

    rows: int
    added: int
    skipped: int
    mixed: tuple[MixedColumn, ...] = ()
    appended: bool = False


def load_in_transaction(
    reader: duckdb.DuckDBPyConnection,
    table: str,
    source: Path,
    options: ReadOptions,
    check: Callable[[dict[str, str]], Layout | None] | None,
    record: Callable[[], str] | None = None,
) -> Loaded:
    """The new table, checked and counted, committed in one transaction (rolled back on any failure,
    interrupts included). A column the metadata does not type that holds mostly numbers is reported (not
    for a file read with exact types: its reader looked already). ``record`` (called after ``check``): the
    text the table commits with, marked :data:`PENDING`, for the caller to finish the load from (module
    doc)."""
    view = read_relation(reader, source, options)
    crash_point("staged")
    reader.execute("BEGIN TRANSACTION")
    try:
        reader.execute(f"CREATE OR REPLACE TABLE {quote(table)} AS SELECT * FROM {view}")
        crash_point("table-written")
        described = reader.execute(f"DESCRIBE {quote(table)}").fetchall()
        read_as = {str(r[0]): str(r[1]) for r in described}
        skipped = bad_lines(reader, source, options, read_as, _count(reader, table))
        clash = [str(r[0]) for r in described if str(r[0]).startswith(HIDDEN_PREFIX)]
        if clash:
            raise reserved_column(clash[0])
        columns = {str(r[0]): engine_type(str(r[1])) for r in described}
        layout = check(columns) if check is not None else None
        write_layout(reader, table, layout, list(columns))
        typed = {name for name, _ in options.declared}
        mixed = () if options.types else tuple(mixed_columns(reader, quote(table), source, options, typed))
        if record is not None:
            reader.execute(f"COMMENT ON TABLE {quote(table)} IS {_literal(PENDING + record())}")
        rows = _count(reader, table)
        reader.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            reader.execute("ROLLBACK")
        raise
    crash_point("committed")
    return Loaded(rows, rows, skipped, mixed)


def append_in_transaction(
    reader: duckdb.DuckDBPyConnection, table: str, source: Path, options: ReadOptions, layout: Layout | None
) -> Loaded:
    """The file's rows added to ``table`` in one transaction with its layout brought up to date, or
    nothing changed. The file must have the table's columns (any order) and is read as their types, so a
    value that does not fit is a bad line named by line and column (or left out with ``skip_bad_lines``)."""
    described = reader.execute(f"DESCRIBE {quote(table)}").fetchall()
    kept = {str(r[0]): str(r[1]) for r in described if not str(r[0]).startswith(HIDDEN_PREFIX)}
    exact = tuple((name.lower(), duck_type) for name, duck_type in kept.items())
    options = replace(options, types=exact, declared=())
    view = read_relation(reader, source, options)
    file_types = {str(r[0]): str(r[1]) for r in reader.execute(f"DESCRIBE {view}").fetchall()}
    matched = append_columns(
        {c: engine_type(t) for c, t in file_types.items()},
        {c: engine_type(t) for c, t in kept.items()},
        table,
    )
    before = _count(reader, table)
    hidden = hidden_columns(layout)
    current = bool(hidden) and all(_comment(reader, table, c) == str(before) for c in hidden)
    reader.execute("BEGIN TRANSACTION")
    try:
        targets = ", ".join(quote(matched[c]) for c in file_types)
        sources = ", ".join(quote(c) for c in file_types)
        reader.execute(f"INSERT INTO {quote(table)} ({targets}) SELECT {sources} FROM {view}")
        skipped = bad_lines(reader, source, options, file_types, _count(reader, table) - before)
        if layout is not None and current:
            add_layout(reader, table, layout)
        else:  # no layout yet, or a stale one: all of it written afresh
            write_layout(reader, table, layout, [str(r[0]) for r in described])
        rows = _count(reader, table)
        reader.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            reader.execute("ROLLBACK")
        raise
    return Loaded(rows, rows - before, skipped, appended=True)


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
    return int(row[0]) if row else 0


def _comment(con: duckdb.DuckDBPyConnection, table: str, column: str) -> str | None:
    row = con.execute(
        f"SELECT comment FROM duckdb_columns() WHERE {_MAIN} AND table_name = ? AND column_name = ?",
        [table, column],
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


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
