"""What a column's declared public values say of its type: one rule shared by the expression language
(privdb.sql.front.expr.types) and the database's reading of attached engines' types (:func:`as_declared`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from privdb.catalog.metadata import StoredType

__all__ = ["all_numbers", "as_declared"]


def all_numbers(values: Iterable[Any]) -> bool:
    """Whether every value is a number (booleans are not): a category of such values is stored as numbers
    and read by the language as a number."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def as_declared(columns: dict[str, str], spec: dict[str, Any] | None) -> dict[str, str]:
    """An attached table's engine types for a query: a column typed by its values (StoredType, checked
    against the metadata when the owner attached it) takes its declared type, so whether an analyst's query
    is refused never depends on the values a column holds now (the engine, SQLite, never fails on a value of
    another type: it compares and sums them by its own rules)."""
    declared = {str(k).lower(): v for k, v in ((spec or {}).get("columns") or {}).items()}
    out: dict[str, str] = {}
    for name, kind in columns.items():
        facts = declared.get(name.lower())
        if isinstance(kind, StoredType) and isinstance(facts, dict) and facts.get("type"):
            typed = str(facts["type"]).lower()
            if typed == "category":  # stored as numbers exactly when the language reads it as a number
                typed = "float" if all_numbers(facts.get("values") or ()) else "text"
            out[name] = typed
        else:
            out[name] = kind
    return out
