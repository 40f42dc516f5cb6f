"""Apache Spark as an engine for attached tables (PySpark): for data that outgrows one machine.

``spark://local[2]`` runs Spark inside this process on two cores; ``spark://HOST:7077`` (or any master
URL after ``spark://``: ``spark://yarn``, ``spark://k8s://…``) connects to a cluster. A source is a table of
Spark's catalog or a Parquet path (a file or directory, local or on the cluster's file system), read as a
temporary view. privdb sends the rewritten aggregate in Spark SQL (sqlglot); only aggregates come back to
the driver. A query past its time limit is cancelled through its job group.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pandas as pd

from privdb.backends.base import find_table
from privdb.backends.names import HIDDEN_PREFIX
from privdb.backends.spark_layout import SparkLayout, file_names, spark_type
from privdb.errors import EngineUnavailable, InvalidParameter, ParseError, UnknownTable, install_hint

__all__ = ["SparkBackend", "spark_type"]


def _view_over(spark: Any, source: str, view: str) -> tuple[str, ...]:
    """Register ``view`` over the Parquet files at ``source``; the files it reads, listed now (Spark keeps
    the listing: what the layout check compares)."""
    frame = spark.read.parquet(source)
    frame.createOrReplaceTempView(view)
    return file_names(frame)


def _is_path(source: str) -> bool:
    """A Parquet file or directory (read as a view), as opposed to a table of Spark's catalog."""
    return "/" in source or source.endswith(".parquet")


_BOUND_KEPT = 16  # analysed statements kept between bind and fetch (a query binds at most four)
_CANCEL_EVERY = 0.1  # seconds between cancels of a read that is past its time or whose sibling failed


class SparkBackend:
    """A Spark session, and the views privdb registered for Parquet sources."""

    dialect = "spark"

    def __init__(self, url: str) -> None:
        master = url.removeprefix("spark://")
        if not master:
            raise InvalidParameter("a Spark URL names the master: spark://local[2] or spark://HOST:7077")
        self._master = (
            master if master.startswith(("local", "yarn", "k8s://", "mesos://")) else f"spark://{master}"
        )
        self._spark = self._start()
        self._views: dict[str, str] = {}  # source (Parquet path or catalog name) → the name to query
        self._schemas: dict[str, dict[str, str]] = {}
        self._files: dict[str, tuple[str, ...]] = {}  # view over a Parquet path → the files it reads
        self._layouts: dict[str, SparkLayout] = {}  # Parquet path privdb wrote → what it wrote there
        self._lock = threading.Lock()
        # statements bind analysed, by SQL, until their fetch takes them: Spark analyses a statement when
        # the DataFrame is built (about 0.04 s), so a query bound and then fetched is analysed once, and
        # reads the files its plan was chosen on. Bounded: a query refused between the two leaves its entry
        # until newer ones push it out.
        self._bound: OrderedDict[str, Any] = OrderedDict()

    def _start(self) -> Any:
        try:
            from pyspark import SparkContext
            from pyspark.sql import SparkSession
        except ImportError:
            raise EngineUnavailable(
                f"Spark needs PySpark: {install_hint('spark')} (nothing was spent)"
            ) from None
        # Spark runs one SparkContext per driver process, and getOrCreate returns the running one whatever
        # master it is asked for: a table attached to a cluster would silently be read from local[2] (or
        # the other cluster). Stopping the running session to honour the new master would fail the
        # queries other tables have in flight on it, and charge their analysts (query_failed), so a second
        # master is refused instead: one privdb process drives one Spark master; tables on the same master
        # share its session. The active context is read before (no configuration pushed onto another
        # session) and the session's master after (two attaches racing both to create one).
        self._refuse_other_master(SparkContext._active_spark_context)
        try:
            session = (
                SparkSession.builder.master(self._master)
                .appName("privdb")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "8")
                .config("spark.sql.ansi.enabled", "false")  # NULL, not an error, on a bad cast
                .config("spark.ui.showConsoleProgress", "false")  # no stage bars over privdb's own output
                # the tables privdb writes (privdb.backends.spark_layout): the owner's rows, owner-only
                .config("spark.hadoop.fs.permissions.umask-mode", "077")
                # privdb reads views over Parquet only: no empty spark-warehouse folder in the user's cwd
                .config("spark.sql.warehouse.dir", str(Path(tempfile.gettempdir()) / "privdb-spark"))
                .getOrCreate()
            )
        except Exception as err:  # Java missing, master unreachable, …
            raise InvalidParameter(
                f"cannot start Spark on {self._master!r} ({type(err).__name__}); check the master URL and "
                "that Java 17 is installed"
            ) from None
        self._refuse_other_master(session.sparkContext)
        return session

    def _refuse_other_master(self, context: Any) -> None:
        """Refuses when ``context`` (a running SparkContext, or None) runs on another master than ours."""
        running = None if context is None else str(context.master)
        if running is not None and running != self._master:
            raise InvalidParameter(
                f"this process already drives a Spark session on {running!r}, and Spark runs one per "
                f"process: cannot also use {self._master!r}. Attach every Spark table from one master, or "
                "serve the other master's tables from a second privdb process"
            )

    def _live(self) -> Any:
        """The session, started again if it stopped (the cluster went away, or someone stopped it), with
        privdb's Parquet views registered again under their names. Called while a query is prepared,
        before any budget is reserved; a session that cannot be started refuses with
        ``engine_unavailable`` (nothing spent)."""
        context = self._spark.sparkContext
        try:
            stopped = context._jsc is None or context._jsc.sc().isStopped()
        except Exception:  # the JVM is gone
            stopped = True
        if not stopped:
            return self._spark
        with self._lock:
            try:
                fresh = self._start()
                files = {}
                for source, view in self._views.items():
                    if _is_path(source):  # a view privdb made over a Parquet path (catalog tables stay)
                        files[view] = _view_over(fresh, source, view)
                self._spark = fresh
                self._files.update(files)  # only whole: a view that failed would otherwise stay missing
            except Exception as err:
                why = str(err) if isinstance(err, InvalidParameter) else type(err).__name__
                raise EngineUnavailable(
                    f"the Spark session on {self._master!r} stopped and could not be started again "
                    f"({why}); nothing was spent: try again when the cluster is back"
                ) from None
        return self._spark

    def close(self) -> None:
        self._spark.stop()

    def tables(self) -> list[str]:
        return sorted({t.name for t in self._live().catalog.listTables()} | set(self._views.values()))

    def resolve(self, table: str) -> str:
        """The name to query ``table`` by: a catalog table, or a view over a Parquet path."""
        spark = self._live()
        if _is_path(table):
            with self._lock:
                if table not in self._views:
                    stem = re.sub(r"\W", "_", table.rsplit("/", 1)[-1])[:40]
                    view = f"privdb_{stem}_{uuid.uuid4().hex[:6]}"
                    try:
                        self._files[view] = _view_over(spark, table, view)
                    except Exception as err:
                        raise UnknownTable(
                            f"Spark cannot read {table!r} as Parquet ({type(err).__name__}); check the path"
                        ) from None
                    self._views[table] = view
                return self._views[table]
        with self._lock:
            known = self._views.get(table)
        if known is not None:  # listing Spark's catalog costs ~0.1 s: once per table and session
            return known
        name = find_table(
            table,
            [str(t.name) for t in spark.catalog.listTables()],
            "Spark's catalog (a Parquet source is given by its path) has ",
        )
        with self._lock:
            self._views[table] = name
        return name

    def columns(self, table: str) -> dict[str, str]:
        """Column types, read once per table and session (a source's schema is fixed while privdb runs;
        attach it again after changing it)."""
        name = self.resolve(table)
        with self._lock:
            cached = self._schemas.get(name)
        if cached is None:
            cached = {
                f.name: spark_type(f.dataType.simpleString())
                for f in self._spark.table(name).schema.fields
                if not f.name.lower().startswith(HIDDEN_PREFIX)  # privdb's layout column: never analysts'
            }
            with self._lock:
                self._schemas[name] = cached
        return dict(cached)

    @property
    def session(self) -> Any:
        """The live Spark session (privdb.spark_loads writes tables with it)."""
        return self._live()

    def adopt_layout(self, source: str, stamp: dict[str, Any] | None) -> None:
        """Record what privdb wrote at the Parquet path ``source``, as the catalog keeps it
        (``SparkLayout.to_dict``; None: nothing, an attached table)."""
        with self._lock:
            if stamp is None:
                self._layouts.pop(source, None)
            else:
                self._layouts[source] = SparkLayout.from_dict(stamp)

    def _current(self, table: str, unit: str) -> SparkLayout | None:
        """What privdb wrote for the view ``table`` with this unit, while the view reads exactly the files
        written with it; None for attached tables (never written) and tables whose files changed since."""
        with self._lock:
            source = next((s for s, v in self._views.items() if v == table), None)
            layout = self._layouts.get(source) if source is not None else None
            files = self._files.get(table)
        if layout is None or layout.unit is None or layout.unit.lower() != unit.lower():
            return None
        return layout if files == layout.files else None

    def unit_rows(self, table: str, unit: str) -> str | None:
        """The hidden unit-size column of a table privdb wrote (privdb.backends.spark_layout) while current;
        None otherwise, and then every unit goes through bounding."""
        layout = self._current(table, unit)
        return layout.column if layout is not None else None

    def unit_choice(self, table: str, unit: str, column: str) -> str | None:
        """The hidden choice column of ``column`` in a table privdb wrote, while current (else None: every
        unit's group is drawn by the query)."""
        layout = self._current(table, unit)
        return layout.choice(column) if layout is not None else None

    def bind(self, sql: str) -> list[str]:
        """Analyse ``sql`` without running it (building a DataFrame resolves names and types)."""
        spark = self._live()  # outside the try: a session that cannot start is engine_unavailable
        try:
            frame = spark.sql(sql)
        except Exception as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ParseError(f"the Spark engine cannot run this query: {first[:300]}") from None
        with self._lock:
            self._bound[sql] = frame
            self._bound.move_to_end(sql)
            while len(self._bound) > _BOUND_KEPT:
                self._bound.popitem(last=False)
        return list(frame.columns)

    def _analysed(self, sql: str) -> Any:
        """The DataFrame of ``sql``: the one ``bind`` built, taken, if it is of the running session."""
        with self._lock:
            frame = self._bound.pop(sql, None)
        if frame is not None and frame.sparkSession is self._spark:
            return frame
        return self._spark.sql(sql)

    def fetch(
        self, sql: str, params: list[Any] | None = None, *, timeout: float | None = None
    ) -> pd.DataFrame:
        if params:
            raise InvalidParameter("the Spark engine takes no query parameters")
        return self._fetch(sql, timeout, f"privdb-{uuid.uuid4().hex}")

    def fetch_all(self, queries: dict[str, str], *, timeout: float | None = None) -> dict[str, pd.DataFrame]:
        """The queries side by side (a query with order statistics or distinct counts reads two to four
        times): each from its own thread in its own job group (PySpark pins a Python thread to a JVM thread,
        so the groups stay apart), sharing the executors; one failing, or Ctrl-C, cancels the others."""
        groups = {name: f"privdb-{uuid.uuid4().hex}" for name in queries}
        results: dict[str, pd.DataFrame] = {}
        errors: list[BaseException] = []
        stop = threading.Event()  # one failed, or Ctrl-C: every other read is cancelled until it ends

        def one(name: str) -> None:
            try:
                results[name] = self._fetch(queries[name], timeout, groups[name], stop)
            except BaseException as err:  # raised below, in the caller's thread
                errors.append(err)
                stop.set()

        threads = [threading.Thread(target=one, args=(name,), daemon=True) for name in queries]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        except BaseException:
            stop.set()
            raise
        if errors:
            raise errors[0]
        return {name: results[name] for name in queries}

    def _fetch(
        self, sql: str, timeout: float | None, group: str, stop: threading.Event | None = None
    ) -> pd.DataFrame:
        """``sql``'s rows, its jobs in ``group``: cancelled once ``timeout`` passes or ``stop`` is set, and
        again every 0.1 s until the read ends (a cancel reaches only the group's jobs already submitted,
        and a read still being analysed submits its job after it)."""
        context = self._spark.sparkContext
        fired, done = threading.Event(), threading.Event()
        deadline = None if timeout is None else time.monotonic() + timeout

        def watch() -> None:
            while True:
                if deadline is not None and time.monotonic() >= deadline:
                    fired.set()
                if fired.is_set() or (stop is not None and stop.is_set()):
                    with contextlib.suppress(Exception):  # a stopped context, a lost gateway: try again
                        context.cancelJobGroup(group)
                if done.wait(_CANCEL_EVERY):
                    return

        watcher = None
        if timeout is not None or stop is not None:
            watcher = threading.Thread(target=watch, daemon=True)
        context.setJobGroup(group, "privdb query", interruptOnCancel=True)
        if watcher is not None:
            watcher.start()
        try:
            frame = self._analysed(sql)
            rows = frame.collect()
        except Exception:
            if fired.is_set():
                raise TimeoutError(f"the Spark query ran longer than {timeout} s") from None
            raise
        finally:
            done.set()
        return pd.DataFrame.from_records([tuple(r) for r in rows], columns=frame.columns)
