"""Opening a DuckDB data file for privdb.backends.duckdb: owner-only when new (privdb.private_files), an
empty one made first for a read-only opening of a missing file, and a lock another process holds named with
its pid; DuckDB's progress bar off on every connection. And public values mapped through a key expression
in a DuckDB of their own (``map_values``, for privdb.database.Database.evaluate_domain).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from privdb.errors import DatabaseInUse, InvalidParameter
from privdb.private_files import chmod_private, owner_only_umask

__all__ = ["first_line", "map_values", "no_progress_bar", "open_data"]


def open_data(path: Path | None, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to the data file at ``path`` (None: in memory); ``DatabaseInUse`` if another process
    holds it."""
    new = path is not None and not path.exists()
    if new:
        owner_only_umask()  # DuckDB creates the file, its WAL and spill files with the umask
    try:
        if path is not None and read_only and new:
            duckdb.connect(str(path)).close()  # an empty database, so that read-only opening works
        con = duckdb.connect(":memory:" if path is None else str(path), read_only=read_only)
        if new and path is not None:
            chmod_private(path)  # owner-only before any row is written (privdb.private_files)
    except duckdb.IOException as err:
        if "lock" in str(err).lower():
            holder = re.search(r"\(PID (\d+)\)", str(err))
            raise DatabaseInUse(
                f"the data file {str(path)!r} is in use by another process"
                + (f" (pid {holder[1]})" if holder else ""),
                int(holder[1]) if holder else None,
            ) from None
        raise InvalidParameter(f"cannot open the data file {str(path)!r}: {first_line(err)}") from None
    no_progress_bar(con)
    return con


def no_progress_bar(con: duckdb.DuckDBPyConnection) -> None:
    """Turn DuckDB's progress bar off (it would write to the analyst's terminal). In Jupyter it is off
    already, and DuckDB refuses any change of the setting there unless ipywidgets is installed: so it is
    set only when on."""
    (on,) = con.execute("SELECT current_setting('enable_progress_bar')").fetchall()  # all: the result ends
    if on[0]:
        con.execute("SET enable_progress_bar = false")


def first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0]


def map_values(key_sql: str, column: str, values: list[Any]) -> tuple[Any, ...] | None:
    """Public ``values`` of ``column`` through a key expression, in a DuckDB of their own (never the data):
    the distinct results, NULL last; None where they cannot be evaluated."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f'CREATE TABLE v AS SELECT UNNEST(?) AS "{column}"', [values])
        rows = con.execute(f"SELECT DISTINCT TRY({key_sql}) AS k FROM v ORDER BY 1 NULLS LAST").fetchall()
    except duckdb.Error:
        return None  # not evaluable on the public values: keys go through the noisy threshold
    finally:
        con.close()
    return tuple(r[0] for r in rows)
