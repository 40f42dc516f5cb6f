"""privdb's order statistics timed (end to end and by stage) and released repeatedly for their error."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.harness import timing
from bench.harness.query import ANALYST, EPS, check_fresh
from bench.quantiles.spec import Stat


def smartnoise_seconds(peer: dict[str, Any], setting: str, key: str) -> float | None:
    answered = [t["seconds"] for t in peer.get("results", {}).get(setting, {}).get(key, []) if "seconds" in t]
    return min(answered) if answered else None


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
    from privdb.sql.answer.noise import add_noise
    from privdb.sql.plan.types import Plan
    from privdb.sql.run.targets import histogram_queries

    def dp(i: int) -> None:
        check_fresh(engine.run(db, ANALYST, stat.dp(EPS + i * 1e-9)), EPS + i * 1e-9, stat.key)

    best = timing.best_of({"raw": lambda i: db.backend.fetch(stat.raw()), "privdb": dp}, repeats)
    plan, sql = engine.prepare(db, stat.dp(EPS))
    assert isinstance(plan, Plan)
    queries = histogram_queries(db, plan)

    def engine_sql(i: int) -> tuple[Any, dict[str, Any]]:
        frame = db.backend.fetch(sql) if sql else None
        return frame, {name: db.backend.fetch(text) for name, text in queries.items()}

    frame, histograms = engine_sql(0)
    parts = timing.stages(
        best["privdb"],
        {
            "prepare": lambda i: engine.prepare(db, stat.dp(EPS + i * 1e-9)),
            "engine SQL": engine_sql,
            "noise": lambda i: add_noise(plan, frame, None, histograms),
        },
        repeats,
    )
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
    from privdb.sql.plan.types import Plan

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
