"""SQL engines privdb runs aggregates on. DuckDB is the embedded default."""

from privdb.backends.duckdb import DuckDBBackend

__all__ = ["DuckDBBackend"]
