"""Privacy metadata: per table, the privacy unit, contribution limits, neighbouring relation, and per
column its type, bounds and public key domain (DESIGN.md's YAML), as the types the library passes around.

Bounds and key domains are *public* facts declared by the owner; privdb never derives them from the data
(that would leak). A numeric column without bounds can be counted but not summed. Building these types from
an owner's declared mapping (and checking it) is privdb.catalog.metadata_spec; reading metadata files is
privdb.catalog.metadata_file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from privdb.catalog.personal import PersonalEpsilon
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.suggest import did_you_mean

__all__ = ["COLUMN_TYPES", "NEIGHBOURING", "ColumnMeta", "StoredType", "TableMeta"]

COLUMN_TYPES = ("int", "float", "category", "text", "bool", "date")
NEIGHBOURING = ("add_remove", "substitute")


class StoredType(str):
    """An engine type read from the values a column holds, for engines that type values, not columns (an
    SQLite column declared without a type, or with BLOB or NUMERIC affinity, may hold integers, reals and
    text side by side). Read by the owner's side when a table is attached; only counts are kept, never values.

    The string is the type the values give: ``int`` (all integers), ``float`` (integers and reals), else
    ``text`` (all text, numbers mixed with text, or no value at all)."""

    numbers: int
    not_numbers: int

    def __new__(cls, *, integers: int, reals: int, not_numbers: int) -> StoredType:
        kind = "text" if not_numbers or not integers + reals else "float" if reals else "int"
        self = super().__new__(cls, kind)
        self.numbers, self.not_numbers = integers + reals, not_numbers
        return self

    def storage(self, table: str, column: str, kind: str) -> str:
        """How a column declared ``kind`` in the metadata is stored: a column without values fits every
        type; numbers are refused when some values are not numbers (the message counts them)."""
        if not self.numbers and not self.not_numbers:
            return "text" if kind == "category" else kind
        if kind in ("int", "float") and self.not_numbers:
            raise InvalidParameter(
                f"table {table!r}, column {column!r}: declared {kind} but {self.not_numbers:,} of its "
                f"{self.numbers + self.not_numbers:,} values are not numbers (the engine keeps each value's "
                "own type in this column); fix the type in the metadata (e.g. text) or the values"
            )
        return str(self)


@dataclass(frozen=True)
class ColumnMeta:
    """One column's public facts."""

    name: str
    type: str
    lower: float | None = None
    upper: float | None = None
    values: tuple[Any, ...] | None = None  # public domain of keys
    private_id: bool = False
    identifier: bool = False
    max_length: int | None = None  # characters of a text value any function reads (the rest is cut)
    storage: str | None = field(default=None, compare=False)  # the engine's type (privdb's name); not saved

    @property
    def numeric(self) -> bool:
        return self.type in ("int", "float", "bool")

    @property
    def bounded(self) -> bool:
        return self.lower is not None and self.upper is not None

    def public_values(self, limit: int) -> list[Any] | None:
        """Every value the column may take, from public facts only: its declared ``values``, a boolean's
        two, or the integers between a bounded int column's bounds (if at most ``limit``); else None."""
        if self.values is not None:
            return list(self.values)
        if self.type == "bool":
            return [False, True]
        if self.type == "int" and self.lower is not None and self.upper is not None:
            lo, hi = math.ceil(self.lower), math.floor(self.upper)
            if hi - lo + 1 <= limit:
                return list(range(lo, hi + 1))
        return None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.lower is not None:
            out["lower"] = self.lower
        if self.upper is not None:
            out["upper"] = self.upper
        if self.values is not None:
            out["values"] = list(self.values)
        if self.private_id:
            out["private_id"] = True
        if self.identifier:
            out["identifier"] = True
        if self.max_length is not None:
            out["max_length"] = self.max_length
        return out


@dataclass(frozen=True)
class TableMeta:
    """One table's privacy metadata."""

    name: str
    columns: dict[str, ColumnMeta]
    privacy_unit: str | None = None
    max_contributions: int = 1
    max_groups: int = 1
    neighbouring: str = "add_remove"
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    rows: int | None = field(default=None, compare=False)  # public row count, if declared
    public: bool = False  # a public table (lookups): analysts read and join it freely, never charged
    personal: PersonalEpsilon | None = None  # each unit's own ε (epsilon_column / epsilon_policy)

    def qualified(self, qualifier: str | None, name: str) -> ColumnMeta:
        """The column ``qualifier.name`` of a query over this table alone (``qualifier`` its name)."""
        if qualifier and qualifier.lower() != self.name.lower():
            raise UnknownColumn(
                f"column {qualifier}.{name} names another table; this query reads {self.name!r}"
            )
        return self.column(name)

    def column(self, name: str) -> ColumnMeta:
        """The column's metadata, or ``unknown_column`` with a suggestion."""
        found = self.columns.get(name) or self.columns.get(name.lower())
        if found is None:
            lowered = {c.lower(): c for c in self.columns}
            found = self.columns.get(lowered.get(name.lower(), ""))
        if found is None:
            hint = did_you_mean(name, list(self.columns))
            raise UnknownColumn(f"table {self.name!r} has no column {name!r}{hint}")
        return found

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.privacy_unit:
            out["privacy_unit"] = self.privacy_unit
        out["max_contributions"] = self.max_contributions
        out["max_groups"] = self.max_groups
        out["neighbouring"] = self.neighbouring
        out["columns"] = {name: col.to_dict() for name, col in self.columns.items()}
        if self.quasi_identifiers:
            out["quasi_identifiers"] = list(self.quasi_identifiers)
        if self.sensitive:
            out["sensitive"] = list(self.sensitive)
        if self.rows is not None:
            out["rows"] = self.rows
        if self.public:
            out["public"] = True
        if self.personal is not None:
            key, value = self.personal.to_dict()
            out[key] = value
        return out
