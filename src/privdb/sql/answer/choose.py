"""The exponential mechanism's choices of order statistics and modes, per group, from the engine's per-cell
counts, and a quantile's 95% interval from its three released values (why and how: privdb.sql.plan.order,
docs/proofs/sql.md, "Order statistics")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import ExponentialMechanism, RandomSource
from privdb.sql.answer.smooth import smooth_accuracy, smooth_answers
from privdb.sql.front.keys import canonical_key
from privdb.sql.plan.order import bracket, end_mechanism
from privdb.sql.plan.types import ANSWER_SHARE, END_SHARE, AggregatePlan, Histogram, Plan

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Interval", "choose", "histogram_accuracy", "interval_of", "mode_utilities", "utilities"]

Interval = tuple[float, float]


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
    hist: Histogram,
    counts: dict[Any, float],
    q: float,
    mechanisms: tuple[ExponentialMechanism, ExponentialMechanism] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per candidate, the utilities of a quantile's answer and of its interval's lower and upper ends from
    one group's per-cell counts: minus the distance from ``q·n`` (``q·n ∓ t`` for the ends) to the
    candidate's rank interval, the extreme candidate's end utility floored at ``−s₀`` (module doc). Each
    moves by at most ``hist.sensitivity`` between neighbours (docs/proofs/sql.md, "Order statistics").

    All three are then floored at ``−max_span/2`` of their mechanism (about 5.6e8·Δ ranks, whatever ε): a
    public floor that keeps Δ and leaves every vector within what the mechanism accepts, so no group is
    refused for its size after reading (docs/proofs/sql.md, "Large groups"). ``mechanisms``: the answer's
    and the ends' (built once per query by ``choose``; built here if not given)."""
    below, upto, total = _ranks(counts, hist)
    target = q * total
    t, floor = bracket(hist)
    low = -_distance(below, upto, target - t)
    low[0] = max(low[0], -floor)  # the lowest candidate lies below every quantile
    high = -_distance(below, upto, target + t)
    high[-1] = max(high[-1], -floor)
    answer = -_distance(below, upto, target)
    mech, ends = mechanisms or (hist.mechanism(), end_mechanism(hist))
    return (
        mech.clamp(answer, -mech.max_span / 2.0, 0.0),
        ends.clamp(low, -ends.max_span / 2.0, 0.0),
        ends.clamp(high, -ends.max_span / 2.0, 0.0),
    )


def mode_utilities(
    hist: Histogram,
    index: dict[Any, int],
    counts: dict[Any, float],
    mech: ExponentialMechanism | None = None,
) -> NDArray[np.float64]:
    """A mode's utilities from one group's per-value counts: each public value's count (values outside the
    domain are no candidates), capped at ``max_span/2`` of the mechanism (about 2.8e8·Δ rows if monotone,
    whatever ε). ``min(count, C)`` keeps Δ and stays monotone, and every capped vector is within what the
    mechanism accepts, so no group is refused for its size after reading (docs/proofs/sql.md). ``mech``: the
    mode's mechanism (built once per query by ``choose``; built here if not given)."""
    u = np.zeros(hist.cells)
    for value, n in counts.items():
        if value in index:
            u[index[value]] += n
    mech = mech or hist.mechanism()
    return mech.clamp(u, 0.0, mech.max_span / 2.0)


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
    if hist.smooth_delta > 0:  # USING SMOOTH (privdb.sql.answer.smooth)
        assert q is not None
        return smooth_answers(hist, counts, groups, q, rng), None
    mech = hist.mechanism(rng)
    if hist.values is not None:  # mode
        index: dict[Any, int] = {}
        for i, v in enumerate(hist.values):
            index.setdefault(canonical_key(v), i)
        chosen: list[Any] = []
        for group in groups:
            chosen.append(hist.values[mech.select(mode_utilities(hist, index, counts.get(group, {}), mech))])
        return chosen, None
    assert q is not None
    ends = end_mechanism(hist, rng)
    out = np.empty(len(groups))
    intervals: list[Interval] = []
    for g, group in enumerate(groups):
        answer, low, high = utilities(hist, counts.get(group, {}), q, (mech, ends))
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
    if hist.smooth_delta > 0:
        return smooth_accuracy(agg, hist)
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
        cap = hist.mechanism().max_span / 2.0
        entry["method"] = (
            f"a public domain value chosen with probability ∝ exp(ε·min(count, {cap:.3g})/(cΔ)) (c = 1 if "
            "monotone; the cap is public and keeps float64 exact): its count is within count_gap95 of the "
            "top count (of the cap, if the top count exceeds it) with 95% probability"
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
