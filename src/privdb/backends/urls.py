"""Engines for attached tables, opened from their URLs."""

from __future__ import annotations

from privdb.backends.base import Engine
from privdb.errors import InvalidParameter

__all__ = ["open_engine"]


def open_engine(url: str) -> Engine:
    """An engine from its URL: ``sqlite:///relative/file.db`` or ``sqlite:////absolute/file.db``
    ``postgresql://user@host:port/dbname``, ``spark://local[2]`` or ``spark://HOST:7077``."""
    if url.startswith("sqlite:///"):
        from privdb.backends.sqlite import SQLiteBackend

        return SQLiteBackend(url.removeprefix("sqlite:///"))  # sqlite:////abs/path or sqlite:///rel/path
    if url.startswith(("postgresql://", "postgres://")):
        from privdb.backends.postgres import PostgresBackend

        return PostgresBackend(url)
    if url.startswith("spark://"):
        from privdb.backends.spark import SparkBackend

        return SparkBackend(url)
    raise InvalidParameter(
        f"unsupported engine URL {url!r}: use sqlite:////abs/path.db (absolute), sqlite:///relative.db, "
        "postgresql://user@host:port/dbname or spark://local[2] (or spark://HOST:7077)"
    )
