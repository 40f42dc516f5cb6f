"""The catalog's durable state beside the ledger: table metadata, analysts and their tokens, stored answers.

Tokens are stored as SHA-256 hashes only. Stored answers make a repeated query (same analyst, same
normalised text) return the same noisy answer at no cost, so repetition cannot average the noise away.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Catalog"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS tables (name TEXT PRIMARY KEY, metadata TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS analysts (name TEXT PRIMARY KEY, token_sha256 TEXT NOT NULL, created REAL)",
    "CREATE TABLE IF NOT EXISTS answers (analyst TEXT NOT NULL, query TEXT NOT NULL, tbl TEXT NOT NULL,"
    " result TEXT NOT NULL, created REAL, PRIMARY KEY (analyst, query))",
)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Catalog:
    """SQLite tables of one database directory (the same file as the ledger, in WAL mode)."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), isolation_level=None, timeout=60.0, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL, not FULL: in WAL mode a commit still survives a crash of privdb, and the next FULL commit
        # (the ledger's, on every spend) makes it durable against power loss too; a stored answer lost to
        # power loss only means the analyst pays again for that repeat, never that a spend goes missing.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            for statement in _SCHEMA:
                self._conn.execute(statement)

    def close(self) -> None:
        self._conn.close()

    # ---- tables
    def set_metadata(self, table: str, metadata: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO tables VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET metadata = excluded.metadata",
                (table, json.dumps(metadata)),
            )
            # answers about a reloaded table are stale
            self._conn.execute("DELETE FROM answers WHERE lower(tbl) = lower(?)", (table,))

    def metadata(self, table: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT metadata FROM tables WHERE lower(name) = lower(?)", (table,)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    # ---- analysts
    def add_analyst(self, name: str) -> str:
        """Create the analyst, or rotate their token; returns the new token (shown once)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._conn.execute(
                "INSERT INTO analysts VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                "token_sha256 = excluded.token_sha256",
                (name, _hash(token), time.time()),
            )
        return token

    def has_analyst(self, name: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM analysts WHERE name = ?", (name,)).fetchone() is not None

    def analyst_for_token(self, token: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT name FROM analysts WHERE token_sha256 = ?", (_hash(token),)
            ).fetchone()
        return None if row is None else str(row[0])

    def analysts(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT name FROM analysts ORDER BY name")]

    # ---- stored answers
    def stored_answer(self, analyst: str, query: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT result FROM answers WHERE analyst = ? AND query = ?", (analyst, query)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def store_answer(self, analyst: str, query: str, table: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                (analyst, query, table, json.dumps(result), time.time()),
            )
