"""A privdb database: a directory holding the engine's data, the catalog and the budget ledger.

    DIR/data.duckdb     the tables (DuckDB)
    DIR/privdb.sqlite   metadata, analysts, stored answers, budgets and spends (SQLite, WAL)
    DIR/uploads/        a server's uploads while it loads them (emptied when it starts)

(``ledger="postgresql://…"``: the second in PostgreSQL, shared by several hosts). Created on first use,
owner-only (privdb.private_files). The owner loads tables (privdb.catalog.loads: a load across the two
stores, and what a crash left) and grants budgets; analysts only ask DP-SELECTs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from privdb.accounting.ledger import Budget, Ledger
from privdb.accounting.renewal import parse_period, shared_figures
from privdb.accounting.sqlstore import store_for
from privdb.backends.base import WritesTables, is_read_only
from privdb.backends.names import check_name, is_reserved, layout_of
from privdb.backends.urls import open_engine
from privdb.catalog.loads import recover
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.catalog.metadata_file import load_metadata
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.catalog.querylog import LogFilter, LogOptions, log_subject
from privdb.catalog.store import Catalog
from privdb.catalog.values import as_declared
from privdb.errors import DatabaseInUse, InvalidParameter, PrivdbError, UnknownTable
from privdb.inuse import in_use
from privdb.loads import TableLoads
from privdb.lru import LRU
from privdb.private_files import owner_only_umask, private_dir

if TYPE_CHECKING:
    import pandas as pd

    from privdb.backends.base import Engine
    from privdb.backends.duckdb import DuckDBBackend
    from privdb.backends.duckdb_tables import Loaded
    from privdb.mechanisms import RandomSource

__all__ = ["MAX_SHAPES", "Database", "log_subject"]

MAX_SHAPES = 512  # query shapes kept per database (privdb.sql.plan.prepared), least recent dropped first


class Database(TableLoads):
    """Owner-side handle on one database directory."""

    def __init__(self, path: str | Path, *, read_only: bool = False, ledger: str | None = None) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InvalidParameter(f"{str(self.path)!r} is a file; a privdb database is a directory")
        owner_only_umask()  # what DuckDB creates here (its WAL, spill files) too: privdb.private_files
        private_dir(self.path)
        self.name = self.path.resolve().name
        self.read_only = read_only
        self._backend: DuckDBBackend | None = None
        self._backend_lock = threading.Lock()
        self._engines: dict[str, Engine] = {}  # attached engines by URL, opened on first use
        store = store_for(self.path, ledger)  # the directory's SQLite file, or the PostgreSQL URL
        self.catalog, self.ledger = Catalog(store), Ledger(store)
        self.noise_source: RandomSource | None = None  # None: the CSPRNG; tests may inject a seeded one
        self.query_timeout: float | None = None  # seconds an engine query may run (the server sets one)
        # query shapes planned already, kept and checked by privdb.sql.plan.prepared
        self.prepared: LRU[Hashable, object] = LRU(MAX_SHAPES)
        self.load_notes: dict[str, Loaded] = {}  # table → what its last load or append here did
        self.notices: list[str] = []  # for the owner: what opening the data found a crash had left

    def data_version(self) -> int:
        """A number that changes whenever this process changes the data (the only writer of the file while
        it is open): an answer read at one version is not stored at another (privdb.sql.charge)."""
        return 0 if self._backend is None else self._backend.generation

    @property
    def backend(self) -> DuckDBBackend:
        """The engine, opened on first use: granting budgets or reading the log never opens the data, so
        they work while a server holds the DuckDB file (one writer per file)."""
        with self._backend_lock:
            if self._backend is None:
                # optional: DuckDB and sqlglot load with the data: a budget, a grant or the log go without
                from privdb.backends.duckdb import DuckDBBackend

                try:
                    backend = DuckDBBackend(self.path / "data.duckdb", read_only=self.read_only)
                except DatabaseInUse as err:  # say who holds it, and what works meanwhile
                    raise in_use(self.path, err.holder) from None
                try:
                    self.notices += recover(self.catalog, self.ledger, self.name, backend, self.read_only)
                except BaseException:
                    backend.close()  # no half-opened data file left holding DuckDB's lock
                    raise
                self._backend = backend
            return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
        for engine in self._engines.values():
            engine.close()
        self.catalog.close()
        self.ledger.close()

    def release_thread(self) -> None:
        """Close what the calling thread opened (its ledger and catalog connections, its DuckDB cursor):
        a PostgreSQL session's thread calls it as it ends, so nothing held grows with connections. A thread
        that ends without calling it has the same closed by privdb.perthread when Python drops the thread."""
        self.catalog.release_thread()
        self.ledger.release_thread()
        if self._backend is not None:
            self._backend.release_thread()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- tables and metadata (loads and appends: privdb.loads)
    def set_metadata(self, table: str, spec: dict[str, Any]) -> TableMeta:
        self._writable("changing metadata")
        name = self.backend.resolve(table)  # a reserved name is refused (privdb.backends.base.find_table)
        return self._store_metadata(metadata_from_dict(name, spec, self.backend.columns(name)))

    def _recount_units(self) -> None:
        for name in self.backend.tables():
            try:
                layout = layout_of(self.metadata(name))
            except PrivdbError:
                continue  # the statement broke this table's metadata: its queries are refused anyway
            if layout is not None:
                self.backend.write_layout(name, layout)

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise InvalidParameter(
                f"{what} needs write access, but this server opened the data read-only (it runs several "
                "workers): serve with one worker, or stop the server and use `privdb load`"
            )

    def _store_metadata(self, meta: TableMeta) -> TableMeta:
        self.backend.write_layout(meta.name, layout_of(meta))
        self.catalog.set_metadata(meta.name, meta.to_dict())
        return meta

    def owner_sql(self, sql: str) -> pd.DataFrame:
        """The owner's direct access to the engine. After a statement that may write, the per-unit row
        counts of every table with a privacy unit are rebuilt (user-level bounding relies on them) and the
        stored answers dropped (a repeat is answered afresh, on the data as it now is)."""
        if not sql.strip():
            raise InvalidParameter("the SQL statement is empty; write one, e.g. SELECT COUNT(*) FROM people")
        try:
            frame = self.backend.raw(sql, timeout=self.query_timeout)
        except TimeoutError:
            raise InvalidParameter(
                f"the statement ran longer than this server's limit of {self.query_timeout:g} s and was "
                "stopped; run long statements with `privdb sql` while the server is stopped"
            ) from None
        finally:  # also when a later statement failed: the earlier ones may have written
            if not is_read_only(sql):
                self._recount_units()
                for name in self.backend.tables():
                    self.catalog.forget_answers(name)
        return frame

    def metadata(self, table: str) -> TableMeta:
        """The table's metadata (``unknown_table`` with a suggestion if there is no such table)."""
        attached = {n.lower(): n for n in self.catalog.attachments()}
        if table.lower() in attached:
            name = attached[table.lower()]
            engine, source = self.backend_for(name)
            spec = self.catalog.metadata(name)
            return metadata_from_dict(name, spec, as_declared(engine.columns(source), spec))
        name = self.backend.resolve(table)
        spec = self.catalog.metadata(name)
        return metadata_from_dict(name, spec, self.backend.columns(name))

    def table_names(self) -> list[str]:
        """Every table's name, attached ones included, without reading any metadata."""
        names = {*self.backend.tables(), *self.catalog.attachments()}
        return sorted(n for n in names if not is_reserved(n))

    def tables(self) -> list[dict[str, Any]]:
        """Every table with its public metadata (what analysts may know), attached ones included."""
        return [{"name": name} | self.metadata(name).to_dict() for name in self.table_names()]

    # ---- tables that stay in their own engine
    def attach(
        self,
        table: str,
        engine: str,
        source: str | None = None,
        metadata: str | Path | dict[str, Any] | None = None,
    ) -> TableMeta:
        """Register ``table``, kept in another engine (``sqlite:///path/file.db``), with its metadata.

        Queries on it are rewritten once and transpiled to that engine's dialect; only aggregates come
        back. The engine is opened read-only."""
        check_name(table)
        if table.lower() in {t.lower() for t in (*self.backend.tables(), *self.backend.pending_loads())}:
            raise InvalidParameter(f"a table {table!r} is loaded here already; attach under another name")
        backend = self._open_engine(engine)
        found = source or table
        spec = load_metadata(metadata, table) if isinstance(metadata, str | Path) else metadata
        meta = metadata_from_dict(table, spec, backend.columns(found))  # also checks the source exists
        self.catalog.attach(table, engine, found, meta.to_dict())  # one transaction: both or neither
        return meta

    def backend_for(self, table: str) -> tuple[Engine, str]:
        """The engine holding ``table`` and the table's name there."""
        attached = self.catalog.attachments().get(table)
        if attached is None:
            return self.backend, table
        engine = self._open_engine(attached[0])
        name = engine.resolve(attached[1])  # Spark: a view over a Parquet path
        if isinstance(engine, WritesTables):  # what privdb wrote there, if it loaded the table
            engine.adopt_layout(attached[1], self.catalog.layout(table))
        return engine, name

    def _open_engine(self, url: str) -> Engine:
        with self._backend_lock:
            engine = self._engines.get(url)
            if engine is None:
                engine = open_engine(url)
                self._engines[url] = engine
            return engine

    # ---- analysts and budgets
    def grant(
        self,
        analyst: str,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        tables: list[str] | None = None,
        expires_in: float | None = None,
        group: str | None = None,
        query_epsilon: float | None = None,
        query_delta: float | None = None,
    ) -> str:
        """Create (or re-grant) an analyst with a total budget; returns a fresh token (the old one stops
        working). ``tables`` limits what they may query (default: every table); ``expires_in`` is the
        token's life in seconds (default: no expiry); ``group`` makes them a member of a budget group (its
        budget is drawn on too; ``""`` leaves the group). A re-grant changes only what is given: an ε or δ
        left out keeps its current total (a new analyst needs ε; δ defaults to 0). ``query_epsilon`` (and
        ``query_delta``) is the ε a plain aggregate SQL query over a private table is answered at when the
        analyst's session sets none (privdb.sql.public.wrapped: what BI tools send); 0 removes it, None keeps
        what the last grant set."""
        check_name(analyst, "analyst")
        if group and not any(k == "group" and b.analyst == group for k, b in self.ledger.caps(self.name)):
            raise InvalidParameter(
                f"no budget group {group!r}; the owner creates it first: "
                f"privdb budgets --group {group} --epsilon E"
            )
        if epsilon is None or delta is None:
            current = self.ledger.budget(analyst, self.name) if self.catalog.has_analyst(analyst) else None
            if epsilon is None:
                if current is None:
                    raise InvalidParameter(f"a new analyst needs an ε budget: grant {analyst!r} --epsilon E")
                epsilon = float(current.epsilon_total)
            if delta is None:
                delta = float(current.delta_total) if current is not None else 0.0
        if expires_in is not None and not (expires_in > 0 and math.isfinite(expires_in)):
            raise InvalidParameter(f"expires_in must be a positive number of seconds, got {expires_in!r}")
        for table in tables or []:
            check_name(table)
        plain = _plain_sql(self.catalog.plain_sql(analyst), query_epsilon, query_delta, epsilon, delta)
        self.ledger.set_budget(analyst, self.name, epsilon=epsilon, delta=delta)
        if group is not None:
            self.ledger.set_group(analyst, self.name, group or None)
        token = self.catalog.add_analyst(analyst, tables=tables, expires_in=expires_in)
        self.catalog.set_plain_sql(analyst, *plain)
        return token

    def set_shared_budget(
        self,
        *,
        table: str | None = None,
        group: str | None = None,
        epsilon: float,
        delta: float = 0.0,
        renew: str | float | None = None,
    ) -> dict[str, Any]:
        """Set a table's lifetime budget (every analyst's answers about its people draw on it) or a budget
        group's (its members' answers draw on it, besides their own budgets). ``renew`` (``30d``, ``1w``, or
        seconds): it refills every period — a rate, not a lifetime bound (privdb.accounting.renewal)."""
        period = parse_period(renew)
        if (table is None) == (group is None):
            raise InvalidParameter("give a table or a group, not both")
        if table is not None:
            name, kind = self.metadata(table).name, "table"
        else:
            name, kind = check_name(str(group), "group"), "group"
        budget = self.ledger.set_cap(kind, name, self.name, epsilon=epsilon, delta=delta, renew=period)
        return {"kind": kind, "name": name} | shared_figures(
            budget.to_dict(), self.ledger.renewals(self.name).get((kind, name))
        )

    def shared_budgets(self) -> list[dict[str, Any]]:
        """Every table lifetime budget and budget group, with what is drawn and left (and the members)."""
        members = self.ledger.members(self.name)
        return [
            {"kind": kind, "name": b.analyst} | shared_figures(b.to_dict(), window)
            | ({"members": members.get(b.analyst, [])} if kind == "group" else {})
            for kind, b, window in self.ledger.caps_with_windows(self.name)
        ]  # fmt: skip

    def class_losses(self) -> list[dict[str, Any]]:
        """Personalised tables: the ε each class of units has lost over every answer (docs/proofs/
        personalised.md), beside the class's own ε where the metadata gives one."""
        out = []
        for (table, name), lost in self.ledger.class_losses(self.name).items():
            out.append({"table": table, "class": name, "epsilon_lost": float(lost)})
        return out

    def revoke(self, analyst: str) -> None:
        """Revoke the analyst's token at once (their budget and log stay; `grant` issues a new token)."""
        if not self.catalog.revoke_analyst(analyst):
            raise InvalidParameter(f"no analyst {analyst!r}; `privdb grant` creates analysts")

    def visible_tables(self, analyst: str | None) -> list[dict[str, Any]]:
        """The tables an analyst may query, with their public metadata (every table for the owner)."""
        if analyst is None:
            return self.tables()
        allowed = self.catalog.analyst_tables(analyst)
        scope = None if allowed is None else {t.lower() for t in allowed}
        out = []
        for name in self.table_names():  # only the tables they may query are described
            if scope is not None and name.lower() not in scope:
                continue
            try:
                meta = self.metadata(name)
            except UnknownTable:  # an attached engine lost the source: its catalogue is not theirs to see
                continue
            out.append({"name": name} | meta.to_dict())
        return out

    def log(self, analyst: str | None = None, **options: Unpack[LogOptions]) -> list[dict[str, Any]]:
        """Who asked what, when, what it cost and how it ended: the ledger's spends (answered, or charged
        and failed; one whose process died, or is running it: ``interrupted``) and the
        refused queries, in time order. ``analyst=None``: everyone's (the owner's view). The filters
        (:class:`privdb.catalog.querylog.LogFilter`) and ``limit``/``offset`` paging run in SQL."""
        limit, offset = options.get("limit"), options.get("offset", 0)
        if (limit is not None and not 1 <= limit < 2**63) or not 0 <= offset < 2**63:  # SQLite's integers
            raise InvalidParameter(f"limit must be ≥ 1 and offset ≥ 0, got limit={limit}, offset={offset}")
        rows = self.catalog.log(self.name, LogFilter.of(analyst, options), limit=limit, offset=offset)
        return [row.to_dict() for row in rows]

    def log_count(self, analyst: str | None = None, **options: Unpack[LogOptions]) -> int:
        """How many entries :meth:`log` has with these filters, whatever the page (for paging)."""
        return self.catalog.log_count(self.name, LogFilter.of(analyst, options))

    def budget(self, analyst: str) -> Budget:
        return self.ledger.budget(analyst, self.name)

    def budget_of(self, analyst: str) -> Budget:
        """An analyst's budget as the owner asks for it: an unknown name is refused, not shown as 0 of 0."""
        if self.ledger.has_budget(analyst, self.name):
            return self.budget(analyst)
        raise InvalidParameter(f"no analyst {analyst!r} on this database; `privdb grant` creates analysts")

    def evaluate_domain(self, key_sql: str, column: ColumnMeta, values: list[Any]) -> tuple[Any, ...] | None:
        """Map *public* column values through a key expression (never touches the data)."""
        from privdb.backends.duckdb_open import map_values  # optional: DuckDB, as in backend

        return map_values(key_sql, column.name, values)


def _plain_sql(
    current: tuple[float | None, float | None],
    epsilon: float | None,
    delta: float | None,
    total_epsilon: float,
    total_delta: float,
) -> tuple[float | None, float | None]:
    """A grant's default (ε, δ) for plain aggregate SQL: what is given (ε 0 removes both), else what the
    last grant set; each checked against the analyst's total."""
    if epsilon is None and delta is None:
        return current
    eps = current[0] if epsilon is None else epsilon
    if eps is None:
        raise InvalidParameter("query_delta needs a query_epsilon: grant … --query-epsilon E --query-delta D")
    if eps == 0:
        return None, None
    if not (0 < eps <= total_epsilon and math.isfinite(eps)):
        raise InvalidParameter(
            f"query_epsilon (the ε each plain aggregate is answered at) is a number in "
            f"(0, {total_epsilon:g}] (the analyst's total ε), got {eps!r}; 0 removes it"
        )
    dlt = current[1] if delta is None else (delta or None)
    if dlt is not None and not (0 < dlt <= total_delta):
        raise InvalidParameter(
            f"query_delta is a number in (0, {total_delta:g}] (the analyst's total δ), got {dlt!r}"
        )
    return float(eps), None if dlt is None else float(dlt)
