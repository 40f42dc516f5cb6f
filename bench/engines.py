"""privdb's DP-SELECT on each engine it runs on, against the raw query on that same engine, in one run.

One generated census table (``privdb.data.census.generate``, ``--rows``, default 10,000,000) and the queries
Q1–Q3 of bench/sql.py at ε = 1, row-level privacy (bench/sql.py's ``row_metadata``: no privacy unit), on

- **DuckDB**: privdb's own embedded engine (``Database.backend.load_frame``);
- **SQLite**: a file written with ``sqlite3`` (``executemany`` in chunks), attached as ``sqlite:///…``;
- **PostgreSQL**: a throw-away cluster (tests/pgfixture.py's ``postgres_cluster``), the table loaded with
  psycopg's ``COPY`` (CSV chunks) and ``VACUUM ANALYZE``, attached as ``postgresql://…``;
- **Spark** ``local[2]``: a Parquet file (pyarrow) attached as ``spark://local[2]`` with the path as source.

Tables stay in their engines: ``Database.attach(table, url, source, metadata)``. **raw** is the plain
aggregate (no privacy) sent to the same engine through the same connection: ``db.backend_for(table)`` →
``backend.fetch(sql)``. **privdb** is ``engine.run(db, analyst, "DP-SELECT ε …")`` end to end, ε moving by
1e-9 per repetition so no answer comes from privdb's store. One warm-up, then best of ``--repeats`` (3),
raw and privdb interleaved run by run (bench/sql.py's ``best_of``); then privdb by stage (``engine.prepare``,
the rewritten engine SQL alone, ``add_noise``; rest = total − stages).

**Spark at scale**: ``--big-rows`` (100,000,000) rows of Parquet (the 10,000,000-row table replicated with
shifted ``pid``, written in row groups of 1,000,000 rows with pyarrow's ``ParquetWriter``, never all in
memory), Q1 through privdb on ``spark://local[2]`` in a fresh subprocess of this file
(``--spark-big-worker``), so its memory is its own: peak RSS of the Python driver and of Spark's JVM
(``VmHWM`` from /proc) and of the whole process tree (sampled every 0.2 s), with Spark's default driver
memory.

Run: ``.venv/bin/python bench/engines.py [--rows N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``engines`` markers; ``--quick`` (200,000 rows; 2,000,000 for Spark at scale)
only prints.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from _doc import DOC, cpu_model, markers, memory_gib, run_json_worker, wrap, write_section

ROOT = Path(__file__).resolve().parents[1]
START, END = markers("engines")
EPS = 1.0
ANALYST = "bench"
QUICK_ROWS = 200_000
QUICK_BIG_ROWS = 2_000_000
CHUNK = 1_000_000  # rows per load chunk and per Parquet row group
TARGET = 1.5  # privdb ÷ raw on the same engine, row-level
ENGINES = {"duckdb": "DuckDB", "sqlite": "SQLite", "postgres": "PostgreSQL", "spark": "Spark local[2]"}
COLUMNS_SQL = {
    "sqlite": "pid INTEGER, age INTEGER, income REAL, sex TEXT, state TEXT, education TEXT",
    "postgres": "pid BIGINT, age INTEGER, income DOUBLE PRECISION, sex TEXT, state TEXT, education TEXT",
}


def load_module(name: str, path: Path) -> ModuleType:
    """A file as a module (bench/sql.py, tests/pgfixture.py), imported once."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def bench_sql() -> ModuleType:
    """bench/sql.py: its queries Q1–Q3, ``row_metadata`` and ``best_of``."""
    return load_module("bench_sql", Path(__file__).resolve().parent / "sql.py")


# ------------------------------------------------------------------------------------- memory (/proc)
def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return {}
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _kib(status: dict[str, str], key: str) -> int:
    value = status.get(key, "0 kB").split()
    return int(value[0]) if value else 0


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


class TreeSampler:
    """Samples the summed RSS of a process tree every ``interval`` seconds; remembers the peak."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        self.root, self.interval, self.peak_kib = root, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = sum(_kib(_status(pid), "VmRSS") for pid in process_tree(self.root))
            self.peak_kib = max(self.peak_kib, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------------------- loading the engines
def chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(n, start + CHUNK)


def duckdb_table(db: Any, table: str, frame: Any, advance: Callable[[int], None]) -> None:
    """The table in privdb's own DuckDB."""
    db.backend.load_frame(table, frame)
    advance(len(frame))


def sqlite_file(path: Path, frame: Any, advance: Callable[[int], None]) -> Path:
    """The table as a SQLite file written with plain ``sqlite3`` (``executemany``, chunk by chunk)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute(f"CREATE TABLE people ({COLUMNS_SQL['sqlite']})")
    names = list(frame.columns)
    for a, b in chunks(len(frame)):
        part = frame.iloc[a:b]
        con.executemany(
            "INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)",
            zip(*(part[c].tolist() for c in names), strict=True),
        )
        con.commit()
        advance(b - a)
    con.close()
    return path


def postgres_table(url: str, frame: Any, advance: Callable[[int], None]) -> None:
    """The table in PostgreSQL: ``COPY … FROM STDIN`` of CSV chunks, then ``VACUUM ANALYZE``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS people")
        con.execute(f"CREATE TABLE people ({COLUMNS_SQL['postgres']})")
        with con.cursor().copy("COPY people FROM STDIN (FORMAT csv)") as copy:
            for a, b in chunks(len(frame)):
                copy.write(frame.iloc[a:b].to_csv(header=False, index=False))
                advance(b - a)
        con.execute("VACUUM ANALYZE people")


def parquet_file(path: Path, frame: Any, copies: int, advance: Callable[[int], None]) -> Path:
    """``frame`` ``copies`` times (``pid`` shifted by ``len(frame)`` per copy) as one Parquet file, written
    row group by row group: at most one chunk beyond the frame is in memory."""
    import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]

    table = pa.Table.from_pandas(frame, preserve_index=False)
    pid = table.column("pid")
    with pq.ParquetWriter(path, table.schema) as writer:
        for k in range(copies):
            shifted = table.set_column(0, "pid", pa.compute.add(pid, k * len(frame)))
            for a, b in chunks(len(frame)):
                writer.write_table(shifted.slice(a, b - a), row_group_size=CHUNK)
                advance(b - a)
    return path


# ---------------------------------------------------------------------------------------- measuring
@dataclass
class Row:
    engine: str
    rows: int
    key: str
    label: str
    raw: float
    privdb: float
    parts: dict[str, float] = field(default_factory=dict)
    groups: int = 0


def measure(db: Any, table: str, engine_key: str, n: int, query: Any, repeats: int) -> Row:
    """Raw SQL and privdb on the same engine, interleaved; then privdb's time by stage."""
    from privdb.sql import engine
    from privdb.sql.noise import add_noise
    from privdb.sql.plan import Plan

    sql_mod = bench_sql()
    backend, source = db.backend_for(table)
    raw_sql = str(query.raw()).replace("FROM people", f"FROM {source}")

    def dp_text(i: int) -> str:
        return str(query.dp(EPS + i * 1e-9)).replace("FROM people", f"FROM {table}")

    answers: dict[str, Any] = {}

    def dp(i: int) -> None:
        result = engine.run(db, ANALYST, dp_text(i))
        if result.cached or not math.isclose(result.epsilon_spent, EPS + i * 1e-9):
            raise RuntimeError(f"privdb answered {query.key} from its store: the timing would be void")
        answers["privdb"] = result

    def raw(i: int) -> None:
        answers["raw"] = backend.fetch(raw_sql)

    best = sql_mod.best_of({"raw": raw, "privdb": dp}, repeats)
    if len(answers["raw"]) != len(answers["privdb"].rows):
        raise RuntimeError(f"{engine_key} {query.key}: raw and privdb return different numbers of groups")
    plan, sql = engine.prepare(db, dp_text(0))
    assert isinstance(plan, Plan)
    frame = backend.fetch(sql)
    parts = sql_mod.best_of(
        {
            "prepare": lambda i: engine.prepare(db, dp_text(i)),
            "engine SQL": lambda i: backend.fetch(sql),
            "noise": lambda i: add_noise(plan, frame),
        },
        repeats,
    )
    parts["rest"] = max(0.0, best["privdb"] - sum(parts.values()))
    return Row(engine_key, n, query.key, query.label, best["raw"], best["privdb"], parts, len(answers["raw"]))


# ------------------------------------------------------------------------------------ Spark at scale
def spark_big_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process: attach the big Parquet file on ``spark://local[2]`` and run Q1 through privdb."""
    from privdb.data.census import METADATA
    from privdb.database import Database
    from privdb.sql import engine

    sql_mod = bench_sql()
    q1 = sql_mod.QUERIES[0]
    out: dict[str, Any] = {"rows": spec["rows"]}
    with TreeSampler(os.getpid()) as sampler:
        db = Database(Path(spec["dir"]))
        t0 = time.perf_counter()
        db.attach(
            "people_big", "spark://local[2]", source=spec["parquet"], metadata=sql_mod.row_metadata(METADATA)
        )
        out["attach_s"] = time.perf_counter() - t0  # Spark's start, the view, the schema
        db.grant(ANALYST, epsilon=1e6, delta=1e-3)
        backend, source = db.backend_for("people_big")
        raw_sql = q1.raw().replace("FROM people", f"FROM {source}")
        t0 = time.perf_counter()
        backend.fetch(raw_sql)  # the session's first scan (JIT, file footers): a warm-up for both
        out["cold_s"] = time.perf_counter() - t0
        privdb_s, raw_s = [], []
        for i in range(int(spec["repeats"])):
            t0 = time.perf_counter()
            result = engine.run(db, ANALYST, q1.dp(EPS + i * 1e-9).replace("FROM people", "FROM people_big"))
            privdb_s.append(time.perf_counter() - t0)
            assert not result.cached
            t0 = time.perf_counter()
            exact = backend.fetch(raw_sql)
            raw_s.append(time.perf_counter() - t0)
        out |= {"privdb_s": privdb_s, "raw_s": raw_s, "noisy": float(result.rows[0][0])}
        out["exact"] = int(exact.to_numpy()[0, 0])
        tree = process_tree(os.getpid())
        hwm = {
            pid: (Path(f"/proc/{pid}/comm").read_text().strip(), _kib(_status(pid), "VmHWM")) for pid in tree
        }
        out["python_hwm_kib"] = hwm[os.getpid()][1]
        out["jvm_hwm_kib"] = sum(k for pid, (comm, k) in hwm.items() if comm == "java")
        spark = cast(Any, backend)._spark
        conf = spark.sparkContext.getConf()  # the settings Spark ran with
        out["driver_memory"] = conf.get("spark.driver.memory", "1g (default)")
        out["spark"] = spark.version
        db.close()
    out["tree_peak_kib"] = sampler.peak_kib
    return out


def run_spark_big(parquet: Path, rows: int, repeats: int, work: Path) -> dict[str, Any]:
    """The worker as a subprocess; its figures, or ``{"error": why}``."""
    spec = {"parquet": str(parquet), "rows": rows, "repeats": repeats, "dir": str(work / "big-db")}
    t0 = time.perf_counter()
    result = run_json_worker(
        [sys.executable, str(Path(__file__).resolve()), "--spark-big-worker"],
        spec,
        "the Spark worker failed (exit {code}); see its output above",
    )
    result["wall_s"] = time.perf_counter() - t0
    return result


# ------------------------------------------------------------------------------------------- report
def _secs(value: float) -> str:
    return f"{value:,.3f}"


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def machine(versions: dict[str, str]) -> str:
    cpu = cpu_model()
    memory = memory_gib()
    libs = ", ".join(f"{k} {v}" for k, v in versions.items())
    return (
        f"{cpu}, {os.cpu_count()} CPUs, {memory:.0f} GiB; Python {platform.python_version()}, {libs}; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def java_version() -> str:
    try:
        said = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    except OSError:
        return "?"
    first = said.strip().splitlines()[0] if said.strip() else "?"
    return first.split('"')[1] if '"' in first else first


COLUMNS = ["engine", "rows", "query (ε = 1)", "groups", "raw s", "privdb s", "privdb ÷ raw"]
PART_COLUMNS = ["engine", "query", "privdb s", "prepare s", "engine SQL s", "noise s", "rest s"]
PART_COLUMNS += ["engine SQL ÷ raw"]


def table_rows(rows: list[Row]) -> list[list[str]]:
    return [
        [
            ENGINES[r.engine],
            f"{r.rows:,}",
            f"{r.key} {r.label}",
            str(r.groups),
            _secs(r.raw),
            _secs(r.privdb),
            f"{r.privdb / r.raw:.2f}×",
        ]
        for r in rows
    ]


def part_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        p = r.parts
        cells = [ENGINES[r.engine], r.key, _secs(r.privdb), _secs(p["prepare"]), _secs(p["engine SQL"])]
        cells += [_secs(p["noise"]), _secs(p["rest"]), f"{p['engine SQL'] / r.raw:.2f}×"]
        out.append(cells)
    return out


def targets(rows: list[Row], big: dict[str, Any] | None) -> list[str]:
    ok = {True: "met", False: "**missed**"}
    lines = []
    for key, name in ENGINES.items():
        picked = [r for r in rows if r.engine == key]
        if not picked:
            lines.append(f"- {name}: not measured")
            continue
        worst = max(r.privdb / r.raw for r in picked)
        text = ", ".join(f"{r.key} {r.privdb / r.raw:.2f}×" for r in picked)
        lines.append(
            f"- privdb within {TARGET}× of raw {name} ({picked[0].rows:,} rows), row-level: {text} "
            f"({ok[worst <= TARGET]})"
        )
    if big is None:
        lines.append("- Spark local[2] at scale: not measured")
    elif "error" in big:
        lines.append(f"- Spark local[2] at scale: **failed** ({big['error']})")
    else:
        lines.append(
            f"- Spark local[2] on {big['rows']:,} rows of Parquet without running out of memory: Q1 through "
            f"privdb in {min(big['privdb_s']):,.1f} s (best of {len(big['privdb_s'])}), peak RSS "
            f"{_mib(big['tree_peak_kib'])} MiB for the whole process tree (met)"
        )
    return lines


def big_lines(big: dict[str, Any] | None, big_rows: int, parquet_mib: float, write_s: float) -> list[str]:
    if big is None:
        return []
    if "error" in big:
        return [f"Spark local[2] on {big_rows:,} rows: **failed**: {big['error']}"]
    runs = ", ".join(f"{s:.2f}" for s in big["privdb_s"])
    raws = ", ".join(f"{s:.2f}" for s in big["raw_s"])
    return [
        f"Spark local[2] at scale: {big['rows']:,} rows of Parquet ({parquet_mib:,.0f} MiB, one file, row "
        f"groups of {CHUNK:,} rows, written in {write_s:.0f} s by pyarrow's ParquetWriter from the table "
        "above replicated with shifted pid), Q1 row-level through privdb in a fresh process of this "
        f"script, Spark {big['spark']}, driver memory {big['driver_memory']}:",
        "",
        "| step | s |",
        "|---|---|",
        f"| start Spark, attach the Parquet file (view, schema) | {big['attach_s']:.2f} |",
        f"| raw Q1, the session's first query (warm-up, cold) | {big['cold_s']:.2f} |",
        f"| privdb Q1 end to end, each run | {runs} |",
        f"| raw Q1 on the same session, each run right after privdb's | {raws} |",
        f"| best privdb ÷ best raw | {min(big['privdb_s']) / min(big['raw_s']):.2f}× |",
        f"| whole worker process (Python and JVM start included) | {big['wall_s']:.1f} |",
        "",
        f"Peak memory: Python driver {_mib(big['python_hwm_kib'])} MiB, Spark's JVM "
        f"{_mib(big['jvm_hwm_kib'])} MiB (each its VmHWM), whole process tree "
        f"{_mib(big['tree_peak_kib'])} MiB (sum of RSS sampled every 0.2 s). privdb's answer "
        f"{big['noisy']:,.0f} against the exact {big['exact']:,}; only that one aggregate row came back to "
        "the driver.",
    ]


def markdown(
    rows: list[Row],
    big: dict[str, Any] | None,
    extra: dict[str, Any],
    repeats: int,
    command: str,
) -> str:
    lines = [START, "## Engines: privdb against the raw query on DuckDB, SQLite, PostgreSQL, Spark", ""]
    lines += [
        f"Written by `bench/engines.py`; command: `{command}`",
        "",
        f"Machine: {machine(extra['versions'])}. Load average when the run began: {extra['load']}; other "
        "work may have run on the machine at the same time.",
        "",
        "The generated census table (`privdb.data.census.generate`) in each engine: privdb's DuckDB, a "
        "SQLite file (`sqlite3` `executemany`), a throw-away PostgreSQL cluster (tests/pgfixture.py, "
        "`COPY`, `VACUUM ANALYZE`, server defaults with `fsync=off`), a Parquet file read by Spark "
        "`local[2]`; the last three attached with `Database.attach`, so the data stays in its engine. "
        f"Load times (s): {extra['loads']}. Queries Q1–Q3 of bench/sql.py at ε = 1, row-level (no privacy "
        "unit). **raw**: the plain aggregate through the same engine connection (`backend.fetch`); "
        "**privdb**: `engine.run` end to end (plan, bind, budget, engine SQL, noise, stored answer), ε moved "
        f"by 1e-9 per repetition so no answer comes from the store. Wall time, best of {repeats} after one "
        "warm-up, raw and privdb interleaved.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(rows)]
    lines += ["", "Targets:", "", *targets(rows, big), ""]
    lines += [
        "privdb by stage (each timed alone, best of the same repeats): `engine.prepare` (parse, plan, "
        "metadata from the engine, transpile, bind on the engine), the rewritten engine SQL alone "
        "(`backend.fetch`), `add_noise`; rest = total − stages (ledger and catalog), floored at 0:",
        "",
        "| " + " | ".join(PART_COLUMNS) + " |",
        "|" + "---|" * len(PART_COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in part_rows(rows)]
    lines += ["", *big_lines(big, extra["big_rows"], extra["parquet_mib"], extra["parquet_s"]), END]
    return "\n".join(wrap(line) for line in lines)


# --------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description="DP-SELECT on each engine: privdb against the raw query.")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows per engine (default 10M)")
    for key in ("sqlite", "postgres", "spark"):
        parser.add_argument(f"--{key}-rows", type=int, default=None, help=f"rows for {key} (default --rows)")
    parser.add_argument("--big-rows", type=int, default=100_000_000, help="Spark at scale (0: skip)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up (default 3)")
    parser.add_argument("--big-repeats", type=int, default=2, help="privdb Q1 runs at scale (default 2)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of engines")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows; prints only")
    parser.add_argument("--spark-big-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.spark_big_worker:
        print(json.dumps(spark_big_worker(json.loads(sys.stdin.read()))), flush=True)
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from privdb.data.census import METADATA, generate
    from privdb.database import Database

    sql_mod = bench_sql()
    pgfixture = load_module("pgfixture", ROOT / "tests" / "pgfixture.py")
    n = QUICK_ROWS if args.quick else args.rows
    sizes = {"duckdb": n}
    for key in ("sqlite", "postgres", "spark"):
        sizes[key] = min(n, getattr(args, f"{key}_rows") or n)
    big_rows = (QUICK_BIG_ROWS if args.quick else args.big_rows) if args.big_rows else 0
    chosen = [e.strip() for e in args.engines.split(",") if e.strip()]
    console = Console() if sys.stdout.isatty() else Console(width=200)
    metadata = sql_mod.row_metadata(METADATA)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    versions = {
        "privdb": importlib.metadata.version("privdb"),
        "duckdb": importlib.metadata.version("duckdb"),
    }
    versions |= {"SQLite": sqlite3.sqlite_version, "psycopg": importlib.metadata.version("psycopg")}
    versions |= {"pyspark": importlib.metadata.version("pyspark"), "Java": java_version()}
    versions |= {"pyarrow": importlib.metadata.version("pyarrow")}
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-engines-"))
    rows: list[Row] = []
    loads: dict[str, float] = {}
    big: dict[str, Any] | None = None
    parquet_mib = parquet_s = 0.0
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
    try:
        with progress, ExitStack() as stack:
            task = progress.add_task(f"generating {n:,} rows", total=None)
            frame = generate(n)
            progress.update(task, total=1, completed=1)
            db = Database(work / "db")
            db.grant(ANALYST, epsilon=1e9, delta=1e-3)

            def loading(key: str, body: Callable[..., object], *args: Any) -> None:
                t = progress.add_task(f"loading {ENGINES[key]}", total=sizes[key])
                t0 = time.perf_counter()
                body(*args, lambda k: progress.advance(t, k))
                loads[key] = time.perf_counter() - t0

            for key in [e for e in ENGINES if e in chosen]:
                part = frame if sizes[key] == n else frame.iloc[: sizes[key]]
                table = f"people_{key}"
                if key == "duckdb":
                    loading(key, duckdb_table, db, table, part)
                    db.set_metadata(table, metadata)
                elif key == "sqlite":
                    path = work / "people.db"
                    loading(key, sqlite_file, path, part)
                    db.attach(table, f"sqlite:///{path}", source="people", metadata=metadata)
                elif key == "postgres":
                    cluster = ExitStack()
                    stack.push(cluster)
                    url = cluster.enter_context(pgfixture.postgres_cluster())
                    loading(key, postgres_table, url, part)
                    db.attach(table, url, source="people", metadata=metadata)
                    backend, _ = db.backend_for(table)
                    versions["PostgreSQL"] = str(backend.fetch("SHOW server_version").iloc[0, 0]).split()[0]
                else:
                    path = work / "people.parquet"
                    loading(key, parquet_file, path, part, 1)
                    db.attach(table, "spark://local[2]", source=str(path), metadata=metadata)
                t = progress.add_task(f"{ENGINES[key]}: Q1–Q3, raw and privdb", total=len(sql_mod.QUERIES))
                for query in sql_mod.QUERIES:
                    rows.append(measure(db, table, key, sizes[key], query, args.repeats))
                    progress.advance(t)
                if key == "postgres":
                    db._engines.pop(url).close()  # before the cluster goes away
                    cluster.close()
            db.close()
            if big_rows:
                copies = max(1, big_rows // n)
                path = work / "big.parquet"
                t = progress.add_task(f"writing {copies * n:,} rows of Parquet", total=copies * n)
                t0 = time.perf_counter()
                parquet_file(path, frame, copies, lambda k: progress.advance(t, k))
                parquet_s, parquet_mib = time.perf_counter() - t0, path.stat().st_size / 2**20
                del frame
                progress.add_task(f"Spark local[2]: Q1 on {copies * n:,} rows (subprocess)", total=None)
                big = run_spark_big(path, copies * n, args.big_repeats, work)
                big_rows = copies * n
    finally:
        shutil.rmtree(work, ignore_errors=True)

    table_out = Table(title=f"DP-SELECT, row-level, ε = 1 (best of {args.repeats})")
    for i, column in enumerate(COLUMNS):
        table_out.add_column(column, justify="right" if i >= 3 or i == 1 else "left")
    for cells in table_rows(rows):
        table_out.add_row(*cells)
    parts = Table(title="privdb by stage (s)")
    for i, column in enumerate(PART_COLUMNS):
        parts.add_column(column, justify="right" if i >= 2 else "left")
    for cells in part_rows(rows):
        parts.add_row(*cells)
    extra = {
        "versions": versions,
        "load": load,
        "loads": ", ".join(f"{ENGINES[k]} {v:.1f} ({sizes[k]:,} rows)" for k, v in loads.items()),
        "big_rows": big_rows,
        "parquet_mib": parquet_mib,
        "parquet_s": parquet_s,
    }
    notes = [
        line.replace("**", "")
        for line in (*targets(rows, big), *big_lines(big, big_rows, parquet_mib, parquet_s))
    ]
    console.print(table_out, parts, machine(versions), f"loads (s): {extra['loads']}", *notes, sep="\n")
    if not args.quick:
        command = shlex.join([".venv/bin/python", "bench/engines.py", *sys.argv[1:]])
        write_section("engines", markdown(rows, big, extra, args.repeats, command))
        console.print(f"Wrote the engines section of {DOC}")


if __name__ == "__main__":
    main()
