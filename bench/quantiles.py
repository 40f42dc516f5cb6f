"""privdb's MEDIAN and QUANTILE in DP-SELECT against raw DuckDB (the floor), SmartNoise SQL and OpenDP.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, default 10,000,000), three
order statistics at ε = 1, two privacy settings:

- M1 ``MEDIAN(age)`` (int 0..100: 101 integer candidates)
- M2 ``MEDIAN(income)`` (float 0..500,000: 16,385 grid points, resolution 500,000/2^14 ≈ 30.52)
- Q90 ``QUANTILE(income, 0.9)``

**Row-level**: every row is one person (privdb: ``METADATA`` without ``privacy_unit``). **User-level**: the
privacy unit is ``pid`` with at most one contribution (``METADATA`` as is).

**Time.** The floor is DuckDB's exact ``median(col)`` / ``quantile_cont(col, q)`` on privdb's own connection;
privdb is ``engine.run(db, analyst, "DP-SELECT ε MEDIAN(col) FROM people")`` end to end, its ε moving by
1e-9 per repetition so that no run is served from privdb's store of answers; then privdb by stage
(``engine.prepare``; the histogram SQL of ``engine.histogram_queries`` run with ``db.backend.fetch``;
``add_noise``). One warm-up, then best of ``--repeats`` (5), interleaved run by run, as in bench/sql.py.
**SmartNoise SQL** runs in its own venv ``bench/.peers/smartnoise`` (made by bench/_doc.py's
``ensure_venv`` with bench/sql.py's requirements, reused here) as a subprocess of this very file
(``--smartnoise-worker``, standard library only at import time): every way of asking for a median or
percentile that its grammar knows is tried on the same DuckDB file through bench/sql.py's DB-API adapter,
and timed where it answers.
**OpenDP**'s ``make_private_quantile`` (Rust, in the project's venv) is timed once on the whole column,
row-level (a Python list; converting the column is off the clock).

**Error.** Mean absolute error at ε = 1 over ``--error-reps`` (100) releases, in value units (against
DuckDB's exact quantile) and in rank units (how far ``q·n`` lies from the answer's rank interval
``[#{x < y}, #{x ≤ y}]``; 0 for a true quantile), on the whole table and on its first ``--subset-rows``
(10,000) people, where the mechanisms' noise rather than the grid dominates. privdb: ``engine.run`` end to
end, ε = 1 − k·1e-9 (never served from its store). OpenDP 0.16: ``make_private_quantile`` on the same data,
same bounds, same candidates (privdb's grid points), ``symmetric_distance`` (privdb's default add/remove
neighbours, one row per person), ``max_divergence``, its scale found by ``binary_search_param`` for ε = 1.
On tables above 1,000,000 rows OpenDP's data-dependent part (``make_quantile_score_candidates``) runs once
and its selection (``make_noisy_max`` at ``make_private_quantile``'s scale) per release: the same
distribution as calling ``make_private_quantile`` each time (checked: the same privacy map), at 1/100 of
the time.

Run: ``.venv/bin/python bench/quantiles.py [--rows N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``quantiles`` markers; ``--quick`` (200,000 rows, 50 releases) only prints.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import importlib.util
import json
import math
import platform
import re
import shlex
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from _doc import DOC, markers, run_json_worker, wrap, write_section

ROOT = Path(__file__).resolve().parents[1]
START, END = markers("quantiles")
EPS = 1.0
ANALYST = "bench"
TABLE = "people"
SUBSET_TABLE = "people_subset"
QUICK_ROWS = 200_000
QUICK_REPS = 50
OPENDP_DIRECT_ROWS = 1_000_000  # above this, OpenDP's scores are computed once per statistic
TARGET_TIME = 3.0  # privdb ÷ raw DuckDB


def bench_sql() -> ModuleType:
    """bench/sql.py as a module (standard library only at import time): its timing loop, metadata, venv
    and DuckDB adapter are reused here, in both venvs."""
    if "bench_sql" in sys.modules:
        return sys.modules["bench_sql"]
    spec = importlib.util.spec_from_file_location("bench_sql", Path(__file__).resolve().parent / "sql.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_sql"] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Stat:
    key: str
    column: str
    q: float

    @property
    def label(self) -> str:
        return f"MEDIAN({self.column})" if self.q == 0.5 else f"QUANTILE({self.column}, {self.q:g})"

    def raw(self, table: str = TABLE) -> str:
        agg = f"median({self.column})" if self.q == 0.5 else f"quantile_cont({self.column}, {self.q!r})"
        return f"SELECT {agg} FROM {table}"

    def dp(self, epsilon: float, table: str = TABLE) -> str:
        return f"DP-SELECT {epsilon!r} {self.label} FROM {table}"

    def smartnoise_forms(self) -> list[str]:
        """Every spelling of this statistic that SmartNoise SQL's grammar might accept."""
        c, q = self.column, self.q
        forms = [f"MEDIAN({c})"] if q == 0.5 else []
        forms += [
            f"QUANTILE({c}, {q:g})",
            f"PERCENTILE_CONT({q:g}) WITHIN GROUP (ORDER BY {c})",
            f"PERCENTILE_DISC({q:g}) WITHIN GROUP (ORDER BY {c})",
            f"PERCENTILE_CONT({c})",
        ]
        return [f"SELECT {f} FROM main.{TABLE}" for f in forms]


STATS = [Stat("M1", "age", 0.5), Stat("M2", "income", 0.5), Stat("Q90", "income", 0.9)]
EXTREMES = ["SELECT MIN(age) FROM main.people", "SELECT MAX(income) FROM main.people"]
SETTINGS = {"row": "row-level", "user": "user-level (pid, ≤ 1)"}


# ----------------------------------------------------------------------------- the SmartNoise worker
# Runs inside the peer venv (python bench/quantiles.py --smartnoise-worker): smartnoise-sql, duckdb and
# pandas, not privdb. Imports stay inside the function.
def smartnoise_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Try each spelling of each statistic with SmartNoise SQL on ``spec["db"]``; time those it answers."""
    import duckdb
    import snsql  # type: ignore[import-not-found, unused-ignore]  # only in the peer venv
    from snsql.sql.private_reader import PrivateReader  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.reader.postgres import PostgresReader  # type: ignore[import-not-found, unused-ignore]

    sql_mod = bench_sql()
    con = duckdb.connect(spec["db"], read_only=True)
    base = PostgresReader(conn=sql_mod.DuckConnection(con))
    out: dict[str, Any] = {
        "versions": {
            name: importlib.metadata.version(name)
            for name in ("smartnoise-sql", "opendp", "duckdb", "pandas")
        },
        "python": platform.python_version(),
        "results": {},
    }
    for setting in spec["settings"]:
        reader = PrivateReader(
            base,
            spec["metadata"][setting],
            privacy=snsql.Privacy(epsilon=float(spec["epsilon"]), delta=float(spec["delta"])),
        )
        out["results"][setting] = {}
        for key, forms in spec["forms"].items():
            tried = []
            for sql in forms:
                print(f"  smartnoise: {setting}, {sql}", file=sys.stderr, flush=True)
                try:
                    answer = reader.execute(sql)
                except Exception as err:
                    tried.append({"sql": sql, "error": f"{type(err).__name__}: {str(err).splitlines()[0]}"})
                    continue
                best = sql_mod.best_of(
                    {"smartnoise": lambda i, r=reader, s=sql: r.execute(s)}, spec["repeats"]
                )
                tried.append({"sql": sql, "seconds": best["smartnoise"], "answer": repr(answer)[:200]})
            out["results"][setting][key] = tried
    con.close()
    return out


def worker_main() -> None:
    """Entry point inside the peer venv: the spec on stdin, the findings as one JSON line on stdout."""
    spec = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        result = smartnoise_worker(spec)
    real_stdout.write(json.dumps(result) + "\n")


def run_smartnoise(spec: dict[str, Any]) -> dict[str, Any]:
    """The worker in bench/sql.py's SmartNoise venv; its findings, or ``{"error": why}``."""
    sql_mod = bench_sql()
    try:
        python = sql_mod.ensure_venv(sql_mod.SMARTNOISE_VENV, sql_mod.smartnoise_requirements())
    except (sql_mod.PeerUnavailable, OSError) as err:
        return {"error": f"SmartNoise SQL could not be installed: {err}"}
    result = run_json_worker(
        [str(python), str(Path(__file__).resolve()), "--smartnoise-worker"],
        spec,
        "the SmartNoise worker failed (exit {code}); see its output above",
    )
    return result


def smartnoise_seconds(peer: dict[str, Any], setting: str, key: str) -> float | None:
    answered = [t["seconds"] for t in peer.get("results", {}).get(setting, {}).get(key, []) if "seconds" in t]
    return min(answered) if answered else None


# ------------------------------------------------------------------------------------ time
@dataclass
class TimeRow:
    setting: str
    stat: Stat
    raw: float
    privdb: float
    cells: int
    parts: dict[str, float] = field(default_factory=dict)
    opendp: float | None = None
    smartnoise: float | None = None


def measure_time(db: Any, setting: str, stat: Stat, repeats: int) -> TimeRow:
    """Raw DuckDB and privdb end to end, interleaved; then privdb by stage."""
    from privdb.sql import engine
    from privdb.sql.noise import add_noise
    from privdb.sql.plan import Plan

    best_of = bench_sql().best_of

    def dp(i: int) -> None:
        result = engine.run(db, ANALYST, stat.dp(EPS + i * 1e-9))
        if result.cached or not math.isclose(result.epsilon_spent, EPS + i * 1e-9):
            raise RuntimeError(f"privdb answered {stat.key} from its store: the timing would be void")

    best = best_of({"raw": lambda i: db.backend.fetch(stat.raw()), "privdb": dp}, repeats)
    plan, sql = engine.prepare(db, stat.dp(EPS))
    assert isinstance(plan, Plan)
    queries = engine.histogram_queries(db, plan)

    def engine_sql(i: int) -> tuple[Any, dict[str, Any]]:
        frame = db.backend.fetch(sql) if sql else None
        return frame, {name: db.backend.fetch(text) for name, text in queries.items()}

    frame, histograms = engine_sql(0)
    parts = best_of(
        {
            "prepare": lambda i: engine.prepare(db, stat.dp(EPS + i * 1e-9)),
            "engine SQL": engine_sql,
            "noise": lambda i: add_noise(plan, frame, None, histograms),
        },
        repeats,
    )
    parts["rest"] = max(0.0, best["privdb"] - sum(parts.values()))
    cells = sum(len(h) for h in histograms.values())
    return TimeRow(setting, stat, best["raw"], best["privdb"], cells, parts)


# ------------------------------------------------------------------------------------ error
@dataclass(frozen=True)
class Grid:
    """privdb's candidates for a statistic, read from its plan (OpenDP gets the very same)."""

    candidates: list[float] | list[int]
    integer: bool

    @property
    def resolution(self) -> float:
        return float(self.candidates[1] - self.candidates[0])


def grid_of(db: Any, stat: Stat) -> Grid:
    from privdb.sql import engine
    from privdb.sql.plan import Plan

    plan, _ = engine.prepare(db, stat.dp(EPS))
    assert isinstance(plan, Plan)
    hist = plan.histograms[0]
    if hist.integer:
        return Grid([int(hist.lo) + j for j in range(hist.points)], True)
    return Grid([hist.lo + j * hist.width for j in range(hist.points)], False)


@dataclass
class Errors:
    """Absolute errors of repeated releases, in value and rank units."""

    values: list[float] = field(default_factory=list)
    answers: list[float] = field(default_factory=list)
    ranks: list[float] = field(default_factory=list)

    @staticmethod
    def _mae(xs: list[float]) -> tuple[float, float]:
        sem = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else math.nan
        return statistics.fmean(xs), sem

    def value(self) -> tuple[float, float]:
        return self._mae(self.values)

    def rank(self) -> tuple[float, float]:
        return self._mae(self.ranks)

    def usual(self) -> str:
        """The most frequent answer and its share."""
        y = statistics.mode(self.answers)
        share = self.answers.count(y) / len(self.answers)
        return f"{y:,.{0 if float(y).is_integer() else 1}f} ({share:.0%})"


@dataclass
class ErrorRow:
    data: str  # "table" or "subset"
    n: int
    stat: Stat
    truth: float
    grid_rank: float  # the best candidate's rank error: the floor of any mechanism on this grid
    privdb: dict[str, Errors]  # by setting
    opendp: Errors
    opendp_note: str


class Truth:
    """A column sorted once: exact ranks of any answer."""

    def __init__(self, values: Any) -> None:
        import numpy as np

        self.sorted = np.sort(np.asarray(values, dtype=np.float64))
        self.n = len(self.sorted)

    def rank_error(self, y: float, q: float) -> float:
        import numpy as np

        lo = int(np.searchsorted(self.sorted, y, side="left"))
        hi = int(np.searchsorted(self.sorted, y, side="right"))
        target = q * self.n
        return max(0.0, lo - target, target - hi)


def privdb_errors(
    db: Any, stat: Stat, table: str, truth: Truth, exact: float, reps: int, advance: Callable[[], None]
) -> Errors:
    from privdb.sql import engine

    out = Errors()
    for k in range(reps):
        epsilon = EPS - (k + 1) * 1e-9  # below 1: never one of the timing runs' ε, never stored
        result = engine.run(db, ANALYST, stat.dp(epsilon, table))
        if result.cached:
            raise RuntimeError(f"privdb answered {stat.key} from its store: the error run would be void")
        y = float(result.rows[0][0])
        out.answers.append(y)
        out.values.append(abs(y - exact))
        out.ranks.append(truth.rank_error(y, stat.q))
        advance()
    return out


def opendp_quantile(values: list[Any], stat: Stat, grid: Grid) -> tuple[Callable[[], float], str, float]:
    """A function drawing one OpenDP release on ``values``, how it is drawn, and its ε."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    atom = dp.atom_domain(T=int) if grid.integer else dp.atom_domain(T=float, nan=False)
    domain, metric = dp.vector_domain(atom), dp.symmetric_distance()
    candidates = grid.candidates

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(domain, metric, dp.max_divergence(), candidates, stat.q, scale)

    scale = dp.binary_search_param(make, d_in=1, d_out=EPS)
    measurement: Any = make(scale)
    epsilon = float(measurement.map(1))
    if epsilon > EPS * (1 + 1e-9):
        raise RuntimeError(f"OpenDP would spend ε = {epsilon} > {EPS}")
    if len(values) <= OPENDP_DIRECT_ROWS:
        return (lambda: float(measurement(values))), "make_private_quantile per release", epsilon
    score: Any = dp.t.make_quantile_score_candidates(domain, metric, candidates, stat.q)
    # make_private_quantile = score >> noisy max at scale × the score's integer denominator >> candidate
    denominator = round(float(score.map(1)) / max(stat.q, 1 - stat.q))
    select = dp.m.make_noisy_max(
        score.output_domain, score.output_metric, dp.max_divergence(), scale * denominator, negate=True
    )
    if not math.isclose(float((score >> select).map(1)), epsilon, rel_tol=1e-9):
        raise RuntimeError("OpenDP's score >> noisy max does not match make_private_quantile's privacy map")
    scores = score(values)
    return (
        (lambda: float(candidates[select(scores)])),
        "scores once (make_quantile_score_candidates), make_noisy_max per release",
        epsilon,
    )


def opendp_errors(
    draw: Callable[[], float], stat: Stat, truth: Truth, exact: float, reps: int, advance: Callable[[], None]
) -> Errors:
    out = Errors()
    for _ in range(reps):
        y = draw()
        out.answers.append(y)
        out.values.append(abs(y - exact))
        out.ranks.append(truth.rank_error(y, stat.q))
        advance()
    return out


@dataclass(frozen=True)
class WhatIf:
    stat: Stat
    delta_now: float
    delta_tight: float
    now: tuple[float, float]  # rank MAE ± sem with privdb's Δ
    tight: tuple[float, float]  # with Δ = m·max(q, 1 − q)


def what_if_sensitivity(db: Any, stat: Stat, table: str, truth: Truth, draws: int) -> WhatIf:
    """privdb's own exponential mechanism on privdb's own histogram of ``table``, with its Δ = m and with
    Δ = m·max(q, 1 − q), the utility's sensitivity under add/remove: how much of the gap to OpenDP that is.
    Not a release (nothing is charged): a simulation to explain the error table."""
    import numpy as np

    from privdb.sql import engine
    from privdb.sql.plan import Plan

    plan, _ = engine.prepare(db, stat.dp(EPS, table))
    assert isinstance(plan, Plan)
    hist = plan.histograms[0]
    frame = next(iter(db.backend.fetch(q) for q in engine.histogram_queries(db, plan).values()))
    per_cell = np.zeros(hist.cells)
    per_cell[frame["c"].to_numpy(dtype=np.int64)] = frame["n"].to_numpy(dtype=np.float64)
    below = np.concatenate([[0.0], np.cumsum(per_cell)])[: hist.points]
    utility = -np.abs(below - stat.q * per_cell.sum())
    delta_now = hist.sensitivity
    delta_tight = delta_now * max(stat.q, 1 - stat.q)
    out = []
    for delta in (delta_now, delta_tight):
        mech = hist.mechanism().__class__(epsilon=hist.epsilon, sensitivity=delta)
        ranks = []
        for start in range(0, draws, 250):
            for pick in mech.select_many(utility, min(250, draws - start)):
                ranks.append(truth.rank_error(hist.lo + float(pick) * hist.width, stat.q))
        out.append(Errors(ranks=ranks).rank())
    return WhatIf(stat, delta_now, delta_tight, out[0], out[1])


def time_opendp(values: list[Any], stat: Stat, grid: Grid) -> float:
    """OpenDP's make_private_quantile on the whole column: one warm-up, best of 1 (it is slow)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    atom = dp.atom_domain(T=int) if grid.integer else dp.atom_domain(T=float, nan=False)
    domain, metric = dp.vector_domain(atom), dp.symmetric_distance()

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(domain, metric, dp.max_divergence(), grid.candidates, stat.q, scale)

    measurement = make(dp.binary_search_param(make, d_in=1, d_out=EPS))
    return float(bench_sql().best_of({"opendp": lambda i: measurement(values)}, 1)["opendp"])


# ------------------------------------------------------------------------------------------ report
def _ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:,.2f}×"


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:,.3f}"


def _pm(pair: tuple[float, float], digits: int = 1) -> str:
    mean, sem = pair
    return f"{mean:,.{digits}f} ± {sem:,.{digits}f}"


TIME_COLUMNS = ["statistic (ε = 1)", "privacy", "raw DuckDB s", "privdb s", "SmartNoise s", "OpenDP s"]
TIME_COLUMNS += ["privdb ÷ raw"]
PART_COLUMNS = ["statistic", "privacy", "privdb s", "prepare s", "engine SQL s", "noise s", "rest s"]
PART_COLUMNS += ["engine SQL ÷ raw", "histogram rows"]
ERROR_COLUMNS = ["data", "statistic", "exact", "grid floor (ranks)", "privdb ranks (row)"]
ERROR_COLUMNS += ["privdb ranks (user)", "OpenDP ranks", "privdb value (row)", "OpenDP value"]
ERROR_COLUMNS += ["privdb ÷ OpenDP (ranks)", "usual answer privdb / OpenDP"]


def time_rows(rows: list[TimeRow]) -> list[list[str]]:
    return [
        [
            f"{r.stat.key} {r.stat.label}",
            SETTINGS[r.setting],
            _secs(r.raw),
            _secs(r.privdb),
            "no percentile" if r.smartnoise is None else _secs(r.smartnoise),
            _secs(r.opendp),
            _ratio(r.privdb, r.raw),
        ]
        for r in rows
    ]


def part_rows(rows: list[TimeRow]) -> list[list[str]]:
    out = []
    for r in rows:
        p = r.parts
        cells = [r.stat.key, SETTINGS[r.setting], _secs(r.privdb), _secs(p["prepare"])]
        cells += [_secs(p["engine SQL"]), _secs(p["noise"]), _secs(p["rest"]), _ratio(p["engine SQL"], r.raw)]
        cells.append(f"{r.cells:,}")
        out.append(cells)
    return out


def error_rows(rows: list[ErrorRow]) -> list[list[str]]:
    out = []
    for r in rows:
        digits = 2 if r.stat.column == "age" else 1
        p_row, p_user, o = r.privdb["row"], r.privdb.get("user"), r.opendp
        out.append(
            [
                f"{r.data} ({r.n:,})",
                f"{r.stat.key} {r.stat.label}",
                f"{r.truth:,.{digits}f}",
                f"{r.grid_rank:,.1f}",
                _pm(p_row.rank()),
                "—" if p_user is None else _pm(p_user.rank()),
                _pm(o.rank()),
                _pm(p_row.value(), digits),
                _pm(o.value(), digits),
                _ratio(p_row.rank()[0], o.rank()[0]) if o.rank()[0] > 0 else "—",
                f"{p_row.usual()} / {o.usual()}",
            ]
        )
    return out


def what_if_lines(what_ifs: list[WhatIf], subset_rows: int, draws: int) -> list[str]:
    """What explains the remaining difference to OpenDP (the simulated what-ifs are not shown any more: the
    sensitivity they tested is now privdb's own)."""
    del what_ifs, subset_rows, draws
    return [
        "The first run of this benchmark found privdb charging Δ = m for quantiles under add/remove; one "
        "person moves `#{x < y}` by 0 or 1 and `q·n` by q, so Δ = m·max(q, 1 − q) (0.5 for the median), "
        "which privdb now uses (docs/proofs/sql.md), and ties are scored by the distance of `q·n` to the "
        "candidate's rank interval `[#{x < y}, #{x ≤ y}]` (right on int columns with many people per value, "
        "where OpenDP's `|(1 − q)·#{x < c} − q·#{x > c}|` can pick the neighbouring integer: the M1 row). "
        "What "
        "is left on the small subset is the selection rule: OpenDP selects by permute-and-flip (McKenna & "
        "Sheldon 2020), never worse than the exponential mechanism privdb uses; a few hundredths of a rank.",
        "",
    ]


def noise_line(times: list[TimeRow]) -> str:
    """How far the same raw query's best time moved between the two settings: the machine's noise."""
    spread = max(
        max(r.raw for r in times if r.stat == s) / min(r.raw for r in times if r.stat == s) for s in STATS
    )
    return (
        f"The machine ran other work concurrently: the same raw DuckDB query's best time differs by up to "
        f"{spread:.2f}× between the two settings (same data), so ratios near 1 are within noise."
    )


def targets(times: list[TimeRow], errors: list[ErrorRow]) -> list[str]:
    ok = {True: "met", False: "**missed**"}
    ratios = ", ".join(f"{r.stat.key} {r.setting} {r.privdb / r.raw:.2f}×" for r in times)
    worst = max(r.privdb / r.raw for r in times)
    lines = [f"- privdb within {TARGET_TIME:g}× of raw DuckDB: {ratios} ({ok[worst <= TARGET_TIME]})"]
    for data in dict.fromkeys(e.data for e in errors):
        picked = [e for e in errors if e.data == data]

        def no_larger(e: ErrorRow) -> bool:
            # "no larger" up to the repetitions' noise: privdb's mean within 2 standard errors of OpenDP's
            (p, ps), (o, os_) = e.privdb["row"].rank(), e.opendp.rank()
            return p <= o + 2 * math.hypot(ps, os_)

        text = ", ".join(
            f"{e.stat.key} {e.privdb['row'].rank()[0]:,.1f} vs {e.opendp.rank()[0]:,.1f}" for e in picked
        )
        every = all(no_larger(e) for e in picked)
        lines.append(
            f"- privdb's error no larger than OpenDP's at ε = 1, {data} ({picked[0].n:,} rows), mean rank "
            f"error privdb vs OpenDP: {text} ({ok[every]})"
        )
    return lines


def peer_notes(peer: dict[str, Any], notes: dict[str, str], opendp_version: str) -> list[str]:
    lines = [
        f"- **OpenDP {opendp_version}** (project venv): `make_private_quantile(vector_domain(atom_domain(…)),"
        " symmetric_distance(), max_divergence(), candidates, alpha=q, scale)` with privdb's grid points as "
        "candidates and the scale from `binary_search_param(…, d_in=1, d_out=1)`: ε = 1 for one person "
        "added or removed, privdb's default relation (each person has one row, so row- and user-level are "
        "the same for it). It scores candidates with Smith's utility in integer form and selects by report "
        "noisy max with exponential noise (permute-and-flip, McKenna & Sheldon 2020). Releases: "
        + "; ".join(f"{k}: {v}" for k, v in notes.items())
        + ". Its time is one run after a warm-up on the whole column as a Python list (the list itself "
        "built off the clock).",
    ]
    if "error" in peer:
        lines.append(f"- **SmartNoise SQL was not run**: {peer['error']}")
        return lines
    v = peer["versions"]
    tried = {
        t["sql"]: t.get("error", "answered")
        for setting in peer["results"].values()
        for forms in setting.values()
        for t in forms
    }
    answered = [sql for sql, said in tried.items() if said == "answered"]
    lines.append(
        f"- **SmartNoise SQL {v['smartnoise-sql']}** (opendp {v['opendp']}, duckdb {v['duckdb']}, in "
        "`bench/.peers/smartnoise`, made by bench/sql.py; its PostgreSQL reader on the same DuckDB file "
        "through bench/sql.py's adapter, ε = 1, both privacy settings). "
        + (
            "It has no percentile: its grammar knows the words PERCENTILE_CONT and PERCENTILE_DISC but its "
            "rewriter refuses them, and MEDIAN and QUANTILE do not parse (its open issue "
            "opendp/smartnoise-sdk#367, 'Add support for Median and other Quantiles'; MIN and MAX are "
            "refused too). What it said, per spelling (col: age or income, q: 0.5 or 0.9): "
            if not answered
            else f"It answered {', '.join(f'`{a}`' for a in answered)}. What it said, per spelling: "
        )
        + "; ".join(f"{', '.join(f'`{t}`' for t in forms)} → {said}" for said, forms in _said(tried).items())
        + "."
    )
    return lines


def _said(tried: dict[str, str]) -> dict[str, list[str]]:
    """SmartNoise's answers grouped by what it said, spellings and messages with the column and q generic."""
    grouped: dict[str, list[str]] = {}
    for sql, said in tried.items():
        said = re.sub(r" at line \d+ column \d+\.?.*$", "", said)
        said = re.sub(r"function: .*$", "function: …", said)
        body = re.sub(r"^SELECT | FROM main\.\w+$", "", sql)
        body = re.sub(r"\b(age|income)\b", "col", re.sub(r"\b0\.[59]\b", "q", body))
        forms = grouped.setdefault(said, [])
        if body not in forms:
            forms.append(body)
    return grouped


def machine(peer: dict[str, Any]) -> str:
    text: str = bench_sql().machine(peer)
    return text.replace("; peer venv", f", opendp {importlib.metadata.version('opendp')}; peer venv", 1)


def markdown(
    times: list[TimeRow],
    errors: list[ErrorRow],
    what_ifs: list[WhatIf],
    peer: dict[str, Any],
    notes: dict[str, str],
    n: int,
    args: argparse.Namespace,
    command: str,
) -> str:
    lines = [START, "## Order statistics: MEDIAN and QUANTILE against raw DuckDB, SmartNoise SQL, OpenDP", ""]
    lines += [
        f"Written by `bench/quantiles.py`; command: `{command}`",
        "",
        f"Machine: {machine(peer)}",
        "",
        f"One generated census table (`privdb.data.census.generate`) of {n:,} rows in DuckDB; ε = 1 per "
        "statistic. privdb chooses the answer with the exponential mechanism over a grid of the declared "
        'bounds (Smith\'s utility; docs/proofs/sql.md, "Order statistics and modes"): 101 integers for age '
        f"(0..100), 16,385 points for income (0..500,000, resolution {500_000 / 2**14:.2f}). Seconds are "
        f"wall time, best of {args.repeats} after one warm-up, interleaved. Raw DuckDB (the floor, not "
        "private) is the exact `median(col)` / `quantile_cont(col, q)` on privdb's own connection; privdb is "
        "`engine.run` end to end (plan, budget, histogram SQL, exponential mechanism, commit, stored "
        "answer), its ε moved by 1e-9 per repetition so that no run is served from its store of answers.",
        "",
        "| " + " | ".join(TIME_COLUMNS) + " |",
        "|" + "---|" * len(TIME_COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in time_rows(times)]
    lines += [
        "",
        "Where privdb's time goes (each stage timed alone, best of the same repeats): `engine.prepare` "
        "(parse, plan, bind), the engine SQL (`engine.histogram_queries` run with `db.backend.fetch`: per "
        "grid cell, the number of rows whose clamped value falls in it), `add_noise` (cumulative counts, "
        "utilities, one exponential-mechanism draw over all candidates) and the rest (catalog and ledger) = "
        "total − stages, floored at 0:",
        "",
        "| " + " | ".join(PART_COLUMNS) + " |",
        "|" + "---|" * len(PART_COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in part_rows(times)]
    lines += [
        "",
        noise_line(times),
        "",
        f"Error at ε = 1: mean absolute error ± its standard error over {args.error_reps} releases per cell "
        f"({args.subset_reps} on the subset). "
        "Ranks: how far `q·n` lies from the answer's rank interval `[#{x < y}, #{x ≤ y}]` (0 for an exact "
        "quantile); value: |answer − DuckDB's exact quantile| (years, dollars). The grid floor is the rank "
        "error of the best candidate, the least any mechanism choosing among these candidates can have. "
        f"The subset is the table's first {args.subset_rows:,} people, a table of its own for privdb, the "
        "same values for OpenDP. privdb's ε is 1 − k·1e-9 (never a stored answer).",
        "",
        "| " + " | ".join(ERROR_COLUMNS) + " |",
        "|" + "---|" * len(ERROR_COLUMNS),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in error_rows(errors)]
    lines += ["", *what_if_lines(what_ifs, args.subset_rows, args.subset_reps * 2)]
    lines += ["Targets:", "", *targets(times, errors), ""]
    lines += ["Peers:", "", *peer_notes(peer, notes, importlib.metadata.version("opendp")), END]
    return "\n".join(wrap(line) for line in lines)


# -------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(
        description="MEDIAN and QUANTILE: privdb against DuckDB, SmartNoise, OpenDP."
    )
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in the table (default 10M)")
    parser.add_argument("--quick", action="store_true", help=f"smoke run on {QUICK_ROWS:,} rows; prints only")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (default 5)")
    parser.add_argument("--error-reps", type=int, default=100, help="releases per error cell (default 100)")
    parser.add_argument("--subset-rows", type=int, default=10_000, help="people in the small table")
    parser.add_argument(
        "--subset-reps",
        type=int,
        default=1000,
        help="releases per error cell on the small table (default 1000)",
    )
    parser.add_argument("--smartnoise-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smartnoise_worker:
        worker_main()
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from privdb.data.census import METADATA, generate
    from privdb.database import Database

    sql_mod = bench_sql()
    n = QUICK_ROWS if args.quick else args.rows
    if args.quick:
        args.error_reps = min(args.error_reps, QUICK_REPS)
        args.subset_reps = min(args.subset_reps, 4 * QUICK_REPS)
    subset = min(args.subset_rows, n)
    console = Console() if sys.stdout.isatty() else Console(width=200)
    metadata = {"row": sql_mod.row_metadata(METADATA), "user": copy.deepcopy(METADATA)}
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-quantiles-"))
    times: list[TimeRow] = []
    errors: list[ErrorRow] = []
    what_ifs: list[WhatIf] = []
    notes: dict[str, str] = {}

    def progress() -> Progress:
        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )

    try:
        console.print(f"Generating {n:,} rows …")
        frame = generate(n)
        small = frame[frame["pid"] <= subset]
        columns = {c: frame[c].to_numpy() for c in ("age", "income")}
        dbs = {}
        for setting in SETTINGS:  # one database directory per setting: stored answers cannot cross over
            path = work / setting
            with Database(path) as db:
                db.backend.load_frame(TABLE, frame)
                db.set_metadata(TABLE, metadata[setting])
                db.backend.load_frame(SUBSET_TABLE, small)
                db.set_metadata(SUBSET_TABLE, metadata[setting])
                db.grant(ANALYST, epsilon=1e6, delta=1e-3)
        del frame
        console.print(f"SmartNoise SQL ({sql_mod.SMARTNOISE_VENV.relative_to(ROOT)}): its percentiles …")
        peer = run_smartnoise(
            {
                "db": str(work / "row" / "data.duckdb"),  # closed: the worker reads it, then privdb reopens
                "epsilon": EPS,
                "delta": sql_mod.SMARTNOISE_DELTA,
                "repeats": args.repeats,
                "forms": {s.key: s.smartnoise_forms() for s in STATS} | {"MIN/MAX": EXTREMES},
                "settings": list(SETTINGS),
                "metadata": {s: sql_mod.smartnoise_metadata(metadata[s], s) for s in SETTINGS},
            }
        )
        for setting in SETTINGS:
            dbs[setting] = Database(work / setting)

        with progress() as bar:
            task = bar.add_task("time: raw DuckDB, privdb, stages", total=len(SETTINGS) * len(STATS))
            for setting, db in dbs.items():
                for stat in STATS:
                    bar.update(task, description=f"time: {SETTINGS[setting]}, {stat.key}")
                    row = measure_time(db, setting, stat, args.repeats)
                    row.smartnoise = smartnoise_seconds(peer, setting, stat.key)
                    times.append(row)
                    bar.advance(task)

        grids = {stat.key: grid_of(dbs["row"], stat) for stat in STATS}
        console.print("OpenDP make_private_quantile on the whole column …")
        lists = {c: (v.tolist()) for c, v in columns.items()}
        with progress() as bar:
            task = bar.add_task("time: OpenDP", total=len(STATS))
            for stat in STATS:
                seconds = time_opendp(lists[stat.column], stat, grids[stat.key])
                for r in times:
                    if r.stat == stat and r.setting == "row":
                        r.opendp = seconds
                bar.advance(task)

        reps = {"table": args.error_reps, "subset": args.subset_reps}
        datasets = [
            ("table", TABLE, columns),
            ("subset", SUBSET_TABLE, {c: v[:subset] for c, v in columns.items()}),
        ]
        total = sum(reps.values()) * len(STATS) * (len(SETTINGS) + 1)
        with progress() as bar:
            task = bar.add_task("error at ε = 1", total=total)
            for data, table, cols in datasets:
                for stat in STATS:
                    grid = grids[stat.key]
                    truth = Truth(cols[stat.column])
                    exact = float(dbs["row"].backend.fetch(stat.raw(table)).to_numpy()[0, 0])
                    grid_rank = min(truth.rank_error(float(c), stat.q) for c in _near(grid, exact))
                    per_setting = {}
                    for setting, db in dbs.items():
                        bar.update(task, description=f"error: {data}, {stat.key}, privdb {setting}")
                        per_setting[setting] = privdb_errors(
                            db, stat, table, truth, exact, reps[data], lambda: bar.advance(task)
                        )
                    bar.update(task, description=f"error: {data}, {stat.key}, OpenDP")
                    values = lists[stat.column] if data == "table" else cols[stat.column].tolist()
                    draw, how, _ = opendp_quantile(values, stat, grid)
                    notes[f"{data} ({len(values):,} rows)"] = how
                    odp = opendp_errors(draw, stat, truth, exact, reps[data], lambda: bar.advance(task))
                    errors.append(ErrorRow(data, truth.n, stat, exact, grid_rank, per_setting, odp, how))
        console.print("privdb's mechanism with the add/remove sensitivity m·max(q, 1 − q) (simulation) …")
        subset_truth = {c: Truth(v[:subset]) for c, v in columns.items()}
        what_ifs = [
            what_if_sensitivity(
                dbs["row"], stat, SUBSET_TABLE, subset_truth[stat.column], args.subset_reps * 2
            )
            for stat in STATS
            if stat.column == "income"
        ]
        for db in dbs.values():
            db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def show(title: str, header: list[str], body: list[list[str]], left: int) -> Table:
        table = Table(title=title)
        for i, column in enumerate(header):
            table.add_column(column, justify="right" if i >= left else "left")
        for cells in body:
            table.add_row(*cells)
        return table

    console.print(
        show(
            f"MEDIAN and QUANTILE on {n:,} rows, ε = 1 (best of {args.repeats})",
            TIME_COLUMNS,
            time_rows(times),
            2,
        ),
        show("privdb by stage (s)", PART_COLUMNS, part_rows(times), 2),
        show(
            f"Mean absolute error at ε = 1 ({args.error_reps} releases; {args.subset_reps} on the subset)",
            ERROR_COLUMNS,
            error_rows(errors),
            2,
        ),
        machine(peer),
        noise_line(times),
        *(
            line.replace("**", "")
            for line in (
                *what_if_lines(what_ifs, args.subset_rows, args.subset_reps * 2),
                *targets(times, errors),
                *peer_notes(peer, notes, importlib.metadata.version("opendp")),
            )
        ),
        sep="\n",
    )
    if not args.quick:
        command = shlex.join([".venv/bin/python", "bench/quantiles.py", *sys.argv[1:]])
        write_section("quantiles", markdown(times, errors, what_ifs, peer, notes, n, args, command))
        console.print(f"Wrote the quantiles section of {DOC}")


def _near(grid: Grid, value: float) -> list[float] | list[int]:
    """The candidates around ``value``: the best one is among them (ranks are monotone in the candidate)."""
    import bisect

    i = bisect.bisect_left(grid.candidates, value)
    return grid.candidates[max(0, i - 2) : i + 3]


if __name__ == "__main__":
    main()
