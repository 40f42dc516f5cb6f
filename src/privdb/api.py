"""The Python API: ``privdb.connect(DIR, analyst=…)`` for analysts, ``privdb.connect(DIR)`` for the owner.

Both return a :class:`Connection` with the same query methods; owner-only methods (``load``, ``grant``,
``owner_sql``) refuse analysts with ``raw_access_denied``. ``connect("http://…", token=…)`` returns a
:class:`privdb.client.RemoteConnection` with the same methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack, overload

from privdb.catalog.conformance import Finding
from privdb.catalog.metadata import TableMeta
from privdb.catalog.querylog import LogOptions
from privdb.catalog.reading import FileFormat, ReadOptions
from privdb.catalog.typed import APPEND_KEEPS_METADATA
from privdb.database import Database, log_subject
from privdb.errors import InvalidParameter, RawAccessDenied

if TYPE_CHECKING:
    import pandas as pd

    from privdb.client import RemoteConnection
    from privdb.result import Result
    from privdb.sql.public.wrapped import Session

Spec = str | Path | dict[str, Any] | None  # privacy metadata: a YAML file or its dict

__all__ = ["Connection", "connect"]


class Connection:
    """A session on one database, as an analyst (query access) or as its owner (direct access)."""

    def __init__(self, db: Database, analyst: str | None) -> None:
        self._db = db
        self.analyst = analyst

    @property
    def is_owner(self) -> bool:
        return self.analyst is None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- analysts (and the owner, for checking what analysts see)
    def sql(
        self, query: str, session: Session | None = None, parameters: Mapping[str, Any] | None = None
    ) -> Result:
        """Answer a DP-SELECT, paid from this analyst's budget (``session``: settings for plain SQL
        around DP queries, e.g. the ε plain aggregates are answered at; privdb.sql.public.wrapped;
        ``parameters``: the values of its ``@name`` parameters)."""
        if self.analyst is None:
            raise RawAccessDenied(
                "the owner's connection has no budget; connect as an analyst "
                "(privdb.connect(path, analyst=…)) for DP answers, or use owner_sql for raw SQL"
            )
        # optional: the SQL engine (sqlglot, NumPy, DuckDB) loads for a query, not for a budget or a grant
        from privdb.sql import engine

        return engine.run(self._db, self.analyst, query, session, parameters)

    def explain(self, query: str) -> dict[str, Any]:
        """The plan and cost of a DP-SELECT, without reading data or spending budget."""
        from privdb.sql import engine  # optional: as in sql

        return engine.explain(self._db, query, self.analyst)

    def budget(self) -> dict[str, Any]:
        if self.analyst is None:
            raise InvalidParameter("the owner has no budget; ask for an analyst's with budget_of(name)")
        return self._db.budget(self.analyst).to_dict()

    def tables(self) -> list[dict[str, Any]]:
        """Tables with their public metadata (bounds, key domains, privacy unit): an analyst's, those
        granted to them."""
        return self._db.visible_tables(self.analyst)

    def log(self, *, analyst: str | None = None, **options: Unpack[LogOptions]) -> list[dict[str, Any]]:
        """Who asked what and what it cost, in time order (``newest_first``: latest first): everyone's for
        the owner (``analyst`` picks one), an analyst's own (naming another is ``forbidden``). ``table``
        keeps queries naming it, ``since`` (Unix seconds) the later ones, ``outcome`` one of answered,
        refused, interrupted; ``limit``/``offset`` page it."""
        return self._db.log(log_subject(self.analyst, analyst), **options)

    # ---- the owner
    def _owner(self, what: str) -> Database:
        if self.analyst is not None:
            raise RawAccessDenied(f"{what} is for the database owner; analysts ask DP-SELECT queries")
        return self._db

    def owner_sql(self, sql: str) -> pd.DataFrame:
        """Direct access: any SQL on the engine (the owner's own data)."""
        return self._owner("raw SQL").owner_sql(sql)

    def publish(self, method: str, table: str, /, **options: Any) -> dict[str, Any]:
        """Publish a table once with a DP guarantee (owner): ``histogram`` (columns=[["a", "b"]], epsilon=…),
        ``safepub`` (qi=[…], hierarchies={column: rows}, epsilon=…, delta=…) or ``synthetic`` (epsilon=…,
        delta=…, rows=N, method="mst" or "aim"); charged to the table's lifetime budget. ``method`` and
        ``table`` are positional only, so ``method=`` names a release's own method option. The released rows
        and a summary (privdb.publish.service.publish_request)."""
        # optional: publishing's code (pandas, SciPy) loads when the owner publishes, not with a connection
        from privdb.publish.service import publish_request

        return publish_request(self._owner("publishing"), method, table, options)

    def load(
        self,
        table: str,
        source: str | Path,
        metadata: str | Path | dict[str, Any] | None = None,
        *,
        header: bool | None = None,
        names: Sequence[str] | None = None,
        delimiter: str | None = None,
        quote: str | None = None,
        null: str | Sequence[str] = (),
        format: FileFormat | None = None,
        skip_bad_lines: bool = False,
        append: bool = False,
    ) -> TableMeta:
        """Load a file as ``table``: CSV (header, delimiter and quoting detected unless given; ``null`` marks
        missing values, e.g. ``"?"``), Parquet, JSON or Excel (``format`` or the suffix says which).
        ``skip_bad_lines``: leave out a CSV's bad lines (malformed, or a value not of its column's type)
        instead of refusing the file. ``append``: add the rows to the table, atomically (same columns, any
        order; it keeps its metadata, so give none)."""
        options = ReadOptions(
            header=header,
            names=None if names is None else tuple(names),
            delimiter=delimiter,
            quote=quote,
            null=(null,) if isinstance(null, str) else tuple(null),
            format=format,
            skip_bad_lines=skip_bad_lines,
        )
        db = self._owner("loading tables")
        if not append:
            return db.load(table, source, metadata, options)
        if metadata is not None:
            raise InvalidParameter(APPEND_KEEPS_METADATA)
        return db.append(table, source, options)

    def conformance(self, table: str) -> list[Finding]:
        """For the owner: values outside declared domains and the share clipped at each bound."""
        return self._owner("checking tables").conformance(table)

    def attach(self, table: str, engine: str, source: str | None = None, metadata: Spec = None) -> TableMeta:
        """Register a table that stays in its own engine (``sqlite:///file.db``, ``postgresql://…``)."""
        return self._owner("attaching tables").attach(table, engine, source, metadata)

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
        """Create an analyst with a budget (or re-grant: ε or δ left out keep their totals); returns their
        token. ``query_epsilon``/``query_delta``: what plain aggregate SQL is answered at by default."""
        return self._owner("granting budgets").grant(
            analyst, epsilon=epsilon, delta=delta, tables=tables, expires_in=expires_in, group=group,
            query_epsilon=query_epsilon, query_delta=query_delta,
        )  # fmt: skip

    def set_shared_budget(
        self,
        *,
        table: str | None = None,
        group: str | None = None,
        epsilon: float,
        delta: float = 0.0,
        renew: str | float | None = None,
    ) -> dict[str, Any]:
        """Set a table's lifetime budget or a budget group's (owner); ``renew``: a refill period (``30d``)."""
        return self._owner("setting shared budgets").set_shared_budget(
            table=table, group=group, epsilon=epsilon, delta=delta, renew=renew
        )

    def shared_budgets(self) -> list[dict[str, Any]]:
        """Every table lifetime budget and budget group (owner)."""
        return self._owner("reading shared budgets").shared_budgets()

    def class_losses(self) -> list[dict[str, Any]]:
        """Personalised tables: the ε each class of units has lost so far (owner)."""
        return self._owner("reading class losses").class_losses()

    def revoke(self, analyst: str) -> None:
        """Revoke the analyst's token at once."""
        self._owner("revoking analysts").revoke(analyst)

    def budget_of(self, analyst: str) -> dict[str, Any]:
        return self._owner("reading budgets").budget_of(analyst).to_dict()


@overload
def connect(
    path: Path, *, analyst: str | None = None, token: str | None = None, ledger: str | None = None
) -> Connection: ...
@overload
def connect(
    path: str, *, analyst: str | None = None, token: str | None = None, ledger: str | None = None
) -> Connection | RemoteConnection: ...


def connect(
    path: str | Path, *, analyst: str | None = None, token: str | None = None, ledger: str | None = None
) -> Connection | RemoteConnection:
    """Open a database directory (created on first use) as ``analyst`` or as the owner; or, given an
    ``http(s)://`` URL and a token, a session with a privdb server (the same methods). ``ledger``: a
    ``postgresql://`` URL holding the budgets, analysts and log that several hosts share (default: the
    directory's own SQLite file)."""
    if isinstance(path, str) and path.startswith(("http://", "https://")):
        if analyst is not None:
            raise InvalidParameter("on a server the token says who you are; pass token=…, not analyst=…")
        if ledger is not None:
            raise InvalidParameter("a server keeps its own ledger: pass ledger=… only with a directory")
        from privdb.client import RemoteConnection  # optional: HTTP (httpx), for a server only

        return RemoteConnection(path, token or "")
    if token is not None:
        found = Database(path, ledger=ledger)
        principal = found.catalog.authenticate(token)
        return Connection(found, None if principal.is_owner else principal.name)
    return Connection(Database(path, ledger=ledger), analyst)
