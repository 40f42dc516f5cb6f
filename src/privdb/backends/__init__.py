"""SQL engines privdb runs aggregates on. DuckDB is the embedded default.

``DuckDBBackend`` is imported on first use, so that a light module of the package (``names``, ``urls``)
does not load DuckDB: a command that never opens the data (a budget, a grant, the log) goes without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privdb.backends.duckdb import DuckDBBackend

__all__ = ["DuckDBBackend"]


def __getattr__(name: str) -> Any:
    if name == "DuckDBBackend":
        return importlib.import_module("privdb.backends.duckdb").DuckDBBackend
    raise AttributeError(f"module 'privdb.backends' has no attribute {name!r}")
