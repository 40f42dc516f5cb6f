"""The SQL names privdb writes into every engine's SQL: identifier quoting, the table and column names it
accepts, and the hidden columns it keeps for itself beside an owner's data. Apart from the engines so the
SQL layer, the other engines and the CLI can use them without importing DuckDB.
"""

from __future__ import annotations

import re

from sqlglot import exp

from privdb.errors import InvalidParameter

__all__ = ["HIDDEN_PREFIX", "check_name", "quote", "quote_table", "unit_rows_column"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HIDDEN_PREFIX = "__privdb_"  # columns privdb keeps for itself: never in metadata, never in analysts' view


def unit_rows_column(unit: str) -> str:
    """The hidden column holding, on each row, how many rows its privacy unit has in the whole table."""
    return f"{HIDDEN_PREFIX}rows_per_{unit}"


def check_name(name: str, what: str = "table") -> str:
    """A plain SQL identifier, so it can be quoted safely and typed in DP-SELECT."""
    if not _NAME.match(name):
        raise InvalidParameter(
            f"{what} name {name!r} must start with a letter or _ and hold only letters, digits and _"
        )
    return name


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier (its double quotes doubled): any name, safe in any engine's SQL."""
    return '"' + name.replace('"', '""') + '"'


def quote_table(table: str) -> str:
    """A table name (perhaps schema-qualified) quoted for DuckDB's dialect."""
    return exp.to_table(table).sql(dialect="duckdb", identify=True)
