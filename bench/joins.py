"""privdb's DP-SELECT over JOINs against the raw join on DuckDB (the floor) and Qrlew, in one run (issue 14).

Three generated tables, written by DuckDB itself (SQL over ``range()`` with ``hash(i, seed, …)``, so the same
seed gives the same rows whatever the thread count) into a DuckDB file cached under ``bench/.data``:

- ``people(pid BIGINT, age INT 0..100, income DOUBLE 0..500,000, state: 1 of 50 codes, region_code INT
  1..9)``, ``--people`` rows (default 10,000,000); privacy unit ``pid``, one row per person;
- ``visits(pid BIGINT, day DATE, cost DOUBLE 0..5,000, kind: 1 of 5 texts)``, 3 × ``--people`` rows, each with
  ``pid = 1 + (⌊N·u²⌋·a mod N)`` (u uniform, a a multiplier prime to N): a skewed number of visits per person,
  mean 3, most people 0–5, thousands with 50 or more, the busiest with thousands (the data's own figures are
  printed and written with the results);
- ``regions(code INT, name TEXT)``, the 9 US Census divisions: public.

Queries at ε = 1 (user-level privacy: the unit is the person, ``pid``; people ``max_contributions: 1``,
visits ``max_contributions: 10, max_groups: 1``; regions ``public: true``):

- J1 ``p.state, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid GROUP BY
  p.state``
- J2 ``r.name, COUNT(*), AVG(p.income) FROM people p JOIN regions r ON p.region_code = r.code GROUP BY
  r.name``
- J3 ``v.kind, COUNT(*), SUM(v.cost) FROM visits v GROUP BY v.kind`` (one table, for reference)

**raw DuckDB** (the floor, not private) is the same join and aggregate as plain SQL on privdb's own DuckDB
connection (``db.backend.fetch``). **privdb** is ``engine.run(db, analyst, "DP-SELECT ε …")`` end to end; ε
moves by 1e-9 per repetition so that no run is served from privdb's store of answers. Both run in a
subprocess of this file in the project's venv (``--privdb-worker``) on a copy of the data file, so that its
memory is its own. **Qrlew** (``pyqrlew``, Sarus's SQL-to-DP-SQL rewriter) pins ``numpy<2`` and needs a
SQLAlchemy dialect for DuckDB, so it runs in its own venv under ``bench/.peers/qrlew`` (created here with
``python -m venv`` and pip) as a subprocess of this file (``--qrlew-worker``: standard library only at import
time), on the cached data file itself, read-only: it builds its ``Dataset`` from the file through
SQLAlchemy (``duckdb-sqlalchemy``), declares the same bounds, key values and privacy unit (visits → people by
pid), rewrites each query with ``rewrite_with_differential_privacy`` and runs the rewritten SQL on DuckDB.
Its time is the rewrite plus the engine query. Qrlew charges each of a query's k Gaussian mechanisms the full
(ε, δ) it is given, so the worker gives it (1/k, 10⁻⁶/k) and checks every mechanism's noise multiplier:
(1, 10⁻⁶) per query in all.

Timing: ``time.perf_counter``, one warm-up then best of ``--repeats`` (3), the implementations of a query
interleaved run by run. Memory: the peak resident set (``VmHWM`` of /proc/self/status, reset through
/proc/self/clear_refs before each run) of the worker process while each implementation's query runs, the
largest over its runs; the data file is DuckDB's, so this includes DuckDB's buffer cache of the tables.

Run: ``.venv/bin/python bench/joins.py [--people N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``joins`` markers; ``--quick`` (200,000 people) only prints.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _doc import (
    DOC,
    PEERS,
    PeerUnavailable,
    cpu_model,
    ensure_venv,
    markers,
    memory_gib,
    run_json_worker,
    wrap,
    write_section,
)

ROOT = Path(__file__).resolve().parents[1]
START, END = markers("joins")
DATA = ROOT / "bench" / ".data"  # generated tables and scratch databases: made here, never committed
QRLEW_VENV = PEERS / "qrlew"
QRLEW_VERSION = "0.9.27"  # the latest pyqrlew on PyPI when written
DUCKDB_SQLALCHEMY_VERSION = "1.5.6.4"  # DuckDB's SQLAlchemy dialect; the newest that accepts duckdb 2.0
EPS = 1.0
QRLEW_DELTA = 1e-6  # Qrlew's mechanisms are Gaussian: they need δ > 0
ANALYST = "bench"
QUICK_PEOPLE = 200_000
VISITS_PER_PERSON = 3
SEED = 14
SKEW = 2.0  # visit i goes to the person of rank ⌊N·u^SKEW⌋
SCRAMBLE = 2654435761  # ranks are spread over pids by this multiplier modulo N (a prime)
TARGET = 2.0  # privdb ÷ raw DuckDB on a join

STATES = [  # the 50 states' postal codes
    *("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY"),
    *("LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND"),
    *("OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"),
]
KINDS = ["checkup", "emergency", "lab", "pharmacy", "specialist"]
REGIONS = [
    "New England",
    "Middle Atlantic",
    "East North Central",
    "West North Central",
    "South Atlantic",
    "East South Central",
    "West South Central",
    "Mountain",
    "Pacific",
]

METADATA: dict[str, dict[str, Any]] = {
    "people": {
        "privacy_unit": "pid",
        "max_contributions": 1,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "age": {"type": "int", "lower": 0, "upper": 100},
            "income": {"type": "float", "lower": 0, "upper": 500_000},
            "state": {"type": "category", "values": STATES},
            "region_code": {"type": "int", "lower": 1, "upper": 9},
        },
    },
    "visits": {
        "privacy_unit": "pid",
        "max_contributions": 10,
        "max_groups": 1,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "cost": {"type": "float", "lower": 0, "upper": 5000},
            "kind": {"type": "category", "values": KINDS},
        },
    },
    "regions": {
        "public": True,
        "columns": {"code": {"type": "int"}, "name": {"type": "text", "values": REGIONS}},
    },
}


@dataclass(frozen=True)
class Query:
    key: str
    label: str
    body: str  # everything after SELECT

    def raw(self) -> str:
        return f"SELECT {self.body}"

    def dp(self, epsilon: float) -> str:
        return f"DP-SELECT {epsilon!r} {self.body}"

    def qrlew(self) -> str:
        # Qrlew's Dataset names tables schema.table: DuckDB's default schema is ``main``
        return re.sub(r"\b(FROM|JOIN) (people|visits|regions)\b", r"\1 main.\2", self.raw())


QUERIES = [
    Query(
        "J1",
        "people ⋈ visits: state, COUNT, SUM, AVG(cost)",
        "p.state, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid "
        "GROUP BY p.state",
    ),
    Query(
        "J2",
        "people ⋈ regions (public): name, COUNT, AVG(income)",
        "r.name, COUNT(*), AVG(p.income) FROM people p JOIN regions r ON p.region_code = r.code "
        "GROUP BY r.name",
    ),
    Query(
        "J3",
        "visits alone: kind, COUNT, SUM(cost)",
        "v.kind, COUNT(*), SUM(v.cost) FROM visits v GROUP BY v.kind",
    ),
]
JOINS = ("J1", "J2")


# ------------------------------------------------------------------------------------------------ data
def data_path(people: int) -> Path:
    return DATA / f"joins-{people}-seed{SEED}.duckdb"


def _text_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def generate(path: Path, people: int) -> None:
    """Write people, visits and regions into a new DuckDB file at ``path`` (complete or absent)."""
    import duckdb

    if math.gcd(SCRAMBLE, people) != 1:
        raise ValueError(f"--people must be prime to {SCRAMBLE}")
    visits = VISITS_PER_PERSON * people
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    con = duckdb.connect(str(partial))
    s = SEED
    uniform = f"(hash(j, {s}, 5) >> 11)::DOUBLE / 9007199254740992"  # 53 random bits: [0, 1)
    rank = f"floor({people} * pow({uniform}, {SKEW}))::BIGINT"
    con.execute(
        f"""
        CREATE TABLE people AS
        SELECT i::BIGINT AS pid,
               (hash(i, {s}, 1) % 101)::INTEGER AS age,
               (hash(i, {s}, 2) % 50000001)::BIGINT / 100 AS income,
               {_text_list(STATES)}[1 + (hash(i, {s}, 3) % {len(STATES)})::BIGINT] AS state,
               (1 + hash(i, {s}, 4) % 9)::INTEGER AS region_code
        FROM range(1, {people} + 1) AS r(i);
        CREATE TABLE visits AS
        SELECT (1 + ({rank} * {SCRAMBLE}) % {people})::BIGINT AS pid,
               DATE '2024-01-01' + (hash(j, {s}, 6) % 366)::INTEGER AS day,
               (hash(j, {s}, 7) % 500001)::BIGINT / 100 AS cost,
               {_text_list(KINDS)}[1 + (hash(j, {s}, 8) % {len(KINDS)})::BIGINT] AS kind
        FROM range({visits}) AS r(j);
        CREATE TABLE regions AS
        SELECT code::INTEGER AS code, name
        FROM (VALUES {", ".join(f"({i}, '{n}')" for i, n in enumerate(REGIONS, 1))}) AS t(code, name);
        """
    )
    con.close()
    partial.rename(path)


def data_stats(path: Path) -> dict[str, Any]:
    """Rows per table and the distribution of visits per person (cached beside the file)."""
    cached = path.with_suffix(".stats.json")
    if cached.exists():
        stats: dict[str, Any] = json.loads(cached.read_text(encoding="utf-8"))
        return stats
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    row = con.execute(
        """
        WITH per AS (
            SELECT p.pid, COUNT(v.pid) AS n FROM people p LEFT JOIN visits v ON v.pid = p.pid GROUP BY p.pid
        )
        SELECT COUNT(*), SUM(n), AVG(n), MEDIAN(n), MAX(n),
               COUNT(*) FILTER (n = 0), COUNT(*) FILTER (n > 10), COUNT(*) FILTER (n >= 50),
               SUM(n) FILTER (n > 10)
        FROM per
        """
    ).fetchone()
    size = path.stat().st_size
    con.close()
    assert row is not None
    keys = ["people", "visits", "mean", "median", "max", "none", "over_10", "over_50", "visits_over_10"]
    stats = dict(zip(keys, [float(x) if isinstance(x, float) else int(x) for x in row], strict=True))
    stats |= {"regions": len(REGIONS), "file_bytes": size}
    cached.write_text(json.dumps(stats), encoding="utf-8")
    return stats


def ensure_data(people: int, log: Callable[[str], None]) -> Path:
    path = data_path(people)
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / ".gitignore").write_text("# generated by bench scripts\n*\n", encoding="utf-8")
    if not path.exists():
        log(f"Generating {people:,} people and {VISITS_PER_PERSON * people:,} visits in DuckDB → {path} …")
        t0 = time.perf_counter()
        generate(path, people)
        log(f"  done in {time.perf_counter() - t0:.1f} s")
    return path


# ---------------------------------------------------------------------------------------- measurement
# Shared by both workers (each in its own venv): standard library only.
def _reset_peak() -> bool:
    """Reset this process's peak resident set (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    except OSError:
        return False
    return True


def _status_mib(field: str) -> float | None:
    """A memory figure of /proc/self/status (``VmHWM``, ``VmRSS``) in MiB; None where there is none."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return None


def _peak_mib() -> float:
    """This process's peak resident set since the last reset (or since it started), in MiB."""
    peak = _status_mib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


def best_of(
    runs: dict[str, Callable[[int], object]], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall time per named run, and its peak resident set (MiB, the largest over its runs).

    One warm-up (``i = 0``), then ``repeats`` rounds, the runs interleaved; each gets the repetition index.
    """
    best = dict.fromkeys(runs, math.inf)
    peak = dict.fromkeys(runs, 0.0)
    for i in range(repeats + 1):
        for name, run in runs.items():
            _reset_peak()
            t0 = time.perf_counter()
            run(i)
            took = time.perf_counter() - t0
            peak[name] = max(peak[name], _peak_mib())
            if i:
                best[name] = min(best[name], took)
    return best, peak


def worker_main(work: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """A worker's entry point: the spec on stdin, its figures as one JSON line on stdout."""
    spec = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # whatever a library prints stays off the JSON channel
        result = work(spec)
    real_stdout.write(json.dumps(result) + "\n")


# ------------------------------------------------------------------------------- the privdb worker
def _privdb_query(db: Any, q: Query, repeats: int) -> dict[str, Any]:
    """The floor and privdb on one query, interleaved; then privdb by stage. A refusal is reported."""
    from privdb.errors import PrivdbError
    from privdb.sql import engine
    from privdb.sql.noise import add_noise
    from privdb.sql.plan import Plan

    info: dict[str, Any] = {}

    def raw(i: int) -> object:
        return db.backend.fetch(q.raw())

    def dp(i: int) -> None:
        eps = EPS + (i + 1) * 1e-9  # a new ε each run: never an answer from privdb's store
        result = engine.run(db, ANALYST, q.dp(eps))
        if result.cached or not math.isclose(result.epsilon_spent, eps):
            raise RuntimeError(f"privdb answered {q.key} from its store: the timing would be void")
        info["rows_out"], info["delta"] = len(result.rows), result.delta_spent

    try:
        dp(-1)  # ε = 1 exactly; a refusal costs nothing and is reported
    except PrivdbError as err:
        info["error"] = {"code": err.code, "message": str(err)}
        best, peak = best_of({"raw": raw}, repeats)
        return info | {"seconds": best, "peak_mib": peak}
    best, peak = best_of({"raw": raw, "privdb": dp}, repeats)
    info |= {"seconds": best, "peak_mib": peak}
    try:  # the stage breakdown is extra: an API change must not end the run
        plan, sql = engine.prepare(db, q.dp(EPS))
        if not isinstance(plan, Plan):
            raise TypeError(f"{q.key} planned as {type(plan).__name__}, not an aggregate Plan")
        info["engine_sql"] = sql
        frame = db.backend.fetch(sql)
        parts, _ = best_of(
            {
                "prepare": lambda i: engine.prepare(db, q.dp(EPS + i * 1e-9)),
                "engine SQL": lambda i: db.backend.fetch(sql),
                "noise": lambda i: add_noise(plan, frame),
            },
            repeats,
        )
        info["parts"] = parts | {"rest": max(0.0, best["privdb"] - sum(parts.values()))}
    except Exception as err:
        info["parts_error"] = f"{type(err).__name__}: {err}"
    return info


def privdb_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """privdb and the floor on a copy of the data file; runs in the project's venv."""
    from privdb.database import Database

    work = Path(spec["work"])
    work.mkdir(parents=True)
    shutil.copyfile(spec["data"], work / "data.duckdb")
    out: dict[str, Any] = {"queries": {}}
    with Database(work) as db:
        t0 = time.perf_counter()
        for table, meta in spec["metadata"].items():
            db.set_metadata(table, meta)  # with a privacy unit: writes each row's per-unit row count
        out["load_seconds"] = time.perf_counter() - t0
        db.grant(ANALYST, epsilon=1e6, delta=1e-3)
        out["setup_peak_mib"], out["resident_mib"] = _peak_mib(), _status_mib("VmRSS")
        for q in (Query(**q) for q in spec["queries"]):
            print(f"  privdb: {q.key}: raw DuckDB and privdb", file=sys.stderr, flush=True)
            out["queries"][q.key] = _privdb_query(db, q, int(spec["repeats"]))
    out["per_run_peak"] = _reset_peak()
    out["versions"] = {n: importlib.metadata.version(n) for n in ("privdb", "duckdb", "pandas", "numpy")}
    return out


# -------------------------------------------------------------------------------- the Qrlew worker
# Runs inside the peer venv (python bench/joins.py --qrlew-worker), which has pyqrlew, duckdb and SQLAlchemy
# but not privdb: imports stay inside the functions.
UNIT = [("people", [], "pid"), ("visits", [("pid", "people", "pid")], "pid")]  # Qrlew's; regions: public


def _gaussian_multiplier(epsilon: float, delta: float) -> float:
    """The classical Gaussian mechanism's σ / sensitivity for (ε, δ), ε ≤ 1 (Dwork and Roth, Thm A.1)."""
    return math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def qrlew_dataset(path: str, metadata: dict[str, Any]) -> Any:
    """Qrlew's ``Dataset`` of the file, with privdb's bounds and key values declared."""
    import pyqrlew  # type: ignore[import-not-found, unused-ignore]  # only in the peer venv
    import sqlalchemy  # type: ignore[import-not-found, unused-ignore]

    sql_engine = sqlalchemy.create_engine(f"duckdb:///{path}", connect_args={"read_only": True})
    dataset = pyqrlew.Dataset.from_database("bench", sql_engine, "main")
    sql_engine.dispose()  # one DuckDB configuration per file and process: the worker's connection opens later
    for table, meta in metadata.items():
        for column, col in meta["columns"].items():
            if "lower" in col:
                dataset = dataset.with_range("main", table, column, col["lower"], col["upper"])
            if "values" in col:
                dataset = dataset.with_possible_values("main", table, column, [str(v) for v in col["values"]])
    return dataset.with_constraint("main", "people", "pid", "Unique")


class QrlewQuery:
    """One query through Qrlew, held to ε = 1 and δ in total: its k mechanisms get (1/k, δ/k) each."""

    def __init__(self, dataset: Any, q: Query, delta: float, bounds: dict[str, Any]) -> None:
        self.dataset, self.q, self.bounds = dataset, q, bounds
        _, event = self.rewrite(EPS, delta)
        self.mechanisms = len(event.get("events", [event]))  # each is charged the full (ε, δ) it is given
        self.epsilon, self.delta = EPS / self.mechanisms, delta / self.mechanisms
        self.sql, event = self.rewrite(self.epsilon, self.delta)
        events = event.get("events", [event])
        self.multiplier = _gaussian_multiplier(self.epsilon, self.delta)
        if {e["class_name"] for e in events} != {"GaussianDpEvent"} or any(
            not math.isclose(e["noise_multiplier"], self.multiplier, rel_tol=1e-9) for e in events
        ):
            raise RuntimeError(f"unexpected DP events for {q.key}: {events}")

    def rewrite(self, epsilon: float, delta: float) -> tuple[str, dict[str, Any]]:
        """Qrlew's DP rewrite of the query (its SQL, PostgreSQL dialect) and its DpEvent."""
        relation = self.dataset.relation(self.q.qrlew())
        private = relation.rewrite_with_differential_privacy(
            self.dataset, UNIT, {"epsilon": epsilon, "delta": delta}, **self.bounds
        )
        event: dict[str, Any] = private.dp_event().to_dict()
        return private.relation().to_query(), event


def _qrlew_query(con: Any, dataset: Any, q: Query, spec: dict[str, Any]) -> dict[str, Any]:
    """The floor (on the worker's connection) and Qrlew on one query, interleaved; then Qrlew by stage."""
    repeats = int(spec["repeats"])
    bounds = {"max_multiplicity": spec["max_multiplicity"], "max_privacy_unit_groups": spec["max_groups"]}
    answers: list[Any] = []

    def raw(i: int) -> object:
        return con.execute(q.raw()).fetchall()

    try:
        query = QrlewQuery(dataset, q, float(spec["delta"]), bounds)

        def qrlew(i: int) -> None:
            sql, _ = query.rewrite(query.epsilon, query.delta)
            answers.append(con.execute(sql).fetchall())

        best, peak = best_of({"raw": raw, "qrlew": qrlew}, repeats)
    except Exception as err:  # refused by Qrlew, or its SQL failed on DuckDB: reported
        best, peak = best_of({"raw": raw}, repeats)
        return {"error": f"{type(err).__name__}: {err}", "seconds": best, "peak_mib": peak}
    parts, _ = best_of(
        {
            "rewrite": lambda i: query.rewrite(query.epsilon, query.delta),
            "engine SQL": lambda i: con.execute(query.sql).fetchall(),
        },
        repeats,
    )
    return {
        "seconds": best,
        "peak_mib": peak,
        "parts": parts,
        "mechanisms": query.mechanisms,
        "epsilon_each": query.epsilon,
        "delta_each": query.delta,
        "noise_multiplier": query.multiplier,
        "rows_out": len(answers[-1]),
        "sql_chars": len(query.sql),
    }


def qrlew_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time Qrlew on the DuckDB file ``spec["data"]`` (read-only); returns figures and settings."""
    import duckdb

    names = ("pyqrlew", "duckdb", "duckdb-sqlalchemy", "sqlalchemy", "numpy")
    out: dict[str, Any] = {
        "versions": {n: importlib.metadata.version(n) for n in names},
        "python": platform.python_version(),
        "queries": {},
    }
    t0 = time.perf_counter()
    dataset = qrlew_dataset(spec["data"], spec["metadata"])
    out["dataset_seconds"] = time.perf_counter() - t0
    con = duckdb.connect(spec["data"], read_only=True)
    out["setup_peak_mib"], out["resident_mib"] = _peak_mib(), _status_mib("VmRSS")
    for q in (Query(**q) for q in spec["queries"]):
        print(f"  qrlew: {q.key}", file=sys.stderr, flush=True)
        out["queries"][q.key] = _qrlew_query(con, dataset, q, spec)
    con.close()
    out["per_run_peak"] = _reset_peak()
    return out


# ------------------------------------------------------------------------------------- the peer's venv
def qrlew_requirements() -> list[str]:
    # the project's DuckDB, so that the peer reads the very same file format
    duck = importlib.metadata.version("duckdb")
    return [f"pyqrlew=={QRLEW_VERSION}", f"duckdb=={duck}", f"duckdb-sqlalchemy=={DUCKDB_SQLALCHEMY_VERSION}"]


def run_qrlew(spec: dict[str, Any]) -> dict[str, Any]:
    try:
        python = ensure_venv(QRLEW_VENV, qrlew_requirements())
    except (PeerUnavailable, OSError) as err:
        return {"error": f"Qrlew could not be installed: {err}"}
    argv = [str(python), str(Path(__file__).resolve()), "--qrlew-worker"]
    return run_json_worker(argv, spec, "the Qrlew worker failed (exit {code}); see its output above")


def run_privdb(spec: dict[str, Any]) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--privdb-worker"]
    return run_json_worker(argv, spec, "the privdb worker failed (exit {code}); see its output above")


# ------------------------------------------------------------------------------------------ report
def _secs(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:,.3f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:,.1f}×"


def _mib(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _get(side: dict[str, Any], key: str, what: str) -> Any:
    return side.get("queries", {}).get(key, {}).get(what)


def _time(side: dict[str, Any], key: str, name: str) -> float | None:
    value = (_get(side, key, "seconds") or {}).get(name)
    return None if value is None or not math.isfinite(value) else float(value)


def _largest_peak(side: dict[str, Any]) -> float | None:
    peaks = [p for info in side.get("queries", {}).values() for p in info.get("peak_mib", {}).values()]
    return max(peaks, default=None)


def _peak(side: dict[str, Any], key: str, name: str) -> float | None:
    value = (_get(side, key, "peak_mib") or {}).get(name)
    return None if value is None else float(value)


COLUMNS = ["query (ε = 1)", "raw DuckDB s", "privdb s", "Qrlew s", "privdb ÷ raw", "Qrlew ÷ privdb"]
COLUMNS += ["peak RSS MiB: raw / privdb / Qrlew"]


def table_rows(mine: dict[str, Any], peer: dict[str, Any]) -> list[list[str]]:
    rows = []
    for q in QUERIES:
        raw, dp, qr = _time(mine, q.key, "raw"), _time(mine, q.key, "privdb"), _time(peer, q.key, "qrlew")
        dp_cell = (
            f"refused ({_get(mine, q.key, 'error')['code']})" if _get(mine, q.key, "error") else _secs(dp)
        )
        qr_cell = "failed" if _get(peer, q.key, "error") or "error" in peer else _secs(qr)
        memory = " / ".join(
            _mib(m)
            for m in (_peak(mine, q.key, "raw"), _peak(mine, q.key, "privdb"), _peak(peer, q.key, "qrlew"))
        )
        rows.append(
            [f"{q.key} {q.label}", _secs(raw), dp_cell, qr_cell, _ratio(dp, raw), _ratio(qr, dp), memory]
        )
    return rows


PART_COLUMNS = ["query", "privdb s", "prepare s", "engine SQL s", "noise s", "rest s", "engine SQL ÷ raw"]


def part_rows(mine: dict[str, Any]) -> list[list[str]]:
    out = []
    for q in QUERIES:
        p = _get(mine, q.key, "parts")
        if not p:
            continue
        raw = _time(mine, q.key, "raw")
        cells = [q.key, _secs(_time(mine, q.key, "privdb")), _secs(p["prepare"]), _secs(p["engine SQL"])]
        out.append([*cells, _secs(p["noise"]), _secs(p["rest"]), _ratio(p["engine SQL"], raw)])
    return out


def targets(mine: dict[str, Any]) -> list[str]:
    if "error" in mine:
        return [f"- privdb within {TARGET:.0f}× of the raw join: **not measured** ({mine['error']})"]
    found, refused = [], []
    for key in JOINS:
        err = _get(mine, key, "error")
        if err:
            refused.append(f"{key} refused: `{err['code']}`: {err['message']}")
            continue
        raw, dp = _time(mine, key, "raw"), _time(mine, key, "privdb")
        if raw and dp:
            found.append((key, dp / raw))
    text = ", ".join(f"{key} {r:.1f}×" for key, r in found)
    if refused or not found:
        verdict = "**not met**: " + "; ".join(refused) if refused else "not measured"
        return [f"- privdb within {TARGET:.0f}× of the raw join: {text + '; ' if text else ''}{verdict}"]
    met = "met" if max(r for _, r in found) <= TARGET else "**missed**"
    return [f"- privdb within {TARGET:.0f}× of the raw join on DuckDB: {text} ({met})"]


def data_notes(stats: dict[str, Any]) -> str:
    p, v = stats["people"], stats["visits"]
    return (
        f"{p:,} people, {v:,} visits and {stats['regions']} regions, generated in DuckDB (seed {SEED}; "
        f"{stats['file_bytes'] / 2**30:.2f} GiB file). Visits per person: mean {stats['mean']:.2f}, median "
        f"{stats['median']:g}, max {stats['max']:,}; {stats['none'] / p:.1%} of people have none, "
        f"{stats['over_10']:,} ({stats['over_10'] / p:.2%}) more than 10 — the visits' `max_contributions` — "
        f"holding {stats['visits_over_10'] / v:.1%} of all visits, and {stats['over_50']:,} have 50 or more."
    )


def machine(mine: dict[str, Any], load: list[float]) -> str:
    libs = ", ".join(f"{n} {v}" for n, v in (mine.get("versions") or {}).items())
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        f"{cpu_model()}, {os.cpu_count()} CPUs, {memory_gib():.0f} GiB; Python {platform.python_version()}, "
        f"{libs} (commit {commit or '?'}); 1-minute load average {load[0]:.2f} at the start, "
        f"{load[1]:.2f} at the end (other work on the machine); "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )


def peer_notes(peer: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    if "error" in peer:
        return [f"**Qrlew was not measured**: {peer['error']}"]
    v = peer["versions"]
    lines = [
        f"- **Qrlew**: pyqrlew {v['pyqrlew']} (numpy {v['numpy']}, SQLAlchemy {v['sqlalchemy']}, "
        f"duckdb-sqlalchemy {v['duckdb-sqlalchemy']}, duckdb {v['duckdb']}, Python {peer['python']}) "
        "in its own venv `bench/.peers/qrlew` that the script creates (`python -m venv`, then `pip install "
        f"{' '.join(qrlew_requirements())}`): pyqrlew pins `numpy<2` (the project has numpy 2) and "
        "reads tables through SQLAlchemy, which the project does not use. It runs as a subprocess, on "
        "the generated DuckDB file itself (read-only), with DuckDB's default settings, as privdb's "
        "connection has.",
        '- Setup, off the clock: `Dataset.from_database("bench", engine, "main")` (it counts each '
        f"table's rows) in {peer['dataset_seconds']:.1f} s, then `with_range` for age, income, "
        "region_code and cost, `with_possible_values` for state, kind and regions.name (privdb's "
        "declared values: no key thresholds), `with_constraint(people.pid, Unique)`. Privacy unit "
        '`[("people", [], "pid"), ("visits", [("pid", "people", "pid")], "pid")]`: a visit belongs to '
        "the person its pid names; regions is public (left out). "
        f"`max_multiplicity={spec['max_multiplicity']}` (privdb's visits `max_contributions`), "
        f"`max_privacy_unit_groups={spec['max_groups']}` (its `max_groups`).",
        "- Privacy: Qrlew answers with Gaussian mechanisms, so it needs δ > 0 (privdb charges δ = 0 "
        'here). Its `rewrite_with_differential_privacy(…, {"epsilon": ε, "delta": δ})` gives **each** '
        "of the query's k mechanisms the whole (ε, δ) (its DpEvent lists k Gaussian events, each with "
        "noise multiplier √(2 ln(1.25/δ))/ε), so the worker passes (1/k, δ/k) and checks every "
        f"multiplier: (ε, δ) = (1, {QRLEW_DELTA:g}) per query by basic composition.",
    ]
    charged = []
    for q in QUERIES:
        info = peer["queries"].get(q.key, {})
        if "error" in info:
            charged.append(f"{q.key}: failed ({info['error'][:300]})")
        else:
            charged.append(
                f"{q.key}: {info['mechanisms']} × (ε {info['epsilon_each']:.4g}, δ "
                f"{info['delta_each']:.2g}), noise multiplier {info['noise_multiplier']:.1f}; "
                f"{info['rows_out']} rows out; rewritten SQL {info['sql_chars']:,} characters, rewrite "
                f"{_secs(info['parts']['rewrite'])} s, engine {_secs(info['parts']['engine SQL'])} s"
            )
    lines.append("- Per query: " + "; ".join(charged) + ".")
    lines.append(
        "- Why Qrlew: it was the first peer of the three tried (Qrlew, OpenDP's Polars API, Tumult "
        "Analytics) and it rewrites a user-level join, with the privacy unit carried from people to "
        "visits, so OpenDP and Tumult were not installed. What did not work on the way: Qrlew reads a "
        "database's schema through SQLAlchemy, and with `duckdb-engine` 0.17 (SQLAlchemy 2.x) that "
        "reflection fails on DuckDB (`pg_catalog.pg_collation` not found); `duckdb-sqlalchemy` reflects "
        "it. Qrlew writes PostgreSQL SQL, which DuckDB runs unchanged for these three queries."
    )
    raws = [f"{q.key} {_secs(_time(peer, q.key, 'raw'))} s" for q in QUERIES if _time(peer, q.key, "raw")]
    lines.append(
        "- The raw queries on the worker's own read-only connection, for comparison with the floor (same "
        "tables, other process): " + ", ".join(raws) + "."
    )
    return lines


def why_joins_cost(mine: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """What privdb's engine SQL for the joins does beyond the floor, read off the SQL this run used."""
    sql = {q.key: _get(mine, q.key, "engine_sql") or "" for q in QUERIES}
    every_unit = [k for k in JOINS if "PARTITION BY" in sql[k] and "__privdb_rows_per_" not in sql[k]]
    if not every_unit:
        return []
    shortcut = "__privdb_rows_per_" in sql["J3"]
    text = (
        "Why a join costs more than the floor: privdb's engine SQL for "
        + " and ".join(every_unit)
        + " (`engine.prepare`) first aggregates the joined rows per unit and key (`GROUP BY unit, key`), "
        "keeps `max_groups` keys per unit (`ROW_NUMBER() OVER (PARTITION BY unit ORDER BY random())`) "
        "and scales each unit's partial sums by `LEAST(1, m / rows)`, for **every** unit: the shortcut "
        "of single-table queries, which skips bounding for the units whose stored row count is at most "
        "min(m, G)"
        + (" (J3 takes it: those rows are aggregated directly, only the rest per unit)" if shortcut else "")
        + ", is not applied to a join."
    )
    if "AS DOUBLE) = CAST(" in sql["J1"]:
        text += " The join keys are compared as DOUBLE (`CAST(pid AS DOUBLE) = CAST(pid AS DOUBLE)`)."
    if "J2" in every_unit:
        text += (
            f" So J2 groups all {stats['people']:,} people by pid, where the floor groups them straight "
            "into the 9 regions."
        )
    return [text, ""]


def markdown(
    mine: dict[str, Any],
    peer: dict[str, Any],
    stats: dict[str, Any],
    spec: dict[str, Any],
    command: str,
    load: list[float],
) -> str:
    lines = [START, "## JOINs: privdb's DP-SELECT over a join, the raw join on DuckDB, Qrlew", ""]
    lines += [
        f"Written by `bench/joins.py`; command: `{command}`",
        "",
        f"Machine: {machine(mine, load)}",
        "",
        "Data: " + data_notes(stats),
        "",
        "User-level privacy: the privacy unit is the person (`pid`); people `max_contributions: 1`, "
        "visits `max_contributions: 10, max_groups: 1`, regions `public: true` (privdb's metadata; "
        "Qrlew's equivalent below). ε = 1 per query. Seconds are wall time, best of "
        f"{spec['repeats']} after one warm-up, the implementations of a query interleaved. Raw DuckDB "
        "(the floor, not private) is the same join and aggregate as plain SQL on privdb's own "
        "connection. privdb is `engine.run` end to end (plan, budget reservation, engine SQL, noise, "
        "commit, stored answer); its ε moves by 1e-9 per repetition so no run is served from its store "
        "of answers. Peak RSS: the worker process's peak resident set while that implementation's query "
        'ran (largest over its runs), DuckDB\'s cache of the tables included. "Qrlew ÷ privdb" above 1× '
        "means privdb is faster.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(mine, peer)]
    if not (mine.get("per_run_peak") and peer.get("per_run_peak", True)):
        lines += ["", "(This kernel could not reset the peak: each figure is its process's peak so far.)"]
    lines += ["", "Targets:", "", *targets(mine), ""]
    if "error" not in mine:
        lines.append(
            "privdb's side: loading the metadata (which writes each row's per-unit row count, read by "
            f"the user-level rewrite) took {mine['load_seconds']:.1f} s, off the clock; the worker's "
            f"peak resident set through the load {_mib(mine['setup_peak_mib'])} MiB (DuckDB's `UPDATE`), "
            f"resident set before the first query {_mib(mine['resident_mib'])} MiB, largest peak of a query "
            f"{_mib(_largest_peak(mine))} MiB. Qrlew's worker: {_mib(peer.get('resident_mib'))} MiB "
            f"resident before its first query, largest peak {_mib(_largest_peak(peer))} MiB."
        )
        lines.append("")
    lines += why_joins_cost(mine, stats)
    parts = part_rows(mine)
    if parts:
        lines += [
            "Where privdb's time goes (each stage timed alone, best of the same repeats): `engine.prepare` "
            "(parse, plan, bind), the rewritten engine SQL (`db.backend.fetch`), `add_noise`, and the rest "
            "(catalog and ledger) = total − stages, floored at 0:",
            "",
            "| " + " | ".join(PART_COLUMNS) + " |",
            "|" + "---|" * len(PART_COLUMNS),
        ]
        lines += ["| " + " | ".join(cells) + " |" for cells in parts]
        lines.append("")
    refused = [q.key for q in QUERIES if _get(mine, q.key, "error")]
    if refused:
        lines += [
            "privdb refused "
            + "; ".join(
                f"{k}: `{_get(mine, k, 'error')['code']}`: {_get(mine, k, 'error')['message']}"
                for k in refused
            )
            + ". Its raw time is still measured.",
            "",
        ]
    lines += ["Peer settings:", "", *peer_notes(peer, spec), END]
    return "\n".join(wrap(line) for line in lines)


# -------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description="DP-SELECT over JOINs: privdb against raw DuckDB and Qrlew.")
    parser.add_argument("--people", type=int, default=10_000_000, help="people (visits: 3×; default 10M)")
    parser.add_argument(
        "--quick", action="store_true", help=f"smoke run on {QUICK_PEOPLE:,} people; prints only"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up (default 3)")
    parser.add_argument("--privdb-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--qrlew-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="print (and, unless --quick, write to the docs) the figures of the last run of this size",
    )
    args = parser.parse_args()
    if args.privdb_worker:
        worker_main(privdb_worker)
        return
    if args.qrlew_worker:
        worker_main(qrlew_worker)
        return

    from rich.console import Console

    console = Console() if sys.stdout.isatty() else Console(width=200)
    people = QUICK_PEOPLE if args.quick else args.people
    saved = DATA / f"joins-{people}.results.json"
    if args.report_only:
        report(json.loads(saved.read_text(encoding="utf-8")), console, write=not args.quick)
        return
    load = os.getloadavg()
    path = ensure_data(people, console.print)
    stats = data_stats(path)
    queries = [{"key": q.key, "label": q.label, "body": q.body} for q in QUERIES]
    work = DATA / f"privdb-{os.getpid()}"
    spec = {"repeats": args.repeats, "queries": queries, "metadata": METADATA, "data": str(path)}
    try:
        console.print("privdb and the raw queries (worker in this venv) …")
        mine = run_privdb(spec | {"work": str(work)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.print(f"Qrlew ({QRLEW_VENV.relative_to(ROOT)}) …")
    peer_spec = spec | {"delta": QRLEW_DELTA, "max_multiplicity": 10, "max_groups": 1}
    peer = run_qrlew(peer_spec)
    results = {
        "mine": mine,
        "peer": peer,
        "stats": stats,
        "spec": peer_spec,
        "people": people,
        "load": [load[0], os.getloadavg()[0]],
        "command": shlex.join([".venv/bin/python", "bench/joins.py", *sys.argv[1:]]),
    }
    saved.write_text(json.dumps(results), encoding="utf-8")
    report(results, console, write=not args.quick)


def report(results: dict[str, Any], console: Any, *, write: bool) -> None:
    """Print the figures; with ``write``, rewrite the joins section of docs/benchmarks.md."""
    from rich.table import Table

    mine, peer, stats, spec = results["mine"], results["peer"], results["stats"], results["spec"]
    load, people = results["load"], results["people"]
    table = Table(title=f"DP-SELECT over joins, {people:,} people, ε = 1 (best of {spec['repeats']})")
    for i, column in enumerate(COLUMNS):
        table.add_column(column, justify="right" if i else "left")
    for cells in table_rows(mine, peer):
        table.add_row(*cells)
    console.print(table)
    if part_rows(mine):
        parts = Table(title="privdb by stage (s)")
        for i, column in enumerate(PART_COLUMNS):
            parts.add_column(column, justify="right" if i else "left")
        for cells in part_rows(mine):
            parts.add_row(*cells)
        console.print(parts)
    for key in (q.key for q in QUERIES):
        if _get(mine, key, "error"):
            console.print(f"privdb {key}: {_get(mine, key, 'error')}")
    if "error" in mine:
        console.print(f"privdb: {mine['error']}")
    notes = [line.replace("**", "") for line in (*targets(mine), *peer_notes(peer, spec))]
    console.print(machine(mine, load), data_notes(stats), *notes, sep="\n")
    if write:
        write_section("joins", markdown(mine, peer, stats, spec, results["command"], load))
        console.print(f"Wrote the joins section of {DOC}")


if __name__ == "__main__":
    main()
