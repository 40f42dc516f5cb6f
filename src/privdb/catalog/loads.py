"""A load across two stores, and what a crash leaves of one.

A loaded table lives in DuckDB, its metadata and budgets in the catalog and ledger (SQLite or PostgreSQL):
two stores that cannot commit together. So the table commits first, marked as an unfinished load that
holds its metadata and budgets (privdb.backends.duckdb_tables), and is never listed nor queried while
marked; then :func:`finish_load` stores the metadata (synced) and budgets, and lifts the mark. A process
killed at any step leaves the old table with its metadata, or the new rows marked — never the new rows
under the old metadata, nor under none (a table without metadata would be read as one row per person,
without bounds).

:func:`recover` runs whenever the data is opened for writing (no other process can be loading then: DuckDB
lets one writer hold the file): it finishes each marked load from its mark, drops the staging views an
earlier privdb left in the data file (it staged files as lasting views; privdb.catalog.files now keeps them
temporary), and names any table with privdb's reserved prefix for the owner to drop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privdb.accounting.ledger import Ledger
from privdb.accounting.renewal import parse_period
from privdb.backends.names import RESERVED_PREFIX, Layout, layout_of
from privdb.catalog.metadata import TableMeta
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.catalog.reading import ReadOptions
from privdb.catalog.store import Catalog
from privdb.crashpoint import crash_point
from privdb.errors import PrivdbError

if TYPE_CHECKING:
    from privdb.backends.duckdb import DuckDBBackend
    from privdb.backends.duckdb_tables import Loaded

__all__ = ["Budgets", "finish_load", "load_table", "recover"]

Budgets = list[tuple[str, str, float, float, str | float | None]]  # privdb.catalog.metadata_file.load_budgets


def load_table(
    catalog: Catalog,
    ledger: Ledger,
    database: str,
    backend: DuckDBBackend,
    table: str,
    source: str | Path,
    spec: dict[str, Any] | None,
    budgets: Budgets,
    options: ReadOptions | None,
) -> tuple[TableMeta, Loaded]:
    """Load ``source`` as ``table`` with its metadata ``spec`` (checked against the new columns inside the
    load's transaction) and ``budgets``, and finish the load; the metadata stored and what the load did
    (rows, lines skipped, columns of mostly numbers: privdb.backends.duckdb_tables.Loaded)."""
    checked: list[TableMeta] = []

    def check(columns: dict[str, str]) -> Layout | None:
        checked.append(metadata_from_dict(table, spec, columns))
        return layout_of(checked[-1])

    def record() -> str:  # what the table commits with, to finish the load from
        return json.dumps({"metadata": checked[-1].to_dict(), "budgets": budgets})

    loaded = backend.load(table, source, options, check, record)
    stored = checked[-1]
    finish_load(catalog, ledger, database, backend, stored.name, record())
    return stored, loaded


def finish_load(
    catalog: Catalog, ledger: Ledger, database: str, backend: DuckDBBackend, table: str, record: str
) -> None:
    """Store a committed load's metadata and budgets (``record``, the JSON its table committed with), then
    lift its mark: from then on analysts see it."""
    found: dict[str, Any] = json.loads(record)
    catalog.set_metadata(table, found["metadata"], durable=True)
    for kind, name, epsilon, delta, renew in found["budgets"]:  # the metadata file's: this table's, groups'
        ledger.set_cap(
            kind, table if kind == "table" else name, database, epsilon=epsilon, delta=delta,
            renew=parse_period(renew),
        )  # fmt: skip
    crash_point("metadata-written")
    backend.finish_load(table)


def recover(
    catalog: Catalog, ledger: Ledger, database: str, backend: DuckDBBackend, read_only: bool
) -> list[str]:
    """Put right what a crash left in the data file (module doc); read-only, only tell. Notices for the
    owner, one a finding."""
    if read_only:
        return [
            f"the load of table {table!r} was interrupted; it stays hidden until privdb opens the data for "
            "writing (a server with one worker, or privdb sql --db) and finishes it"
            for table in backend.pending_loads()
        ]
    views, reserved = backend.clear_leftovers()
    notices = [
        f"dropped the view {view!r}, a staging view a crashed load of an earlier privdb left behind"
        for view in views
    ]
    for table, record in backend.pending_loads().items():
        try:
            finish_load(catalog, ledger, database, backend, table, record)
        except (PrivdbError, ValueError, KeyError, TypeError) as err:
            notices.append(
                f"the load of table {table!r} was interrupted and cannot be finished ({err}); it stays "
                "hidden from analysts: load it again"
            )
            continue
        notices.append(f"finished the load of table {table!r} that a crash had interrupted")
    notices += [
        f"the data file holds a table {table!r}: names beginning {RESERVED_PREFIX!r} are privdb's own, so "
        f"it is never listed nor queried; drop it: privdb sql --db DIR 'DROP TABLE \"{table}\"'"
        for table in reserved
    ]
    return notices
