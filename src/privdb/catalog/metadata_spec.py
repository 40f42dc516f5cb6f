"""Checking an owner's declared metadata (one table's mapping, as read from DESIGN.md's YAML) against the
loaded table's columns and engine types, and building its TableMeta: every key, type, bound, key domain and
personalised ε (``epsilon_column`` / ``epsilon_policy``, docs/proofs/personalised.md) is validated here, with
a message naming what is wrong and how to fix it. The types themselves are privdb.catalog.metadata; reading
the YAML files is privdb.catalog.metadata_file.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from privdb.catalog.metadata import COLUMN_TYPES, NEIGHBOURING, ColumnMeta, StoredType, TableMeta
from privdb.catalog.personal import PersonalEpsilon
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.suggest import did_you_mean

__all__ = ["metadata_from_dict", "with_personal"]


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


def _positive_epsilon(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise InvalidParameter(f"{where} must be a positive number (an ε), got {value!r}")
    return float(value)


def with_personal(meta: TableMeta, spec: dict[str, Any]) -> TableMeta:
    """``meta`` with its personalised ε (``epsilon_column`` or ``epsilon_policy``), validated: the column
    exists, is not the privacy unit, and every ε it can give is positive and known from the metadata. The
    column is marked an identifier: never released (docs/proofs/personalised.md, "The ε column")."""
    table = meta.name
    column_key, policy_key = spec.get("epsilon_column"), spec.get("epsilon_policy")
    if column_key is None and policy_key is None:
        return meta
    if column_key is not None and policy_key is not None:
        raise InvalidParameter(
            f"table {table!r}: give epsilon_column (each unit's ε as a number) or epsilon_policy (an ε per "
            "value of a column), not both"
        )
    if meta.public:
        raise InvalidParameter(f"table {table!r}: a public table has no units to give an ε; remove public")
    if meta.neighbouring != "add_remove":
        raise InvalidParameter(
            f"table {table!r}: personalised privacy (epsilon_column, epsilon_policy) is stated for "
            "neighbouring: add_remove (one person in or out); remove neighbouring: substitute"
        )
    policy: tuple[tuple[Any, float], ...] | None = None
    default: float | None = None
    if column_key is not None:
        if not isinstance(column_key, str) or not column_key:
            raise InvalidParameter(f"table {table!r}: epsilon_column must name a column, got {column_key!r}")
        col = meta.column(column_key)
        if col.type not in ("int", "float") or not col.bounded:
            raise InvalidParameter(
                f"table {table!r}: epsilon_column {col.name!r} must be a number column with lower and upper "
                f"(the smallest and largest ε a person may choose), e.g. {col.name}: "
                "{type: float, lower: 0.1, upper: 2}"
            )
        assert col.lower is not None and col.upper is not None
        if col.lower <= 0:
            raise InvalidParameter(
                f"table {table!r}: epsilon_column {col.name!r} has lower {col.lower:g}; every ε must be "
                "positive: set lower to the smallest ε a person may choose (> 0)"
            )
        lower, upper = col.lower, col.upper
    else:
        where = f"table {table!r}: epsilon_policy"
        if not isinstance(policy_key, dict) or set(policy_key) - {"column", "values", "default"}:
            raise InvalidParameter(
                f"{where} must be a mapping like {{column: consent, values: {{full: 1.0, restricted: 0.1}}, "
                "default: 0.01}"
            )
        if not isinstance(policy_key.get("column"), str):
            raise InvalidParameter(f"{where}: column must name a column")
        col = meta.column(policy_key["column"])
        values = policy_key.get("values")
        if not isinstance(values, dict) or not values:
            raise InvalidParameter(f"{where}: values must map each value of {col.name!r} to its ε")
        if col.type not in ("text", "category"):
            raise InvalidParameter(
                f"{where}: column {col.name!r} is {col.type}; a policy reads a text or category column "
                "(its values name the classes)"
            )
        for value in values:
            if not isinstance(value, str):
                raise InvalidParameter(
                    f"{where}: value {value!r} is not text; quote it in the YAML (e.g. '1': 0.5)"
                )
        policy = tuple((v, _positive_epsilon(f"{where}: the ε of {v!r}", e)) for v, e in values.items())
        found = [e for _, e in policy]
        default = _positive_epsilon(f"{where}: default", policy_key.get("default", min(found)))
        lower, upper = min([*found, default]), max([*found, default])
    if col.name == meta.privacy_unit:
        raise InvalidParameter(f"table {table!r}: the ε column {col.name!r} cannot be the privacy unit")
    columns = dict(meta.columns)
    columns[col.name] = replace(col, identifier=True)
    personal = PersonalEpsilon(col.name, lower, upper, policy, default)
    return replace(meta, columns=columns, personal=personal)
