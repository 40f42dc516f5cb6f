"""The hidden per-unit columns of a DuckDB table privdb writes, for user-level bounding to be one scan
(privdb.sql.run.layout): each row's unit size in the whole table, and for each choice column the rows its
unit has in the group drawn for it (which columns: privdb.backends.names.layout_of).

Written in the transaction of the load or append that changes the rows, and again whenever the owner's
metadata or SQL may have changed them (privdb.database); each column's comment is the table's row count
when it was written, so a reader can tell it is current (``DuckDBBackend.unit_rows``, ``unit_choice``).
The choice of a unit is drawn uniformly at random among the distinct values (NULL one of them) its rows
hold, as a grouped query with ``max_groups: 1`` draws it (privdb.sql.run.rewrite), from that unit's rows
alone; an append draws it again for the units it adds rows to, and only for them.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from privdb.backends.names import (
    LAYOUT_PREFIXES,
    Layout,
    hidden_columns,
    quote,
    unit_choice_column,
    unit_rows_column,
)

__all__ = ["add_layout", "write_layout"]


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(f"SELECT COUNT(*) FROM {quote(table)}").fetchone()
    return int(row[0]) if row else 0


def _stamp(con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str]) -> None:
    """Each column's comment: the table's row count now (the currency check's)."""
    rows = _count(con, table)
    for column in columns:
        con.execute(f"COMMENT ON COLUMN {quote(table)}.{quote(column)} IS '{rows}'")


def _affected(t: str, u: str, c: str) -> str:
    """The rows of units with a row whose column ``c`` is NULL (rows just added): a WHERE condition."""
    return (
        f"{u} IN (SELECT {u} FROM {t} WHERE {c} IS NULL) OR ({u} IS NULL AND EXISTS (SELECT 1 FROM {t} "
        f"WHERE {u} IS NULL AND {c} IS NULL))"
    )


def _write_counts(con: duckdb.DuckDBPyConnection, table: str, unit: str, only_new: bool) -> None:
    t, u, c = quote(table), quote(unit), quote(unit_rows_column(unit))
    scope = f" WHERE {_affected(t, u, c)}" if only_new else ""
    con.execute(
        f"UPDATE {t} SET {c} = n.rows FROM (SELECT {u} AS unit, COUNT(*) AS rows FROM {t}{scope} "
        f"GROUP BY {u}) AS n WHERE {t}.{u} IS NOT DISTINCT FROM n.unit"
    )


def _write_choice(con: duckdb.DuckDBPyConnection, table: str, unit: str, column: str, only_new: bool) -> None:
    """Each unit's group in ``column``: the (value, rows) part of largest ``random()`` draw among its parts,
    so uniform among its distinct values; its rows there on the rows of that value, 0 on the others."""
    t, u, v, k = quote(table), quote(unit), quote(column), quote(unit_choice_column(unit, column))
    scope = f" WHERE {_affected(t, u, k)}" if only_new else ""
    parts = f"SELECT {u} AS u, {v} AS v, COUNT(*) AS r, random() AS rnd FROM {t}{scope} GROUP BY 1, 2"
    chosen = f"SELECT u, arg_max({{'v': v, 'r': r}}, rnd) AS kp FROM ({parts}) GROUP BY u"
    con.execute(
        f"UPDATE {t} SET {k} = CASE WHEN {t}.{v} IS NOT DISTINCT FROM ch.kp.v THEN ch.kp.r ELSE 0 END "
        f"FROM ({chosen}) AS ch WHERE {t}.{u} IS NOT DISTINCT FROM ch.u"
    )


def write_layout(
    con: duckdb.DuckDBPyConnection, table: str, layout: Layout | None, columns: Sequence[str]
) -> None:
    """On ``con``: drop the hidden layout columns of ``table`` (among its ``columns``) that ``layout`` does
    not name, and write those it names afresh on every row."""
    keep = hidden_columns(layout)
    for column in columns:
        if column.startswith(LAYOUT_PREFIXES) and column not in keep:
            con.execute(f"ALTER TABLE {quote(table)} DROP COLUMN {quote(column)}")
    if layout is None:
        return
    for column in keep:
        con.execute(f"ALTER TABLE {quote(table)} ADD COLUMN IF NOT EXISTS {quote(column)} BIGINT")
    _write_counts(con, table, layout.unit, only_new=False)
    for column in layout.choices:
        _write_choice(con, table, layout.unit, column, only_new=False)
    _stamp(con, table, keep)


def add_layout(con: duckdb.DuckDBPyConnection, table: str, layout: Layout) -> None:
    """After rows were added (their hidden columns still NULL): the layout of the units they belong to
    written again on all of those units' rows, old and new; the other units' unchanged."""
    _write_counts(con, table, layout.unit, only_new=True)
    for column in layout.choices:
        _write_choice(con, table, layout.unit, column, only_new=True)
    _stamp(con, table, hidden_columns(layout))
