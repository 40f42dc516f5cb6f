"""Order statistics and modes: the exponential mechanism's choice per group, and for MEDIAN, QUANTILE, MIN
and MAX a 95% interval in the answer's units.

*Why the interval costs a release of its own.* No interval computed from the released answer ``y`` and
public information alone can be both sound and useful: on a column whose values sit half at ``L``, half at
``U`` (one more at ``L``, or one more at ``U``) the median is ``L`` (or ``U``) and ``y`` is all but uniform
over the grid between them in both cases, so an interval ``I(y)`` covering the median 95% of the time on
both must hold all of ``[L, U]`` for most ``y`` (docs/proofs/sql.md, "Intervals of order statistics").
Turning the rank error into values would need the data's ranks, which is a leak.

*What is released instead.* The group's ε for the statistic is split: half chooses the answer (Smith's
utility, as before), a quarter each chooses a *lower end* aimed ``t`` ranks below ``q·n`` and an *upper
end* aimed ``t`` ranks above, with the lowest (highest) candidate's utility floored at ``−s₀``. With
probability ≥ 97.5% each end lands on its side of every true q-quantile (proof in docs/proofs/sql.md), so
``[lower end, upper end]`` — widened by one grid step on a float grid, where the engine moves a value to
its nearest grid point (up to half a step), and stretched to hold the answer — covers the true quantile
with probability ≥ 95%.

*Ties.* Every candidate is scored by its rank interval ``[#{x < y}, #{x ≤ y}]`` over the values at their
grid points, on float grids too: a value held by many rows is one candidate whose interval covers all
their ranks, so a point mass holding ``q·n`` wins (issue 26; docs/proofs/sql.md, "Order statistics"). ``t``
and ``s₀`` depend only on ε, Δ and the number of candidates; the interval is a function of the three
released values and public metadata (``interval_of``), never of the data.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism, RandomSource
from privdb.sql.keys import canonical_key

if TYPE_CHECKING:
    from privdb.sql.plan import AggregatePlan, Histogram, Plan

__all__ = [
    "ANSWER_SHARE",
    "END_SHARE",
    "answer_share",
    "bracket",
    "check_calibration",
    "choose",
    "histogram_accuracy",
    "interval_of",
    "utilities",
]

Interval = tuple[float, float]

ANSWER_SHARE = 0.5  # of a quantile's per-group ε: chooses the answer
END_SHARE = 0.25  # each: chooses one end of its interval
_END_BETA = 0.025  # each end fails with probability at most this: 95% for the interval (a union bound)
_SHRINK = 2e-6  # the sampler shrinks its coefficient by ≤ 1e-6 relative (float scores): bounds use less


def answer_share(hist: Histogram) -> float:
    """The share of the group's ε that chooses the answer: all of it for a mode, ``ANSWER_SHARE`` for a
    quantile (the rest buys its interval)."""
    return 1.0 if hist.values is not None else ANSWER_SHARE


def _end_mechanism(hist: Histogram, rng: RandomSource | None = None) -> ExponentialMechanism:
    return ExponentialMechanism(
        epsilon=hist.epsilon * END_SHARE, sensitivity=hist.sensitivity, monotone=False, rng=rng
    )


def bracket(hist: Histogram) -> tuple[float, float]:
    """``(t, s₀)`` in ranks, from public parameters only: each end aims ``t`` ranks beyond ``q·n``; the
    extreme candidate's utility is floored at ``−s₀``. With ``s = (ln |C| + ln 40)/c`` the McSherry–Talwar
    loss at 97.5% and ``s₀ = ln 40/c``, ``t = s + s₀`` makes each end sound (docs/proofs/sql.md)."""
    c = _end_mechanism(hist).coefficient * (1.0 - _SHRINK)
    floor = math.log(1.0 / _END_BETA) / c
    return math.log(hist.points) / c + 2.0 * floor, floor


def check_calibration(hist: Histogram, what: str, epsilon: float) -> None:
    """Refuse, before anything is read, a histogram whose grid or exponential mechanisms float64 cannot
    carry: a grid of the bounds that overflows, or (a quantile) ends aimed so many ranks away that their
    utilities alone exceed the mechanism's float tolerance (``ExponentialMechanism.max_span``; at ε near
    1e-7). ``what``: the aggregate as written; ``epsilon``: the query's ε (named in the fix)."""
    top = hist.lo + hist.points * hist.width
    if not (math.isfinite(hist.width) and hist.width > 0 and math.isfinite(top)):
        raise InvalidParameter(
            f"{what}: the bounds of {hist.column.name!r} span more than float64 can divide into "
            f"{hist.cells} cells; declare narrower bounds (or rescale the column)"
        )
    hist.mechanism()  # its own parameter checks
    if hist.values is not None:
        return
    ends = _end_mechanism(hist)
    t, _ = bracket(hist)
    ratio = 2.0 * t / ends.max_span  # the empty table's span is t; the factor 2 leaves room for the rows
    if not ratio <= 1.0:
        raise InvalidParameter(
            f"{what} at epsilon {epsilon:g} is too small for the exponential mechanism in float64: its "
            f"interval's ends would be aimed {t:.3g} ranks away; use epsilon >= {epsilon * ratio:.2g}"
        )


def _ranks(
    counts: dict[Any, float], hist: Histogram
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Per candidate ``#{x < y}`` and ``#{x ≤ y}``, and ``n``, from a group's per-cell counts (one cell per
    candidate: the values nearest it)."""
    per_cell = np.zeros(hist.cells)
    for cell, n in counts.items():
        per_cell[min(max(int(cell), 0), hist.cells - 1)] += n  # the engine's cells lie in range
    # each cell holds the values nearest its candidate (exactly its value on an int column), so a candidate
    # covers the ranks of its cell: a point mass's candidate holds all of them
    below = np.concatenate([[0.0], np.cumsum(per_cell)])[: hist.points]
    return below, below + per_cell, float(per_cell.sum())


def _distance(below: NDArray[np.float64], upto: NDArray[np.float64], target: float) -> NDArray[np.float64]:
    """How far ``target`` lies from each candidate's rank interval (minus: Smith's utility)."""
    out: NDArray[np.float64] = np.maximum(np.maximum(below - target, target - upto), 0.0)
    return out


def utilities(
    hist: Histogram, counts: dict[Any, float], q: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per candidate, the utilities of a quantile's answer and of its interval's lower and upper ends from
    one group's per-cell counts: minus the distance from ``q·n`` (``q·n ∓ t`` for the ends) to the
    candidate's rank interval, the extreme candidate's end utility floored at ``−s₀`` (module doc). Each
    moves by at most ``hist.sensitivity`` between neighbours (docs/proofs/sql.md, "Order statistics")."""
    below, upto, total = _ranks(counts, hist)
    target = q * total
    t, floor = bracket(hist)
    low = -_distance(below, upto, target - t)
    low[0] = max(low[0], -floor)  # the lowest candidate lies below every quantile
    high = -_distance(below, upto, target + t)
    high[-1] = max(high[-1], -floor)
    return -_distance(below, upto, target), low, high


def interval_of(hist: Histogram, answer: float, low_end: float, high_end: float) -> Interval:
    """The 95% interval of a quantile from its three released values and public metadata alone: the hull
    of the ends and the answer, one grid step wider on a float grid (a value's grid point is within half a
    step of it), within the column's bounds."""
    pad = 0.0 if hist.integer else hist.width
    top = hist.lo + (hist.points - 1) * hist.width
    lo = max(min(low_end, high_end, answer) - pad, hist.lo)
    hi = min(max(low_end, high_end, answer) + pad, top)
    return (min(lo, answer), max(hi, answer))


def _counts(plan: Plan, frame: pd.DataFrame) -> dict[tuple[Any, ...], dict[Any, float]]:
    """Per group (keyed as the noisy statistics' groups are) the weight of each cell."""
    nkeys = len(plan.resolved.keys)
    counts: dict[tuple[Any, ...], dict[Any, float]] = {}
    for row in frame.itertuples(index=False, name=None):
        key = tuple(canonical_key(v) for v in row[:nkeys])
        cells = counts.setdefault(key, {})
        cell = canonical_key(row[nkeys])
        if cell is None:  # the engine leaves NULL cells out; never a candidate
            continue
        weight = canonical_key(row[nkeys + 1])
        cells[cell] = cells.get(cell, 0.0) + (0.0 if weight is None else float(weight))  # NaN, NULL meet
    return counts


def choose(
    plan: Plan,
    hist: Histogram,
    frame: pd.DataFrame,
    groups: list[tuple[Any, ...]],
    q: float | None,
    rng: RandomSource | None,
) -> tuple[NDArray[np.float64] | list[Any], list[Interval] | None]:
    """Per group, the exponential mechanism's choice and its 95% interval (None for a mode): a grid point
    for a quantile (utility: minus the distance from q·n to the candidate's rank interval, Smith 2011) with
    the two ends of its interval (module doc), a domain value for a mode (its count)."""
    counts = _counts(plan, frame)
    mech = hist.mechanism(rng)
    if hist.values is not None:  # mode
        index: dict[Any, int] = {}
        for i, v in enumerate(hist.values):
            index.setdefault(canonical_key(v), i)
        chosen: list[Any] = []
        for group in groups:
            u = np.zeros(hist.cells)
            for value, n in counts.get(group, {}).items():
                if value in index:  # values outside the public domain are not candidates
                    u[index[value]] += n
            chosen.append(hist.values[mech.select(u)])
        return chosen, None
    assert q is not None
    ends = _end_mechanism(hist, rng)
    out = np.empty(len(groups))
    intervals: list[Interval] = []
    for g, group in enumerate(groups):
        answer, low, high = utilities(hist, counts.get(group, {}), q)
        out[g] = hist.lo + mech.select(answer) * hist.width
        low_end = hist.lo + ends.select(low) * hist.width
        high_end = hist.lo + ends.select(high) * hist.width
        intervals.append(interval_of(hist, float(out[g]), low_end, high_end))
    return out, intervals


def histogram_accuracy(
    agg: AggregatePlan, hist: Histogram, intervals: list[Interval] | None, order: list[int]
) -> dict[str, Any]:
    """What is known of an exponential-mechanism answer's accuracy: with 95% probability the answer's
    utility is within ``utility_loss`` of the best (McSherry–Talwar); for a quantile also its interval."""
    loss = hist.mechanism().utility_loss(hist.points, 0.05)
    entry: dict[str, Any] = {
        "column": agg.output,
        "mechanism": "exponential",
        "epsilon": agg.epsilon,
        "epsilon_per_group": hist.epsilon,
        "ci95": None,
        "ci95_rows": None,
    }
    if agg.kind == "mode":
        entry["count_gap95"] = loss
        entry["method"] = (
            "a public domain value chosen with probability ∝ exp(ε·count/(cΔ)) (c = 1 if monotone)"
        )
        return entry
    assert intervals is not None
    rows = [[intervals[j][0], intervals[j][1]] for j in order]
    t, _ = bracket(hist)
    entry |= {
        "ci95": rows[0] if rows else None,
        "ci95_rows": rows,
        "rank_error95": loss,
        "resolution": hist.width,
        "interval_rank_offset": t,
        "epsilon_shares": {"answer": ANSWER_SHARE, "interval_low": END_SHARE, "interval_high": END_SHARE},
        "method": (
            f"the {agg.q:g}-quantile by the exponential mechanism over a grid of the bounds (Smith 2011), "
            "with half the group's ε: with 95% probability q·n lies within rank_error95 of the answer's "
            "rank interval. ci95: two more choices (a quarter of ε each) aimed interval_rank_offset ranks "
            "below and above q·n; it covers the true quantile with probability ≥ 95%"
        ),
    }
    return entry
