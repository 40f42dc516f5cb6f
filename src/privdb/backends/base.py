"""What the query engine needs from an engine: a dialect for sqlglot, names and types, bind, fetch."""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd

from privdb.errors import UnknownTable
from privdb.sql.suggest import did_you_mean

__all__ = ["Engine", "find_table"]


def find_table(table: str, names: list[str], where: str = "") -> str:
    """The stored name of ``table`` among ``names`` (case-insensitive), or ``unknown_table`` naming
    ``where`` it was looked for, with a suggestion."""
    for name in names:
        if name.lower() == table.lower():
            return name
    raise UnknownTable(f"{where}no table {table!r}{did_you_mean(table, names)}")


class Engine(Protocol):
    """An SQL engine privdb sends rewritten aggregates to (DuckDB, SQLite, …)."""

    dialect: str

    def tables(self) -> list[str]: ...

    def resolve(self, table: str) -> str: ...

    def columns(self, table: str) -> dict[str, str]: ...

    def unit_rows(self, table: str, unit: str) -> str | None: ...

    def bind(self, sql: str) -> list[str]: ...

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame: ...

    def close(self) -> None: ...
