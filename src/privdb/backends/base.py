"""What the query engine needs from an engine: a dialect for sqlglot, names and types, bind, fetch."""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd

__all__ = ["Engine"]


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
