"""Privacy metadata: per table, the privacy unit, contribution limits, neighbouring relation, and per
column its type, bounds and public key domain (DESIGN.md's YAML).

Bounds and key domains are *public* facts declared by the owner; privdb never derives them from the data
(that would leak). A numeric column without bounds can be counted but not summed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from privdb.accounting.renewal import parse_period
from privdb.catalog.personal import PersonalEpsilon, with_personal
from privdb.catalog.smartnoise import from_smartnoise, is_smartnoise
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.suggest import did_you_mean

__all__ = [
    "ColumnMeta",
    "PersonalEpsilon",
    "StoredType",
    "TableMeta",
    "load_budgets",
    "load_metadata",
    "metadata_from_dict",
]

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


def _positive_int(table: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidParameter(f"table {table!r}: {key} must be an integer >= 1, got {value!r}")
    return value


def _flag(table: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameter(f"table {table!r}: {key} must be true or false, got {value!r}")
    return value


def _bound(table: str, column: str, key: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidParameter(f"table {table!r}, column {column!r}: {key} must be a finite number")
    return float(value)


def _column(table: str, name: str, spec: Any, engine_type: str | None) -> ColumnMeta:
    if not isinstance(spec, dict):
        raise InvalidParameter(f"table {table!r}, column {name!r}: expected a mapping like {{type: int}}")
    unknown = set(spec) - {
        "type", "lower", "upper", "values", "private_id", "identifier", "nullable", "max_length"
    }  # fmt: skip
    if unknown:
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: unknown key(s) {', '.join(sorted(unknown))}; "
            "allowed: type, lower, upper, values, private_id, identifier, max_length"
        )
    kind = str(spec.get("type", engine_type or "text")).lower()
    kind = {"string": "text", "varchar": "text", "integer": "int", "double": "float", "boolean": "bool"}.get(
        kind, kind
    )
    if kind not in COLUMN_TYPES:
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: type {kind!r} is not one of {', '.join(COLUMN_TYPES)}"
        )
    lower = _bound(table, name, "lower", spec.get("lower"))
    upper = _bound(table, name, "upper", spec.get("upper"))
    if (lower is None) != (upper is None):
        raise InvalidParameter(f"table {table!r}, column {name!r}: give both lower and upper, or neither")
    if lower is not None and upper is not None and lower > upper:
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: lower ({lower:g}) is greater than upper ({upper:g})"
        )
    if lower is not None and kind not in ("int", "float", "bool"):
        raise InvalidParameter(f"table {table!r}, column {name!r}: bounds need a numeric type, not {kind}")
    values = spec.get("values")
    if values is not None:
        if not isinstance(values, list) or not values:
            raise InvalidParameter(f"table {table!r}, column {name!r}: values must be a non-empty list")
        if len(set(map(repr, values))) != len(values):
            raise InvalidParameter(f"table {table!r}, column {name!r}: values has duplicates")
        values = tuple(values)
    if isinstance(engine_type, StoredType):  # typed by its values: the declared type must fit them
        engine_type = engine_type.storage(table, name, kind)
    if engine_type is not None and kind == "bool" and engine_type != "bool":
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: declared bool but the data holds {engine_type}; "
            "fix the type in the metadata or the data"
        )
    if engine_type is not None and kind in ("int", "float") and engine_type not in ("int", "float", "bool"):
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: declared {kind} but the data holds {engine_type}; "
            "fix the type in the metadata or the data"
        )
    max_length = spec.get("max_length")
    if max_length is not None and (
        isinstance(max_length, bool) or not isinstance(max_length, int) or not 1 <= max_length <= 100_000
    ):
        raise InvalidParameter(
            f"table {table!r}, column {name!r}: max_length must be a whole number from 1 to 100000, "
            f"got {max_length!r}"
        )
    if max_length is not None and kind not in ("text", "category"):
        raise InvalidParameter(f"table {table!r}, column {name!r}: max_length applies to text columns only")
    return ColumnMeta(
        name=name,
        type=kind,
        max_length=max_length,
        storage=engine_type,
        lower=lower,
        upper=upper,
        values=values,
        private_id=bool(spec.get("private_id", False)),
        identifier=bool(spec.get("identifier", False)),
    )


def metadata_from_dict(table: str, spec: dict[str, Any] | None, engine_columns: dict[str, str]) -> TableMeta:
    """Validate ``spec`` (one table's metadata) against the loaded table's columns and engine types.

    ``engine_columns`` maps each column of the loaded table to privdb's type name. Columns the metadata
    does not mention get their engine type and no bounds.
    """
    spec = dict(spec or {})
    known_keys = {
        "privacy_unit",
        "max_contributions",
        "max_groups",
        "neighbouring",
        "columns",
        "quasi_identifiers",
        "sensitive",
        "rows",
        "row_privacy",
        "public",
        "epsilon_column",
        "epsilon_policy",
    }
    unknown = set(spec) - known_keys
    if unknown:
        listed = ", ".join(repr(k) for k in sorted(map(str, unknown)))  # an empty key shows as ''
        raise InvalidParameter(
            f"table {table!r}: unknown metadata key(s) {listed}; "
            f"allowed: {', '.join(sorted(known_keys - {'row_privacy'}))}"
        )
    declared = spec.get("columns") or {}
    if not isinstance(declared, dict):
        raise InvalidParameter(f"table {table!r}: columns must be a mapping of column name to its facts")
    by_lower = {c.lower(): c for c in engine_columns}
    columns: dict[str, ColumnMeta] = {}
    for name, col_spec in declared.items():
        actual = by_lower.get(str(name).lower())
        if actual is None:
            hint = did_you_mean(str(name), list(engine_columns))
            raise UnknownColumn(f"metadata of table {table!r} names column {name!r}, not in the data{hint}")
        columns[actual] = _column(table, actual, col_spec, engine_columns[actual])
    for name, kind in engine_columns.items():
        if name not in columns:
            columns[name] = ColumnMeta(name=name, type=str(kind), storage=str(kind))
    meta = TableMeta(
        name=table,
        columns=columns,
        privacy_unit=None,
        max_contributions=_positive_int(table, "max_contributions", spec.get("max_contributions", 1)),
        max_groups=_positive_int(table, "max_groups", spec.get("max_groups", 1)),
        neighbouring=str(spec.get("neighbouring", "add_remove")),
        rows=spec.get("rows"),
        public=_flag(table, "public", spec.get("public", False)),
    )
    if meta.public and (spec.get("privacy_unit") or any(c.private_id for c in columns.values())):
        raise InvalidParameter(
            f"table {table!r}: a public table has no privacy unit (public: true means its rows are about no "
            "one); remove public or privacy_unit/private_id"
        )
    if meta.neighbouring not in NEIGHBOURING:
        raise InvalidParameter(
            f"table {table!r}: neighbouring must be add_remove or substitute, got {meta.neighbouring!r}"
        )
    unit = spec.get("privacy_unit")
    if unit is None:
        ids = [c.name for c in columns.values() if c.private_id]
        unit = ids[0] if ids else None
    if unit is not None:
        unit = meta.column(str(unit)).name
    lists: list[tuple[str, ...]] = []
    for key in ("quasi_identifiers", "sensitive"):
        names = spec.get(key) or []
        if not isinstance(names, list):
            raise InvalidParameter(f"table {table!r}: {key} must be a list of column names")
        lists.append(tuple(meta.column(str(n)).name for n in names))
    meta = replace(meta, privacy_unit=unit, quasi_identifiers=lists[0], sensitive=lists[1])
    return with_personal(meta, spec)


def load_metadata(path: str | Path, table: str) -> dict[str, Any]:
    """Read a metadata YAML file and return the spec of ``table`` (a file may describe many tables)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidParameter(f"metadata file {str(path)!r} does not exist") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise InvalidParameter(f"metadata file {str(path)!r} is not valid YAML{where}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InvalidParameter(f"metadata file {str(path)!r} must hold a mapping")
    doc = {k: v for k, v in doc.items() if k != "budgets"}  # shared budgets: load_budgets
    if "tables" in doc:
        tables = doc["tables"]
        if not isinstance(tables, dict):
            raise InvalidParameter(f"metadata file {str(path)!r}: tables must be a mapping")
        for name, spec in tables.items():
            if str(name).lower() == table.lower():
                return dict(spec or {})
        hint = did_you_mean(table, [str(t) for t in tables])
        raise InvalidParameter(f"metadata file {str(path)!r} does not describe table {table!r}{hint}")
    if is_smartnoise(doc):  # SmartNoise SQL's collection → schema → table layout
        return from_smartnoise(doc, table, str(path))
    return doc


def load_budgets(path: str | Path, table: str) -> list[tuple[str, str, float, float, str | float | None]]:
    """The shared budgets a metadata file declares at its top level that apply now: ``table``'s lifetime
    budget and every group's, as (kind, name, ε, δ, renewal period or None). ``budgets: {tables: {people:
    {epsilon: 10, delta: 1e-6}}, groups: {team_a: {epsilon: 5, renew: 30d}}}`` (docs/metadata.md)."""
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    budgets = doc.get("budgets") if isinstance(doc, dict) else None
    if budgets is None:
        return []
    where = f"metadata file {str(path)!r}: budgets"
    if not isinstance(budgets, dict) or set(budgets) - {"tables", "groups"}:
        raise InvalidParameter(
            f"{where} must be a mapping with tables and/or groups, e.g. "
            "budgets: {tables: {people: {epsilon: 10}}, groups: {team_a: {epsilon: 5}}}"
        )
    found: list[tuple[str, str, float, float, str | float | None]] = []
    for key, kind in (("tables", "table"), ("groups", "group")):
        entries = budgets.get(key) or {}
        if not isinstance(entries, dict):
            raise InvalidParameter(f"{where}.{key} must map names to {{epsilon: E, delta: D}}")
        for name, spec in entries.items():
            if kind == "table" and str(name).lower() != table.lower():
                continue  # applied when that table is loaded
            if (
                not isinstance(spec, dict)
                or "epsilon" not in spec
                or set(spec) - {"epsilon", "delta", "renew"}
            ):
                raise InvalidParameter(
                    f"{where}.{key}.{name} must be {{epsilon: E}}, {{epsilon: E, delta: D}} and may add "
                    "renew: 30d (a refill period)"
                )
            renew = spec.get("renew")
            parse_period(renew)  # refused here, before the table is loaded, if it is not a period
            entry = (kind, str(name), float(spec["epsilon"]), float(spec.get("delta", 0.0)), renew)
            found.append(entry)
    return found
