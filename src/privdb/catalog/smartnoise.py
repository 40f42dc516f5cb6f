"""SmartNoise SQL metadata files, read as privdb metadata.

SmartNoise nests a collection (database; may be ``""``), its schemas and their tables:
``Collection: {Schema: {Table: {<table options>, <column>: {type, lower, upper, private_id, …}}}}``.
What has a privdb meaning is mapped; what privdb cannot honour is refused with what to write instead; knobs
that only tune SmartNoise's own engine are ignored (docs/metadata.md, "SmartNoise metadata", has the table).
"""

from __future__ import annotations

from typing import Any

from privdb.errors import InvalidParameter
from privdb.suggest import did_you_mean

__all__ = ["from_smartnoise", "is_smartnoise"]

# table options with no privdb counterpart that change nothing privdb guarantees: privdb always samples
# rows per unit down to max_contributions, always clamps to the bounds, chooses keys by public domain or a
# noisy threshold, and never clamps released counts (post-processing is the analyst's to choose)
_IGNORED_TABLE = {"rows", "sample_max_ids", "censor_dims", "clamp_counts", "clamp_columns", "use_dpsu", "tau"}
_TYPES = {"int": "int", "float": "float", "string": "text", "boolean": "bool", "datetime": "date"}
_PRIVDB_TABLE_KEYS = {"columns", "privacy_unit", "max_contributions", "max_groups", "neighbouring", "public"}


def is_smartnoise(doc: dict[str, Any]) -> bool:
    """A document nested collection → schema → table → column mappings, with no privdb table key on top."""
    if "tables" in doc or set(doc) & _PRIVDB_TABLE_KEYS:
        return False
    schemas = [s for s in doc.values() if isinstance(s, dict)]
    return (
        bool(schemas)
        and len(schemas) == len(doc)
        and all(
            isinstance(t, dict) and all(isinstance(spec, dict) for spec in t.values())
            for schema in schemas
            for t in schema.values()
        )
    )


def _tables(doc: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every table as ``schema.table`` → (table name, its SmartNoise spec)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for schemas in doc.values():
        for schema, tables in schemas.items():
            for name, spec in tables.items():
                qualified = f"{schema}.{name}" if schema else str(name)
                found[qualified] = (str(name), spec)
    return found


def from_smartnoise(doc: dict[str, Any], table: str, source: str) -> dict[str, Any]:
    """privdb's spec for ``table`` from a SmartNoise document: the table whose name (or ``schema.table``)
    matches, or the only table the file describes."""
    tables = _tables(doc)
    wanted = table.lower()
    matches = [v for k, v in tables.items() if wanted in (k.lower(), v[0].lower())]
    if not matches and len(tables) == 1:
        matches = list(tables.values())
    if len(matches) != 1:
        hint = did_you_mean(table, [v[0] for v in tables.values()])
        described = ", ".join(sorted(tables)) or "no table"
        raise InvalidParameter(
            f"SmartNoise metadata {source!r} describes {described}, not {table!r}{hint}; "
            "load under one of those names"
        )
    name, spec = matches[0]
    return _table(name, spec, source)


def _table(name: str, spec: dict[str, Any], source: str) -> dict[str, Any]:
    where = f"SmartNoise metadata {source!r}, table {name!r}"
    out: dict[str, Any] = {}
    columns: dict[str, Any] = {}
    units: list[str] = []
    for key, value in spec.items():
        if isinstance(value, dict):
            column = _column(f"{where}, column {key!r}", value)
            if column.pop("_unit", False):
                units.append(str(key))
            columns[str(key)] = column
        elif key == "max_ids":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidParameter(f"{where}: max_ids must be a whole number ≥ 1, got {value!r}")
            out["max_contributions"] = value
        elif key == "row_privacy":
            out["row_privacy"] = bool(value)
        elif key not in _IGNORED_TABLE:
            raise InvalidParameter(
                f"{where}: privdb does not know the SmartNoise table option {key!r}; the ones it reads are "
                f"max_ids, row_privacy and {', '.join(sorted(_IGNORED_TABLE))} (docs/metadata.md)"
            )
    if len(units) > 1:
        raise InvalidParameter(
            f"{where}: private_id on {', '.join(units)}: privdb's privacy unit is one column; combine them "
            "into one identifier column, or convert this file to privdb metadata (docs/metadata.md)"
        )
    if out.get("row_privacy") and units:
        raise InvalidParameter(f"{where}: row_privacy and private_id ({units[0]}) contradict; keep one")
    if not out.pop("row_privacy", False):
        if not units:
            raise InvalidParameter(
                f"{where}: no column has private_id and row_privacy is not set, so SmartNoise itself "
                "answers no query on it; set row_privacy: True (each row one person) or mark the person's "
                "identifier column with private_id: True"
            )
        out["privacy_unit"] = units[0]
    elif out.get("max_contributions", 1) != 1:
        raise InvalidParameter(f"{where}: with row_privacy, max_ids must be 1 (each row is one person)")
    out["columns"] = columns
    return out


def _column(where: str, spec: dict[str, Any]) -> dict[str, Any]:
    kind = str(spec.get("type", "")).lower()
    if kind == "unknown":  # SmartNoise ignores the column; privdb never releases it
        return {"type": "text", "identifier": True}
    if kind not in _TYPES:
        raise InvalidParameter(
            f"{where}: type {spec.get('type')!r} is not a SmartNoise type (int, float, string, boolean, "
            "datetime, unknown)"
        )
    out: dict[str, Any] = {"type": _TYPES[kind]}
    for key, value in spec.items():
        if key in ("lower", "upper"):
            out[key] = value
        elif key == "private_id":
            out["private_id"] = bool(value)
            out["_unit"] = bool(value)
        elif key == "missing_value":
            raise InvalidParameter(
                f"{where}: privdb does not replace NULLs (missing_value); fill them in the data, or leave "
                "the key out (NULLs are then left out of every aggregate)"
            )
        elif key == "sensitivity":
            raise InvalidParameter(
                f"{where}: privdb derives a sum's sensitivity from lower and upper; give those instead of "
                "sensitivity"
            )
        elif key not in ("type", "name", "nullable"):
            raise InvalidParameter(f"{where}: privdb does not know the SmartNoise column option {key!r}")
    return out
