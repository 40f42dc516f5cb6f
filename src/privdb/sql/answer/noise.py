"""Add noise to the engine's per-group statistics and build the answer with honest 95% intervals.

Each aggregate's values and intervals come from its noisy statistics (privdb.sql.answer.combine); expressions,
HAVING, ORDER BY and LIMIT are applied to them here, all post-processing.

Every answer says what its intervals cover (``covers``: the data, or the data after contribution bounding)
and, on a table with a privacy unit, how many units bounding cut, as a noisy count
(privdb.sql.plan.truncation).

*Keys* are canonical values (privdb.sql.front.keys); the intervals of counts released through the noisy
threshold are conditional on release (privdb.sql.answer.intervals).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import RandomSource
from privdb.mechanisms.base import AdditiveNoise
from privdb.sql.answer import vanish
from privdb.sql.answer.choose import choose, histogram_accuracy
from privdb.sql.answer.combine import PAIR_KINDS, VARIANCE_KINDS, Interval, combine
from privdb.sql.front.checks.validate import hidden_formula
from privdb.sql.front.formulas.compiler import Formula
from privdb.sql.front.formulas.vectors import Values
from privdb.sql.front.keys import canonical_key, canonical_rank, order_key
from privdb.sql.plan import truncation
from privdb.sql.plan.sensitivity import DISTINCT_KINDS
from privdb.sql.plan.truncation import QUERY as TRUNCATION_QUERY
from privdb.sql.plan.types import AggregatePlan, Plan
from privdb.sql.run.read import Statistics

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NoisyAnswer",
    "add_noise",
    "answer",
    "true_values_by_group",
]


@dataclass(frozen=True)
class NoisyAnswer:
    columns: list[str]
    rows: list[list[Any]]
    accuracy: list[dict[str, Any]]
    epsilon: float | None = None  # what the answer costs, where less than reserved (accuracy first: ex post)
    extra: dict[str, Any] = field(default_factory=dict)  # more fields of the result


def _py(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _number(value: Any) -> float:
    """A statistic's value from the engine: NULL (and NaN, ``pd.NA``) is 0, the sum of no rows."""
    value = canonical_key(value)
    return 0.0 if value is None else float(value)


def true_values_by_group(
    plan: Plan, frame: Statistics | None, extra: Mapping[str, pd.DataFrame] | None = None
) -> tuple[list[tuple[Any, ...]], dict[str, NDArray[np.float64]]]:
    """The groups to consider and each statistic's true value per group (0 where a group has no rows).
    ``frame``: the engine's result, as a DataFrame or as column name → values (``fetch_columns``).
    ``extra``: statistics computed by their own query (distinct counts), as frames ``k0 …, n``."""
    nkeys = len(plan.resolved.keys)
    key_cols = [f"k{i}" for i in range(nkeys)]
    separate = [s.name for s in plan.statistics if s.kind in DISTINCT_KINDS]
    names = [s.name for s in plan.statistics if s.kind not in DISTINCT_KINDS]
    # whole columns to Python objects at once (itertuples goes through pandas' indexing row by row)
    if frame is None:  # no noisy sums: only order statistics, modes or distinct counts
        cols: list[list[Any]] = [[] for _ in key_cols + names]
        nrows = 0
    elif isinstance(frame, Mapping):  # fetch_columns: no frame (and no pandas) on the way
        cols = [list(frame[c]) for c in key_cols + names]
        nrows = len(next(iter(frame.values()), ()))
    else:
        cols, nrows = [frame[c].tolist() for c in key_cols + names], len(frame)
    # Keys the engine keeps apart can be one key here (NaN and NULL both become None): their statistics,
    # all sums and counts, are added, never overwritten (which row came last would decide the answer)
    data: dict[tuple[Any, ...], list[float]] = {}
    for r in range(nrows):
        key = tuple(canonical_key(cols[j][r]) for j in range(nkeys))
        values = [_number(cols[j][r]) for j in range(nkeys, len(cols))]
        known = data.get(key)
        data[key] = values if known is None else [a + b for a, b in zip(known, values, strict=True)]
    names += separate
    for row in data.values():
        row.extend([0.0] * len(separate))
    for j, name in enumerate(separate):
        part = (extra or {})[name]
        part_cols = [part[c].tolist() for c in [*key_cols, "n"]]
        for r in range(len(part)):
            key = tuple(canonical_key(part_cols[i][r]) for i in range(nkeys))
            row = data.setdefault(key, [0.0] * len(names))
            row[len(names) - len(separate) + j] += _number(part_cols[nkeys][r])
    if nkeys == 0:
        groups: list[tuple[Any, ...]] = [()]
    elif plan.domains is not None:
        # public values in the metadata's order, mapped as the data's keys are (a NaN there is null)
        groups = list(dict.fromkeys(tuple(canonical_key(v) for v in g) for g in plan.public_groups()))
    else:
        # released only through the noisy threshold, in sorted order: the engine's hash-table order could
        # tell something about the data
        groups = sorted(data, key=lambda g: tuple(canonical_rank(v) for v in g))
    zeros = [0.0] * len(names)
    table = np.array([data.get(g, zeros) for g in groups], dtype=np.float64).reshape(len(groups), len(names))
    return groups, {name: table[:, i] for i, name in enumerate(names)}


def _json_interval(interval: Interval) -> list[float | None]:
    """An interval for JSON: Python numbers (not NumPy's; a whole count's ends stay integers), an unbounded
    end (too few rows to say anything) null."""
    return [
        None if not math.isfinite(v) else int(v) if isinstance(v, int | np.integer) else float(v)
        for v in interval
    ]


def _key_values(groups: list[tuple[Any, ...]], i: int) -> Values:
    """A key as a formula leaf: exact values, numbers as a float array where every value is a number."""
    column = [g[i] for g in groups]
    numeric = all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in column)
    if numeric:
        values = np.array([np.nan if v is None else float(v) for v in column], dtype=np.float64)
        return Values(values, values, values, exact=True)
    return Values(column, exact=True)


def _formula_leaves(
    plan: Plan,
    formula: Formula,
    groups: list[tuple[Any, ...]],
    per_agg: list[tuple[Any, list[Interval] | None]],
    interval_at: Any,
    level: float = 0.05,
) -> list[Values]:
    """The leaves a formula reads; aggregate leaves with intervals at ``1 − level/k`` for ``k`` aggregate
    leaves, so the propagated interval keeps ``1 − level`` coverage (a union bound)."""
    leaves = plan.resolved.leaves
    k = sum(1 for i in formula.leaves if leaves[i][0] == "aggregate")
    alpha = level / max(k, 1)
    out: list[Values] = []
    nan = np.full(len(groups), np.nan)
    for role, index in leaves:
        if role == "key":
            out.append(_key_values(groups, index))
            continue
        values, intervals = per_agg[index]
        if plan.aggregates[index].kind == "mode":
            out.append(Values(list(values)))
            continue
        array = np.asarray(values, dtype=np.float64)
        if intervals is None or (k > 1 and plan.aggregates[index].histogram is not None):
            out.append(Values(array, nan, nan))  # a quantile's interval is released at 95% only
            continue
        if k > 1:
            intervals = interval_at(index, alpha)
        lo = np.array([a for a, _ in intervals], dtype=np.float64)
        hi = np.array([b for _, b in intervals], dtype=np.float64)
        out.append(Values(array, lo, hi))
    return out


def _integer_valued(agg: AggregatePlan) -> bool:
    """A count: released as a whole number (privdb.sql.answer.combine.whole), returned as an int (not
    3459.0)."""
    return agg.kind in ("count_star", "count", "count_distinct")


def _integers(cells: list[Any]) -> list[Any]:
    return [None if v is None else round(v) for v in cells]


def _cells(values: Any) -> list[Any]:
    if isinstance(values, np.ndarray):
        return [None if v != v else v for v in values.astype(np.float64).tolist()]
    return [_py(v) for v in values]


def add_noise(
    plan: Plan,
    frame: Statistics | None,
    rng: RandomSource | None = None,
    histograms: dict[str, pd.DataFrame] | None = None,
) -> NoisyAnswer:
    """Noise every statistic, select keys, combine aggregates, evaluate expressions over them and HAVING
    (post-processing), order and limit the rows. ``histograms``: the frames of order statistics and modes
    (by histogram name) and of distinct counts (by statistic name)."""
    groups, truth = true_values_by_group(plan, frame, histograms)
    mechs = {s.name: s.mechanism(rng) for s in plan.statistics}
    noisy = {}
    for stat in plan.statistics:
        values = truth[stat.name]
        if not values.size:
            noisy[stat.name] = values
            continue
        noisy[stat.name] = mechs[stat.name].release(values)
    out = answer(plan, groups, noisy, mechs, rng, histograms)
    if plan.truncation_epsilon <= 0:
        return out
    # the units over the bound: a column of the statistics query, or a query of its own
    counted = (histograms or {}).get(TRUNCATION_QUERY, frame)
    if counted is None or truncation.COLUMN not in counted:  # a frame made by hand (tests of the noise)
        return out
    return replace(out, extra=out.extra | {"truncation": truncation.estimate(plan, counted, rng)})


def answer(
    plan: Plan,
    groups: list[tuple[Any, ...]],
    noisy: dict[str, NDArray[np.float64]],
    mechs: Mapping[str, AdditiveNoise],
    rng: RandomSource | None = None,
    histograms: dict[str, pd.DataFrame] | None = None,
    alpha: float = 0.05,
) -> NoisyAnswer:
    """The answer from noisy statistics (post-processing) released by ``mechs``; every interval at level
    ``1 − alpha`` (accuracy first asks for more: privdb.sql.accuracy.first)."""
    mechs = dict(mechs)
    keep = np.ones(len(groups), dtype=bool)
    if plan.threshold is not None:
        keep = noisy[plan.threshold.statistic] >= plan.threshold.tau
    index = np.flatnonzero(keep)
    kept_groups = [groups[i] for i in index]
    noisy = {k: v[index] for k, v in noisy.items()}

    per_agg: list[tuple[Any, list[Interval] | None]] = []
    for agg in plan.aggregates:
        if agg.histogram is None:
            per_agg.append(combine(agg, noisy, mechs, plan.threshold, alpha))
        else:
            assert histograms is not None
            frame_h = histograms[agg.histogram.name]
            per_agg.append(choose(plan, agg.histogram, frame_h, kept_groups, agg.q, rng))

    def interval_at(i: int, alpha: float) -> list[Interval]:
        return combine(plan.aggregates[i], noisy, mechs, plan.threshold, alpha)[1]

    resolved = plan.resolved
    n = len(kept_groups)
    if resolved.having is not None:  # post-processing: keep the groups whose predicate is TRUE
        verdict = resolved.having.evaluate(
            _formula_leaves(plan, resolved.having, kept_groups, per_agg, interval_at, alpha), n
        ).values
        passed = [j for j in range(n) if verdict[j] is True]
        kept_groups = [kept_groups[j] for j in passed]
        per_agg = [
            (
                [values[j] for j in passed] if isinstance(values, list) else np.asarray(values)[passed],
                None if intervals is None else [intervals[j] for j in passed],
            )
            for values, intervals in per_agg
        ]
        noisy = {k: v[passed] for k, v in noisy.items()}
        n = len(kept_groups)
    formula_results = [
        f.evaluate(_formula_leaves(plan, f, kept_groups, per_agg, interval_at, alpha), n)
        for f in resolved.formulas
    ]
    agg_cells = [
        _integers(cells) if _integer_valued(agg) else cells
        for agg, cells in zip(plan.aggregates, (_cells(values) for values, _ in per_agg), strict=True)
    ]
    formula_cells = [
        _integers(_cells(r.values)) if f.integer else _cells(r.values)
        for f, r in zip(resolved.formulas, formula_results, strict=True)
    ]

    def cell(role: str, i: int, r: int) -> Any:
        if role == "key":
            return kept_groups[r][i]
        if role == "aggregate":
            return agg_cells[i][r]
        return formula_cells[i][r]

    columns = [name for name, _, _ in resolved.outputs]
    rows: list[list[Any]] = [[cell(role, i, r) for _, role, i in resolved.outputs] for r in range(n)]
    sort_columns = {name.lower(): (role, i) for name, role, i in resolved.outputs}
    for i, agg in enumerate(plan.aggregates):
        sort_columns.setdefault(agg.output.lower(), ("aggregate", i))
    for i in range(len(resolved.formulas)):  # ORDER BY an expression: a formula that is not an output
        sort_columns.setdefault(hidden_formula(i), ("formula", i))
    order = list(range(n))
    for name, desc in reversed(resolved.order):
        role, i = sort_columns[name.lower()]

        def sort_key(j: int, role: str = role, i: int = i) -> tuple[Any, ...]:
            return order_key(cell(role, i, j))

        order.sort(key=sort_key, reverse=desc)
    order = order[: resolved.limit] if resolved.limit is not None else order
    rows = [rows[j] for j in order]

    accuracy = []
    for name, role, i in resolved.outputs:
        if role == "aggregate":  # (an aggregate selected twice: each column has its entry)
            entry = _aggregate_accuracy(plan, plan.aggregates[i], per_agg[i][1], mechs, order)
            accuracy.append(entry | {"column": name})
        elif role == "formula":
            accuracy.append(_formula_accuracy(name, resolved.formulas[i], formula_results[i], order))
    for (_, role, i), entry in zip((o for o in resolved.outputs if o[1] != "key"), accuracy, strict=True):
        entry["covers"] = truncation.covers(plan, plan.aggregates[i] if role == "aggregate" else None)
    extra: dict[str, Any] = {"covers": truncation.label(plan.table, bool(resolved.keys))}
    outside = vanish.outside_domain(plan)  # public notes (issue 26): what the rows cannot show
    if outside is not None:
        extra["outside_domain"] = outside
    marked = vanish.noise_only(plan, [kept_groups[j] for j in order])
    if marked:
        extra["noise_only_rows"] = marked
    return NoisyAnswer(columns, rows, accuracy, extra=extra)


def _formula_accuracy(name: str, formula: Formula, result: Values, order: list[int]) -> dict[str, Any]:
    """An expression over noisy aggregates: post-processing (no ε of its own); its interval carried
    through by interval arithmetic where the functions allow (null where not available)."""
    rows: list[list[float | None] | None] = []
    for j in order:
        lo = None if result.lo is None else float(result.lo[j])
        hi = None if result.hi is None else float(result.hi[j])
        rows.append(None if lo is None or hi is None or lo != lo or hi != hi else _json_interval((lo, hi)))
    return {
        "column": name,
        "mechanism": "post-processing",
        "epsilon": 0.0,
        "ci95": rows[0] if rows else None,
        "ci95_rows": rows,
        "method": "computed from the noisy aggregates it names; 95% interval by interval arithmetic over "
        "theirs (each at 95%/k for k aggregates, a union bound), null where it does not follow",
    }


def _aggregate_accuracy(
    plan: Plan,
    agg: AggregatePlan,
    intervals: list[Interval] | None,
    mechs: Mapping[str, AdditiveNoise],
    order: list[int],
) -> dict[str, Any]:
    if agg.histogram is not None:
        return histogram_accuracy(agg, agg.histogram, intervals, order)
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
    if agg.kind in PAIR_KINDS:
        entry["method"] = (
            "from noisy sufficient statistics (n, Σx, Σy, Σx², Σy², Σxy over rows with both values); "
            "interval by simulating the noise around them (approximate)"
        )
    if agg.kind == "count_distinct":
        entry["method"] = (
            "noisy count of distinct values (each person's values sampled to the contribution bound)"
        )
    if agg.kind in ("avg", *VARIANCE_KINDS):
        entry["method"] = {
            "avg": "noisy sum / noisy count, clipped to the bounds",
            "variance": "noisy sum of squares, sum and count; sample variance (N − 1); interval by "
            "propagation",
            "stddev": "square root of the noisy sample variance (N − 1)",
            "variance_pop": "noisy sum of squares, sum and count; population variance (N); interval by "
            "propagation",
            "stddev_pop": "square root of the noisy population variance (N)",
        }[agg.kind]
    if plan.threshold is not None and agg.statistics[:1] == (plan.threshold.statistic,):
        entry["method"] = (
            f"the noisy count that selected the keys (released only if ≥ τ = {plan.threshold.tau:.6g}); "
            "ci95 is conditional on release: it covers the true count with probability ≥ 95% among "
            "released keys (near τ its lower end reaches 0)"
        )
        entry["conditional_on_release"] = True
    return entry
