"""Read a prepared query's statistics from its engine: the statistics query and the queries of its order
statistics, distinct counts and truncation estimate, all under one deadline (the server's limit bounds the
whole query)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from privdb.backends.base import ReadsTogether
from privdb.backends.duckdb import DuckDBBackend
from privdb.database import Database
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Read", "Statistics", "reader"]

# the engine's result of the statistics query: a DataFrame, or column name → values (DuckDB's fetch_columns);
# written as text, so that pandas is imported where a frame is made (DuckDB's .df()), not by the query path
Statistics: TypeAlias = "pd.DataFrame | Mapping[str, list[Any]]"
Read: TypeAlias = "tuple[Statistics | None, dict[str, pd.DataFrame]]"
STATISTICS = "\0statistics"  # the statistics query's name among the reads (no histogram is named so)


def reader(db: Database, plan: Plan | None, base: str, sql: str) -> Callable[[], Read]:
    """The read of a prepared query (``plan`` None: a record release, its rows only) on the engine holding
    ``base``. Its other queries are bound now, before anything is spent; nothing is read until it is
    called."""
    histograms = histogram_queries(db, plan) if plan is not None else {}
    backend, _ = db.backend_for(base)

    def read() -> Read:
        deadline = None if db.query_timeout is None else time.monotonic() + db.query_timeout

        def left() -> float | None:
            if deadline is None:
                return None
            if (remaining := deadline - time.monotonic()) <= 0:
                raise TimeoutError("the query's engine reads ran past the limit")
            return remaining

        frame: Statistics | None = None
        if histograms and isinstance(backend, ReadsTogether):  # Spark: all of them side by side
            queries = histograms | ({STATISTICS: sql} if sql else {})
            read = backend.fetch_all(queries, timeout=left())
            return read.pop(STATISTICS, None), read
        if sql and isinstance(backend, DuckDBBackend) and plan is not None:
            frame = backend.fetch_columns(sql, timeout=left())  # the noise step reads Python values
        elif sql:
            frame = backend.fetch(sql, timeout=left())
        return frame, {name: backend.fetch(h, timeout=left()) for name, h in histograms.items()}

    return read
