"""A privdb database: a directory holding the engine's data, the catalog and the budget ledger.

    DIR/data.duckdb     the tables (DuckDB)
    DIR/privdb.sqlite   metadata, analysts, stored answers, budgets and spends (SQLite, WAL)

Created on first use. The owner loads tables and grants budgets; analysts only ask DP-SELECTs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import sqlglot
from sqlglot import exp

from privdb.accounting.ledger import Budget, Ledger
from privdb.backends.duckdb import DuckDBBackend, check_name
from privdb.catalog.metadata import ColumnMeta, TableMeta, load_metadata, metadata_from_dict
from privdb.catalog.store import Catalog
from privdb.errors import InvalidParameter, PrivdbError
from privdb.mechanisms import RandomSource

__all__ = ["Database"]


class Database:
    """Owner-side handle on one database directory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InvalidParameter(f"{str(self.path)!r} is a file; a privdb database is a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        self.name = self.path.resolve().name
        self.backend = DuckDBBackend(self.path / "data.duckdb")
        self.catalog = Catalog(self.path / "privdb.sqlite")
        self.ledger = Ledger(self.path / "privdb.sqlite")
        self.noise_source: RandomSource | None = None  # None: the CSPRNG; tests may inject a seeded one

    def close(self) -> None:
        self.backend.close()
        self.catalog.close()
        self.ledger.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- tables and metadata
    def load(
        self, table: str, source: str | Path, metadata: str | Path | dict[str, Any] | None = None
    ) -> TableMeta:
        """Load a CSV or Parquet file as ``table`` with validated privacy metadata."""
        check_name(table)
        spec = load_metadata(metadata, table) if isinstance(metadata, str | Path) else metadata
        self.backend.load(table, source)
        try:
            meta = metadata_from_dict(table, spec, self.backend.columns(table))
        except Exception:
            self.backend.raw(f'DROP TABLE IF EXISTS "{table}"')
            raise
        return self._store_metadata(meta)

    def set_metadata(self, table: str, spec: dict[str, Any]) -> TableMeta:
        name = self.backend.resolve(table)
        return self._store_metadata(metadata_from_dict(name, spec, self.backend.columns(name)))

    def _store_metadata(self, meta: TableMeta) -> TableMeta:
        self.backend.count_unit_rows(meta.name, meta.privacy_unit)
        self.catalog.set_metadata(meta.name, meta.to_dict())
        return meta

    def owner_sql(self, sql: str) -> pd.DataFrame:
        """The owner's direct access to the engine. After a statement that may write, the per-unit row
        counts of every table with a privacy unit are rebuilt (user-level bounding relies on them)."""
        frame = self.backend.raw(sql)
        if not _read_only(sql):
            for name in self.backend.tables():
                try:
                    unit = self.metadata(name).privacy_unit
                except PrivdbError:
                    continue  # the statement broke this table's metadata: its queries are refused anyway
                if unit is not None:
                    self.backend.count_unit_rows(name, unit)
        return frame

    def metadata(self, table: str) -> TableMeta:
        """The table's metadata (``unknown_table`` with a suggestion if there is no such table)."""
        name = self.backend.resolve(table)
        spec = self.catalog.metadata(name)
        return metadata_from_dict(name, spec, self.backend.columns(name))

    def tables(self) -> list[dict[str, Any]]:
        """Every table with its public metadata (what analysts may know)."""
        out = []
        for name in self.backend.tables():
            meta = self.metadata(name)
            out.append({"name": name} | meta.to_dict())
        return out

    # ---- analysts and budgets
    def grant(self, analyst: str, *, epsilon: float, delta: float = 0.0) -> str:
        """Create (or re-grant) an analyst with a total budget; returns a fresh token."""
        check_name(analyst, "analyst")
        self.ledger.set_budget(analyst, self.name, epsilon=epsilon, delta=delta)
        return self.catalog.add_analyst(analyst)

    def budget(self, analyst: str) -> Budget:
        return self.ledger.budget(analyst, self.name)

    def evaluate_domain(self, key_sql: str, column: ColumnMeta, values: list[Any]) -> tuple[Any, ...] | None:
        """Map *public* column values through a key expression (never touches the data)."""
        con = duckdb.connect(":memory:")
        try:
            con.execute(f'CREATE TABLE v AS SELECT UNNEST(?) AS "{column.name}"', [values])
            rows = con.execute(f"SELECT DISTINCT {key_sql} AS k FROM v ORDER BY 1 NULLS LAST").fetchall()
        except duckdb.Error:
            return None  # not evaluable on the public values: keys go through the noisy threshold
        finally:
            con.close()
        return tuple(r[0] for r in rows)


def _read_only(sql: str) -> bool:
    """Whether ``sql`` is nothing but queries (no statement that could change a table)."""
    try:
        statements = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return False
    return all(isinstance(s, exp.Query | exp.Describe | exp.Show) for s in statements if s is not None)
