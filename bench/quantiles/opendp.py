"""OpenDP's ``make_private_quantile`` on the same data, bounds and candidates as privdb (its error and its
time), and privdb's own mechanism with another sensitivity (a simulation, nothing charged)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.harness import timing
from bench.harness.query import EPS
from bench.quantiles.measure import Errors, Grid, Truth
from bench.quantiles.spec import OPENDP_DIRECT_ROWS, Stat


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
    from privdb.sql.plan.types import Plan
    from privdb.sql.run.targets import histogram_queries

    plan, _ = engine.prepare(db, stat.dp(EPS, table))
    assert isinstance(plan, Plan)
    hist = plan.histograms[0]
    frame = next(iter(db.backend.fetch(q) for q in histogram_queries(db, plan).values()))
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
    return float(timing.best_of({"opendp": lambda i: measurement(values)}, 1)["opendp"])
