"""An owner's files into a database's tables: a load (a table created or replaced), an append (rows added
to one), and what the owner is told after either (the row count, where the data strays from the metadata,
the lines left out, the columns of mostly numbers read as text, and the rows ``max_contributions`` leaves out
of every answer). The owner's own checks: none of it is in the metadata analysts see.

A mixin of :class:`privdb.database.Database`, which holds the engine, the catalog and the ledger.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privdb.accounting.ledger import Ledger
from privdb.backends.names import HIDDEN_PREFIX, check_name, layout_of, quote_table, reserved_column
from privdb.catalog.conformance import Finding, check_conformance
from privdb.catalog.contributions import contributions
from privdb.catalog.loads import load_table
from privdb.catalog.metadata import TableMeta
from privdb.catalog.metadata_file import load_budgets, load_metadata
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.catalog.reading import ReadOptions
from privdb.catalog.store import Catalog
from privdb.catalog.typed import append_columns, declared_types, engine_type
from privdb.errors import InvalidParameter

if TYPE_CHECKING:
    import pandas as pd

    from privdb.backends.base import Engine
    from privdb.backends.duckdb import DuckDBBackend
    from privdb.backends.duckdb_tables import Loaded

__all__ = ["TableLoads"]


class TableLoads:
    """The loading methods of a :class:`privdb.database.Database` (whose attributes they use)."""

    name: str
    catalog: Catalog
    ledger: Ledger
    load_notes: dict[str, Loaded]  # table → what its last load or append here did

    if TYPE_CHECKING:  # Database's own

        @property
        def backend(self) -> DuckDBBackend: ...

        def metadata(self, table: str) -> TableMeta: ...

        def backend_for(self, table: str) -> tuple[Engine, str]: ...

        def _writable(self, what: str) -> None: ...

    def load(
        self,
        table: str,
        source: str | Path,
        metadata: str | Path | dict[str, Any] | None = None,
        options: ReadOptions | None = None,
    ) -> TableMeta:
        """Load a file (CSV, Parquet, JSON, Excel; read as ``options`` say) as ``table`` with validated
        privacy metadata. The old table stays until the new one is complete and checked (the metadata against
        its columns, the hidden per-unit counts built): a refused or interrupted load changes nothing. A CSV's
        columns the metadata declares numbers are read as numbers: a value that is not one is a bad line."""
        self._writable("loading a table")
        check_name(table)
        spec = load_metadata(metadata, table) if isinstance(metadata, str | Path) else metadata
        budgets = load_budgets(metadata, table) if isinstance(metadata, str | Path) else []
        options = replace(options or ReadOptions(), declared=declared_types(spec))
        # the table commits marked unfinished with its metadata and budgets, which the catalog and ledger
        # then store (dropping the stored answers) before the mark is lifted: privdb.catalog.loads
        stored, loaded = load_table(
            self.catalog, self.ledger, self.name, self.backend, table, source, spec, budgets, options
        )
        self.load_notes[stored.name] = loaded
        return stored

    def check_load(self, table: str, spec: dict[str, Any] | None, columns: dict[str, str]) -> TableMeta:
        """Before any data is sent (a load over a server): whether a file with ``columns`` (name → DuckDB
        type, as the owner's machine read it) could be loaded as ``table`` under ``spec``. The load checks
        it all again on the data itself."""
        self._writable("loading a table")
        check_name(table)
        clash = [c for c in columns if c.startswith(HIDDEN_PREFIX)]
        if clash:
            raise reserved_column(clash[0])
        return metadata_from_dict(table, spec, {c: engine_type(t) for c, t in columns.items()})

    def check_append(self, table: str, columns: Collection[str] | None = None) -> TableMeta:
        """Whether rows can be added to ``table`` (loaded here, not attached, the database writable) and,
        given the names of the file's ``columns``, whether they are the table's (their types are checked on
        the data: the file is read as the table's types); its metadata."""
        self._writable("adding rows to a table")
        if table.lower() in {n.lower() for n in self.catalog.attachments()}:
            raise InvalidParameter(
                f"table {table!r} stays in its own engine (privdb attach): add the rows there"
            )
        meta = self.metadata(table)  # unknown_table, with a suggestion, if there is none
        if columns is not None:
            stored = self.backend.columns(meta.name)
            append_columns(dict.fromkeys(columns, ""), stored, meta.name, types=False)
        return meta

    def stored_types(self, table: str) -> dict[str, str]:
        """The DuckDB type of each of a loaded table's columns (its hidden ones left out): what a file added
        to it is read as."""
        return self.backend.stored_types(table)

    def append(self, table: str, source: str | Path, options: ReadOptions | None = None) -> TableMeta:
        """Add a file's rows to ``table``, atomically: the file must have the table's columns (any order),
        read as the table's types (a value that does not fit is a bad line, named, or left out with
        ``skip_bad_lines``); the per-unit row counts are brought up to date in the same transaction, and
        the stored answers about the table are dropped. A refused or failed append changes nothing. The
        table keeps its metadata; its conformance is checked after, as after a load. The file is staged as
        a load's is (a temporary view of a connection of its own). No unfinished-load mark is needed: the
        catalog holds the table's metadata already and the append does not change it, so the new rows,
        committed in one transaction, are never visible without matching metadata."""
        meta = self.check_append(table)
        self.catalog.forget_answers(meta.name)  # none stored from now on outlives the change (sql/charge.py)
        loaded = self.backend.append(meta.name, source, options, layout_of(meta))
        self.catalog.forget_answers(meta.name)
        self.load_notes[meta.name] = loaded
        return meta

    def conformance(self, table: str) -> list[Finding]:
        """For the owner: where the table's data strays from its metadata (values outside a declared domain,
        the share clipped at each bound). Reads the data; never shown to analysts."""
        meta = self.metadata(table)
        if meta.name.lower() not in {n.lower() for n in self.catalog.attachments()}:
            return check_conformance(self.backend.raw, quote_table(meta.name), meta)
        engine, source = self.backend_for(meta.name)

        def run(sql: str) -> pd.DataFrame:
            import sqlglot  # to write the checks in an attached engine's dialect

            return engine.fetch(sqlglot.transpile(sql, read="duckdb", write=engine.dialect)[0])

        return check_conformance(run, quote_table(source), meta)

    def loaded(self, meta: TableMeta) -> dict[str, Any]:
        """What the owner is told after a load or an append: the metadata, the row count, the conformance
        findings, and when there are any: the CSV lines left out as malformed (``skipped_lines``), the rows
        an append added (``appended``), the text columns of mostly numbers (``mixed_columns``), and what
        ``max_contributions`` leaves out (``contributions``, for a table with a privacy unit)."""
        rows = int(self.backend.raw(f"SELECT COUNT(*) AS n FROM {quote_table(meta.name)}")["n"].iloc[0])
        findings = [f.to_dict() | {"message": f.message()} for f in self.conformance(meta.name)]
        out: dict[str, Any] = {"name": meta.name} | meta.to_dict() | {"rows": rows, "conformance": findings}
        note = self.load_notes.get(meta.name)
        if note is not None and note.skipped:
            out["skipped_lines"] = note.skipped
        if note is not None and note.appended:
            out["appended"] = note.added
        if note is not None and note.mixed:
            out["mixed_columns"] = [m.to_dict() | {"message": m.message()} for m in note.mixed]
        bound = contributions(self.backend.raw, quote_table(meta.name), meta)
        if bound is not None:
            out["contributions"] = bound.to_dict() | {"message": bound.message(meta.name)}
        return out
