"""The SQL names privdb writes into every engine's SQL: identifier quoting, the table and column names it
accepts, and the hidden columns it keeps for itself beside an owner's data. Apart from the engines so the
SQL layer, the other engines and the CLI can use them without importing DuckDB.

Names beginning ``__privdb`` (in any case: engines match names case-insensitively) are privdb's own: no
owner or analyst may name a table so (load, attach, metadata, a grant's tables, FROM), and a table or view
so named in a data file — an earlier privdb's staging left by a crash — is never listed nor queried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from privdb.catalog.metadata import TableMeta
from privdb.errors import InvalidParameter

__all__ = [
    "HIDDEN_PREFIX",
    "LAYOUT_PREFIXES",
    "MAX_CHOICES",
    "RESERVED_PREFIX",
    "Layout",
    "check_name",
    "hidden_columns",
    "is_reserved",
    "layout_of",
    "quote",
    "quote_table",
    "refuse_reserved",
    "reserved_column",
    "unit_choice_column",
    "unit_rows_column",
]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HIDDEN_PREFIX = "__privdb_"  # columns privdb keeps for itself: never in metadata, never in analysts' view
LAYOUT_PREFIXES = (f"{HIDDEN_PREFIX}rows_per_", f"{HIDDEN_PREFIX}kept_")  # layout columns (duckdb_layout)
RESERVED_PREFIX = "__privdb"  # no table an owner or analyst names may begin so (module doc)


def reserved_column(column: str) -> InvalidParameter:
    """The refusal of a file bringing a column named like privdb's hidden ones."""
    return InvalidParameter(
        f"column {column!r}: names starting with {HIDDEN_PREFIX!r} are reserved for privdb; rename the "
        "column in the file"
    )


def unit_rows_column(unit: str) -> str:
    """The hidden column holding, on each row, how many rows its privacy unit has in the whole table."""
    return f"{LAYOUT_PREFIXES[0]}{unit}"


def unit_choice_column(unit: str, column: str) -> str:
    """The hidden column holding, on each row, how many rows its unit has in the value of ``column`` drawn
    for it (privdb.backends.duckdb_layout), 0 where the row holds another value."""
    return f"{LAYOUT_PREFIXES[1]}{unit}__{column}"


def is_reserved(name: str) -> bool:
    """Whether ``name`` begins with privdb's reserved prefix, in any case."""
    return name.lower().startswith(RESERVED_PREFIX)


def refuse_reserved(name: str, what: str = "table") -> str:
    """``name``, unless it begins with privdb's reserved prefix (then ``invalid_parameter``)."""
    if is_reserved(name):
        raise InvalidParameter(
            f"{what} name {name!r} begins with {RESERVED_PREFIX!r}, which privdb keeps for its own names; "
            "choose another name"
        )
    return name


def check_name(name: str, what: str = "table") -> str:
    """A plain SQL identifier, so it can be quoted safely and typed in DP-SELECT, and not one of privdb's
    reserved names."""
    if not _NAME.match(name):
        raise InvalidParameter(
            f"{what} name {name!r} must start with a letter or _ and hold only letters, digits and _"
        )
    return refuse_reserved(name, what)


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier (its double quotes doubled): any name, safe in any engine's SQL."""
    return '"' + name.replace('"', '""') + '"'


def quote_table(table: str) -> str:
    """A table name (perhaps schema-qualified) quoted for DuckDB's dialect."""
    from sqlglot import exp  # sqlglot where a name is quoted for SQL, not where a name is checked

    return exp.to_table(table).sql(dialect="duckdb", identify=True)


MAX_CHOICES = 16  # columns with a kept choice per table: each costs one pass over the table when written


@dataclass(frozen=True)
class Layout:
    """The hidden per-unit columns of a table: each row's unit size, and per column in ``choices`` the
    rows its unit has in the group chosen for it (0 on the unit's other rows)."""

    unit: str
    choices: tuple[str, ...] = ()


def layout_of(meta: TableMeta) -> Layout | None:
    """The layout a table with this metadata keeps (None without a privacy unit): the choice columns are
    those an analyst can group by with public keys (declared ``values``, or booleans) but the unit and
    private identifiers, which are never keys."""
    if meta.privacy_unit is None or meta.public:
        return None
    choices = [
        c.name
        for c in meta.columns.values()
        if (c.values is not None or c.type == "bool")
        and not c.private_id
        and c.name.lower() != meta.privacy_unit.lower()
    ]
    return Layout(meta.privacy_unit, tuple(choices[:MAX_CHOICES]))


def hidden_columns(layout: Layout | None) -> list[str]:
    """The hidden columns ``layout`` keeps on a table."""
    if layout is None:
        return []
    return [unit_rows_column(layout.unit), *(unit_choice_column(layout.unit, c) for c in layout.choices)]
