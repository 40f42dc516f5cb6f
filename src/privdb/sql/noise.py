"""Add noise to the engine's per-group statistics and build the answer with honest 95% intervals.

Counts and sums are released as noised; their interval is the mechanism's. Ratios are post-processing:
``AVG = S/N`` clipped to the column bounds, ``VARIANCE = (Q/N − (S/N)²)·N/(N−1)`` clipped to
``[0, ((U − L)/2)²]``, ``STDDEV = √VARIANCE``. Their intervals propagate the parts' intervals (each at
``1 − 0.05/k`` for ``k`` parts, a union bound), so they cover the truth at least 95% of the time, and are as
wide as the noise makes them: with income bounds 0..500,000 a small group's variance interval is large, and
says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.mechanisms import Laplace, RandomSource
from privdb.sql.plan import AggregatePlan, Histogram, Plan

__all__ = ["NoisyAnswer", "add_noise"]

Interval = tuple[float, float]


@dataclass(frozen=True)
class NoisyAnswer:
    columns: list[str]
    rows: list[list[Any]]
    accuracy: list[dict[str, Any]]


def _py(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _groups(
    plan: Plan, frame: pd.DataFrame | None
) -> tuple[list[tuple[Any, ...]], dict[str, NDArray[np.float64]]]:
    """The groups to consider and each statistic's true value per group (0 where a group has no rows)."""
    nkeys = len(plan.resolved.keys)
    key_cols = [f"k{i}" for i in range(nkeys)]
    names = [s.name for s in plan.statistics]
    if frame is None:  # no noisy sums: only order statistics or modes
        frame = pd.DataFrame(columns=key_cols + names)
    # whole columns to Python objects at once (itertuples goes through pandas' indexing row by row)
    cols = [frame[c].tolist() for c in key_cols + names]
    # Keys the engine keeps apart can be one key here (NaN and NULL both become None): their statistics,
    # all sums and counts, are added, never overwritten (which row came last would decide the answer)
    data: dict[tuple[Any, ...], list[float]] = {}
    for r in range(len(frame)):
        key = tuple(_py(cols[j][r]) for j in range(nkeys))
        values = [_py(cols[j][r]) or 0.0 for j in range(nkeys, len(cols))]
        known = data.get(key)
        data[key] = values if known is None else [a + b for a, b in zip(known, values, strict=True)]
    if nkeys == 0:
        groups: list[tuple[Any, ...]] = [()]
    elif plan.domains is not None:
        groups = plan.public_groups()
    else:
        # released only through the noisy threshold, in sorted order: the engine's hash-table order could
        # tell something about the data
        groups = sorted(data, key=lambda g: tuple((v is None, v) for v in g))
    zeros = [0.0] * len(names)
    table = np.array([data.get(g, zeros) for g in groups], dtype=np.float64).reshape(len(groups), len(names))
    return groups, {name: table[:, i] for i, name in enumerate(names)}


def _ratio(s: Interval, n: Interval, lo: float, hi: float) -> Interval:
    if n[0] <= 0:
        return (lo, hi)
    corners = [s[0] / n[0], s[0] / n[1], s[1] / n[0], s[1] / n[1]]
    return (max(lo, min(corners)), min(hi, max(corners)))


def _combine(
    agg: AggregatePlan, noisy: dict[str, NDArray[np.float64]], mechs: dict[str, Laplace]
) -> tuple[NDArray[np.float64], list[Interval]]:
    """The aggregate's noisy values and 95% intervals, per group."""
    if agg.kind in _PAIR_KINDS:
        return _pair(agg, noisy, mechs)
    if agg.kind in ("count_star", "count", "sum"):
        (name,) = agg.statistics
        values = noisy[name]
        width = mechs[name].ci95(0.0)[1]  # one width for every group: the same mechanism noised each
        return values, [(v - width, v + width) for v in values.tolist()]
    assert agg.column is not None and agg.column.lower is not None and agg.column.upper is not None
    lo, hi = agg.column.lower, agg.column.upper
    k = len(agg.statistics)
    beta = 0.05 / k
    widths = {n: mechs[n].half_width(beta) for n in agg.statistics}

    def interval(name: str, i: int) -> Interval:
        return (noisy[name][i] - widths[name], noisy[name][i] + widths[name])

    out = np.empty(len(noisy[agg.statistics[0]]))
    intervals: list[Interval] = []
    if agg.kind == "avg":
        s, n = agg.statistics
        for i in range(out.size):
            count = noisy[n][i]
            out[i] = min(max(noisy[s][i] / count, lo), hi) if count >= 1 else (lo + hi) / 2
            intervals.append(_ratio(interval(s, i), interval(n, i), lo, hi))
        return out, intervals
    q, s, n = agg.statistics
    square_lo = 0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)
    square_hi = max(lo * lo, hi * hi)
    cap = ((hi - lo) / 2) ** 2
    for i in range(out.size):
        count = noisy[n][i]
        if count >= 2:
            mean = min(max(noisy[s][i] / count, lo), hi)
            second = min(max(noisy[q][i] / count, square_lo), square_hi)
            var = (second - mean * mean) * count / (count - 1)
            out[i] = min(max(var, 0.0), cap)
        else:
            out[i] = cap / 2
        n_int = interval(n, i)
        m_lo, m_hi = _ratio(interval(s, i), n_int, lo, hi)
        e_lo, e_hi = _ratio(interval(q, i), n_int, square_lo, square_hi)
        mean_sq_lo = 0.0 if m_lo <= 0 <= m_hi else min(m_lo * m_lo, m_hi * m_hi)
        mean_sq_hi = max(m_lo * m_lo, m_hi * m_hi)
        factor = n_int[0] / (n_int[0] - 1) if n_int[0] > 1 else math.inf
        v_lo = max(0.0, e_lo - mean_sq_hi)
        v_hi = min(cap, (e_hi - mean_sq_lo) * factor) if n_int[0] > 0 else cap
        intervals.append((min(v_lo, v_hi), v_hi))
    if agg.kind == "stddev":
        return np.sqrt(out), [(math.sqrt(a), math.sqrt(b)) for a, b in intervals]
    return out, intervals


def _json_interval(interval: Interval) -> list[float | None]:
    """An interval for JSON: an unbounded end (too few rows to say anything) becomes null."""
    return [v if math.isfinite(v) else None for v in interval]


_PAIR_KINDS = ("covar", "corr", "regr_slope", "regr_intercept")
_SIMULATIONS = 4000


def _pair_value(kind: str, st: dict[str, NDArray[np.float64]]) -> NDArray[np.float64]:
    """The aggregate from (noisy) sufficient statistics; NaN where it is undefined (too few rows)."""
    n, sx, sy, sxy = st["pn"], st["sx"], st["sy"], st["sxy"]
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "covar":
            out = sxy / n - (sx / n) * (sy / n)
        elif kind == "corr":
            num = n * sxy - sx * sy
            den = np.sqrt((n * st["sxx"] - sx * sx) * (n * st["syy"] - sy * sy))
            out = np.clip(num / den, -1.0, 1.0)
        else:
            slope = (n * sxy - sx * sy) / (n * st["sxx"] - sx * sx)
            out = slope if kind == "regr_slope" else (sy - slope * sx) / n
    result: NDArray[np.float64] = np.where(n >= 2, out, np.nan)
    return result


def _pair(
    agg: AggregatePlan, noisy: dict[str, NDArray[np.float64]], mechs: dict[str, Laplace]
) -> tuple[NDArray[np.float64], list[Interval]]:
    """CORR, COVAR_POP, REGR_SLOPE, REGR_INTERCEPT from noisy sufficient statistics (post-processing).

    The interval is a parametric bootstrap: the known noise distributions are simulated around the
    released statistics and the aggregate recomputed; its 2.5 and 97.5 percentiles (approximate: a
    plug-in, unlike the exact intervals of counts and sums)."""
    from privdb.sql.plan import _PAIR_STATISTICS

    roles = dict(zip(_PAIR_STATISTICS[agg.kind], agg.statistics, strict=True))
    released = {role: noisy[name] for role, name in roles.items()}
    values = _pair_value(agg.kind, released)
    draws = np.random.default_rng()  # simulates public noise distributions: no secret is involved
    intervals: list[Interval] = []
    for i in range(values.size):
        simulated = {
            role: released[role][i] + draws.laplace(0.0, mechs[name].scale, _SIMULATIONS)
            for role, name in roles.items()
        }
        sims = _pair_value(agg.kind, simulated)
        sims = sims[np.isfinite(sims)]
        if sims.size < _SIMULATIONS // 2:
            intervals.append((-math.inf, math.inf))
        else:
            lo, hi = np.percentile(sims, [2.5, 97.5])
            intervals.append((float(lo), float(hi)))
    return values, intervals


def _choose(
    plan: Plan,
    hist: Histogram,
    frame: pd.DataFrame,
    groups: list[tuple[Any, ...]],
    q: float | None,
    rng: RandomSource | None,
) -> NDArray[np.float64] | list[Any]:
    """Per group, the exponential mechanism's choice: a grid point for a quantile (utility: minus the
    distance from q·n to the candidate's rank interval, Smith 2011), a domain value for a mode (its count)."""
    nkeys = len(plan.resolved.keys)
    counts: dict[tuple[Any, ...], dict[Any, float]] = {}
    for row in frame.itertuples(index=False, name=None):
        key = tuple(_py(v) for v in row[:nkeys])
        cells = counts.setdefault(key, {})
        cell = _py(row[nkeys])
        cells[cell] = cells.get(cell, 0.0) + float(row[nkeys + 1])  # NaN and NULL keys meet: add
    mech = hist.mechanism(rng)
    if hist.values is not None:  # mode
        index = {v: i for i, v in enumerate(hist.values)}
        chosen: list[Any] = []
        for group in groups:
            u = np.zeros(hist.cells)
            for value, n in counts.get(group, {}).items():
                if value in index:  # values outside the public domain are not candidates
                    u[index[value]] += n
            chosen.append(hist.values[mech.select(u)])
        return chosen
    assert q is not None
    out = np.empty(len(groups))
    for g, group in enumerate(groups):
        per_cell = np.zeros(hist.cells)
        for cell, n in counts.get(group, {}).items():
            per_cell[int(cell)] += n
        below = np.concatenate([[0.0], np.cumsum(per_cell)])[: hist.points]  # #{x < candidate}
        # #{x ≤ candidate}: an int column's cell holds exactly the candidate's value; on a float grid a
        # value equal to a grid point has probability 0, so the interval is a point
        upto = below + per_cell[: hist.points] if hist.integer else below
        total = float(per_cell.sum())
        target = q * total
        pick = mech.select(-np.maximum(np.maximum(below - target, target - upto), 0.0))
        out[g] = hist.lo + pick * hist.width
    return out


def add_noise(
    plan: Plan,
    frame: pd.DataFrame | None,
    rng: RandomSource | None = None,
    histograms: dict[str, pd.DataFrame] | None = None,
) -> NoisyAnswer:
    """Noise every statistic, select keys, combine aggregates, order and limit the rows."""
    groups, truth = _groups(plan, frame)
    mechs = {s.name: s.mechanism(rng) for s in plan.statistics}
    noisy = {}
    for stat in plan.statistics:
        values = truth[stat.name]
        if not values.size:
            noisy[stat.name] = values
            continue
        noisy[stat.name] = mechs[stat.name].release(values)
    keep = np.ones(len(groups), dtype=bool)
    if plan.threshold is not None:
        keep = noisy[plan.threshold.statistic] >= plan.threshold.tau
    index = np.flatnonzero(keep)
    kept_groups = [groups[i] for i in index]
    noisy = {k: v[index] for k, v in noisy.items()}

    columns = [name for name, _, _ in plan.resolved.outputs]
    per_agg: list[tuple[Any, list[Interval] | None]] = []
    for agg in plan.aggregates:
        if agg.histogram is None:
            per_agg.append(_combine(agg, noisy, mechs))
        else:
            assert histograms is not None
            frame_h = histograms[agg.histogram.name]
            per_agg.append((_choose(plan, agg.histogram, frame_h, kept_groups, agg.q, rng), None))
    cells = [  # per aggregate, its values as Python objects (NaN → None), converted in one call each
        [_py(v) for v in values]
        if agg.kind == "mode"
        else [None if v != v else v for v in np.asarray(values, dtype=np.float64).tolist()]
        for agg, (values, _) in zip(plan.aggregates, per_agg, strict=True)
    ]
    rows: list[list[Any]] = [
        [group[i] if role == "key" else cells[i][r] for _, role, i in plan.resolved.outputs]
        for r, group in enumerate(kept_groups)
    ]
    order = list(range(len(rows)))
    for name, desc in reversed(plan.resolved.order):
        col = columns.index(name)

        def sort_key(j: int, c: int = col) -> tuple[bool, Any]:
            return (rows[j][c] is None, rows[j][c])

        order.sort(key=sort_key, reverse=desc)
    order = order[: plan.resolved.limit] if plan.resolved.limit is not None else order
    rows = [rows[j] for j in order]

    accuracy = []
    for agg, (_, intervals) in zip(plan.aggregates, per_agg, strict=True):
        if agg.histogram is not None:
            accuracy.append(_histogram_accuracy(agg, agg.histogram))
            continue
        assert intervals is not None
        first = mechs[agg.statistics[0]]
        entry: dict[str, Any] = {
            "column": agg.output,
            "mechanism": first.name,
            "scale": first.scale,
            "epsilon": agg.epsilon,
            "ci95": _json_interval(intervals[order[0]]) if order else None,
            "ci95_rows": [_json_interval(intervals[j]) for j in order],
        }
        if agg.kind in _PAIR_KINDS:
            entry["method"] = (
                "from noisy sufficient statistics (n, Σx, Σy, Σx², Σy², Σxy over rows with both values); "
                "interval by simulating the noise around them (approximate)"
            )
        if agg.kind in ("avg", "variance", "stddev"):
            entry["method"] = {
                "avg": "noisy sum / noisy count, clipped to the bounds",
                "variance": "noisy sum of squares, sum and count; interval by propagation",
                "stddev": "square root of the noisy variance",
            }[agg.kind]
        accuracy.append(entry)
    return NoisyAnswer(columns, rows, accuracy)


def _histogram_accuracy(agg: AggregatePlan, hist: Histogram) -> dict[str, Any]:
    """What is known of an exponential-mechanism answer's accuracy without looking at the data: with 95%
    probability the chosen candidate's utility is within ``utility_loss`` of the best (McSherry–Talwar)."""
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
    else:
        entry["rank_error95"] = loss
        entry["resolution"] = hist.width
        entry["method"] = (
            f"the {agg.q:g}-quantile by the exponential mechanism over a grid of the bounds (Smith 2011): "
            "with 95% probability q·n lies within rank_error95 of the answer's rank interval"
        )
    return entry
