"""What the query engine needs from an engine: a dialect for sqlglot, names and types, bind, fetch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from privdb.backends.names import RESERVED_PREFIX, is_reserved
from privdb.errors import Forbidden, UnknownTable
from privdb.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Engine", "WritesTables", "find_table", "is_read_only", "not_granted"]


def find_table(
    table: str, names: Iterable[str], where: str = "", visible: Iterable[str] | None = None
) -> str:
    """The stored name of ``table`` among ``names`` (case-insensitive), or ``unknown_table`` naming
    ``where`` it was looked for, with a suggestion.

    ``visible``: the tables the asker may query (a scoped analyst's grant), or None for all of ``names`` (the
    owner, an analyst of every table). With it, only names that are also visible are found or suggested, and
    any other name — outside the grant or granted but absent, existing or not, a typo or not — gets
    :func:`not_granted`'s one refusal: nothing outside the grant is named, nor is its existence told.

    A name beginning ``__privdb`` never names a table (privdb.backends.names): refused as such, for
    everyone alike, and never found or suggested even if an engine holds one."""
    if is_reserved(table):
        raise UnknownTable(
            f"no table {table!r}: names beginning {RESERVED_PREFIX!r} are privdb's own and never name a table"
        )
    known = [name for name in names if not is_reserved(name)]
    if visible is not None:
        scope = {v.lower() for v in visible}
        known = [name for name in known if name.lower() in scope]
    for name in known:
        if name.lower() == table.lower():
            return name
    if visible is not None:
        raise not_granted(table, known)
    raise UnknownTable(f"{where}no table {table!r}{did_you_mean(table, known)}")


def not_granted(table: str, visible: list[str]) -> Forbidden:
    """The refusal of a table a scoped analyst may not query, the same whether or not it exists: it names
    only ``table`` (as they wrote it) and suggests only from ``visible``, the tables they may query."""
    return Forbidden(
        f"table {table!r} is not among the tables you may query{did_you_mean(table, visible)}; the owner "
        "grants tables with `privdb grant … --tables`"
    )


class Engine(Protocol):
    """An SQL engine privdb sends rewritten aggregates to (DuckDB, SQLite, …)."""

    dialect: str

    def tables(self) -> list[str]: ...

    def resolve(self, table: str) -> str: ...

    def columns(self, table: str) -> dict[str, str]: ...

    def unit_rows(self, table: str, unit: str) -> str | None: ...

    def unit_choice(self, table: str, unit: str, column: str) -> str | None: ...

    def bind(self, sql: str) -> list[str]: ...

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame: ...

    def close(self) -> None: ...


@runtime_checkable
class WritesTables(Protocol):
    """An attached engine privdb can also write tables into (Spark: privdb.backends.spark_layout), with
    the layout it wrote kept beside the table in the catalog and handed back here on each use."""

    @property
    def session(self) -> Any: ...

    def adopt_layout(self, source: str, stamp: dict[str, Any] | None) -> None: ...


@runtime_checkable
class ReadsTogether(Protocol):
    """An engine that runs a query's several reads side by side (Spark: a job group per query, each from
    its own thread), all or nothing: one failing, or an interrupt, cancels the others."""

    def fetch_all(
        self, queries: dict[str, str], *, timeout: float | None = None
    ) -> dict[str, pd.DataFrame]: ...


def is_read_only(sql: str) -> bool:
    """Whether ``sql`` is nothing but queries (no statement that could change a table)."""
    import sqlglot  # the parser where the owner's SQL is read, not where an engine is named
    from sqlglot import exp

    try:
        statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return False
    return all(isinstance(s, exp.Query | exp.Describe | exp.Show) for s in statements if s is not None)
