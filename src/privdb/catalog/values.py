"""What a column's declared public values say of its type: one rule shared by the expression language
(privdb.sql.front.expr.types) and the database's reading of attached engines' types (privdb.database)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["all_numbers"]


def all_numbers(values: Iterable[Any]) -> bool:
    """Whether every value is a number (booleans are not): a category of such values is stored as numbers
    and read by the language as a number."""
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
