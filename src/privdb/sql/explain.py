"""What a DP-SELECT will do, before it reads any data: per output column its mechanism(s), ε share and 95%
± in the answer's units; per noisy statistic its sensitivity and noise; the engine SQL.

Explain reads no data, so where an answer's accuracy depends on the data it says so instead of guessing:

- counts and sums: the mechanism's ± (the same for every group);
- AVG, VARIANCE, STDDEV (ratios of noisy sums): the ± shrinks with the group's size ``n``, which is private.
  It is given for stated sizes (``ci95_half_width_at``: 100, 1,000, 10,000 rows), computed by the answer's
  own interval code for a group of that size whose values are spread evenly over the bounds, with the
  noise at zero: a public assumption, stated, never the private count;
- MEDIAN, QUANTILE, MIN, MAX: the answer's rank error and the rank offset of its interval's ends; the
  interval in values comes with the answer (docs/proofs/order-intervals.md);
- expressions over aggregates: post-processing (ε 0), their interval from their aggregates' in the answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import sqlglot

from privdb.mechanisms.base import AdditiveNoise
from privdb.sql import truncation
from privdb.sql.combine import combine
from privdb.sql.order import ANSWER_SHARE, END_SHARE, bracket
from privdb.sql.plan import AggregatePlan, Plan
from privdb.sql.release import ReleasePlan

__all__ = ["STATED_SIZES", "columns_of", "describe", "describe_release"]

STATED_SIZES = (100, 1_000, 10_000)  # group sizes at which a ratio's ± is stated
_RECORD = {"ci95_half_width": None, "note": "each released value is randomised; no interval"}
_RATIOS = ("avg", "variance", "stddev", "variance_pop", "stddev_pop")


def _pretty(sql: str) -> str:
    if not sql:
        return ""
    try:
        return sqlglot.transpile(sql, read="duckdb", write="duckdb", pretty=True)[0]
    except RecursionError:  # a long chain: the plain SQL says the same
        return sql


def _mechanism_name(mech: AdditiveNoise) -> str:
    return mech.name


def _ratio_at(plan: Plan, agg: AggregatePlan, mechs: dict[str, AdditiveNoise], n: int) -> float:
    """Half the width of the answer's interval for a group of ``n`` rows spread evenly over the bounds,
    the noise at zero (the answer's own propagation code, ``privdb.sql.combine.combine``)."""
    assert agg.column is not None and agg.column.lower is not None and agg.column.upper is not None
    lo, hi = agg.column.lower, agg.column.upper
    even = {"sum": n * (lo + hi) / 2, "sumsq": n * (lo * lo + lo * hi + hi * hi) / 3}
    noisy = {s: np.array([float(even.get(plan.statistic(s).kind, n))]) for s in agg.statistics}
    _, ((a, b),) = combine(agg, noisy, mechs)
    return (b - a) / 2


def _column(plan: Plan, agg: AggregatePlan, name: str) -> dict[str, Any]:
    """One aggregate output column: mechanism(s), ε share, 95% ± where it does not depend on the data."""
    entry: dict[str, Any] = {
        "column": name,
        "role": "aggregate",
        "kind": agg.kind,
        "epsilon": agg.epsilon,
        "epsilon_share": agg.epsilon / plan.epsilon if plan.epsilon else 0.0,
        "ci95_half_width": None,
    }
    hist = agg.histogram
    if hist is not None:
        entry |= {"mechanism": "exponential", "epsilon_per_group": hist.epsilon, "candidates": hist.points}
        loss = hist.mechanism().utility_loss(hist.points, 0.05)
        if agg.kind == "mode":
            entry |= {"count_gap95": loss, "note": f"a public value; its count within {loss:.4g} of the top"}
            return entry
        t, _ = bracket(hist)
        entry |= {
            "rank_error95": loss,
            "interval_rank_offset": t,
            "resolution": hist.width,
            "epsilon_shares": {"answer": ANSWER_SHARE, "interval_low": END_SHARE, "interval_high": END_SHARE},
            "note": f"the 95% interval in values comes with the answer: two more choices aimed {t:.4g} "
            "ranks either side of q·n",
        }
        return entry
    mechs = {s: plan.statistic(s).mechanism() for s in agg.statistics}
    entry["mechanism"] = " + ".join(dict.fromkeys(_mechanism_name(m) for m in mechs.values()))
    if agg.kind in ("count_star", "count", "sum", "count_distinct"):
        (mech,) = mechs.values()
        entry |= {"scale": mech.scale, "ci95_half_width": mech.half_width(0.05)}
        if plan.threshold is not None and agg.statistics == (plan.threshold.statistic,):
            entry["note"] = "released keys only; the interval is conditional on release (wider near τ)"
        return entry
    if agg.kind in _RATIOS:
        entry["ci95_half_width_at"] = {str(n): _ratio_at(plan, agg, mechs, n) for n in STATED_SIZES}
        entry["note"] = (
            "depends on the group's size n, which is private: stated for groups of n rows spread evenly "
            "over the bounds"
        )
        return entry
    entry["note"] = "from noisy sufficient statistics; its interval (simulated) comes with the answer"
    return entry


def columns_of(plan: Plan) -> list[dict[str, Any]]:
    """Explain's per-column facts of a plan (also what ACCURACY chooses ε by: privdb.sql.accuracy)."""
    return _columns(plan)


def _columns(plan: Plan) -> list[dict[str, Any]]:
    """Per output column (and per aggregate used only by HAVING, ORDER BY or an expression) what it costs
    and how accurate it will be."""
    threshold_eps = 0.0  # a key-selection count of its own (not an answer's COUNT(*))
    if plan.threshold is not None and not any(
        plan.threshold.statistic in a.statistics for a in plan.aggregates
    ):
        threshold_eps = plan.statistic(plan.threshold.statistic).epsilon
    out: list[dict[str, Any]] = []
    for name, role, i in plan.resolved.outputs:
        if role == "aggregate":
            out.append(_column(plan, plan.aggregates[i], name))
        elif role == "key":
            mechanism = "public domain" if plan.domains is not None else "noisy threshold"
            out.append(_plain(plan, name, "key", mechanism, threshold_eps, 0.0, "exact key values"))
        else:
            formula = plan.resolved.formulas[i].text
            note = f"{formula}: its interval follows from its aggregates' intervals, with the answer"
            out.append(_plain(plan, name, "expression", "post-processing", 0.0, None, note))
    hidden = " (for HAVING, ORDER BY or an expression)"
    out += [
        _column(plan, a, a.output + hidden) | {"role": "hidden"} for a in plan.aggregates if not a.visible
    ]
    return out


def _plain(
    plan: Plan, name: str, role: str, mechanism: str, epsilon: float, half: float | None, note: str
) -> dict[str, Any]:
    """A column that is no aggregate: a key or an expression."""
    share = epsilon / plan.epsilon if plan.epsilon else 0.0
    return {"column": name, "role": role, "mechanism": mechanism, "epsilon": epsilon, "epsilon_share": share,
            "ci95_half_width": half, "note": note}  # fmt: skip


def describe(plan: Plan, engine_sql: Iterable[str]) -> dict[str, Any]:
    """The plan of a DP-SELECT with aggregates (``engine_sql``: its bound engine queries)."""
    stats = []
    for stat in plan.statistics:
        mech = stat.mechanism()
        stats.append(
            {
                "statistic": stat.name,
                "kind": stat.kind,
                "column": stat.column.name if stat.column else None,
                "sensitivity": stat.sensitivity,
                "changed_groups": stat.changed,
                "mechanism": _mechanism_name(mech),
                "epsilon": stat.epsilon,
                "scale": mech.scale,
                "ci95_half_width": mech.half_width(0.05),
            }
        )
    order_statistics = [
        {
            "column": agg.output,
            "kind": agg.kind,
            "q": agg.q,
            "mechanism": "exponential",
            "epsilon_per_group": agg.histogram.epsilon,
            "sensitivity": agg.histogram.sensitivity,
            "candidates": agg.histogram.points,
            "resolution": agg.histogram.width if agg.histogram.values is None else None,
            "utility_loss95": agg.histogram.mechanism().utility_loss(agg.histogram.points, 0.05),
        }
        for agg in plan.aggregates
        if agg.histogram is not None
    ]
    if plan.domains is not None:
        keys = "public domain"
    elif plan.threshold:
        keys = f"noisy threshold τ = {plan.threshold.tau:.4g} on {plan.threshold.statistic}"
    else:
        keys = "none"
    return {
        "table": plan.table.name,
        "engine_sql": "\n\n".join(_pretty(q) for q in engine_sql if q),
        "privacy_unit": plan.table.privacy_unit,
        "neighbouring": plan.table.neighbouring,
        "columns": _columns(plan),
        "aggregates": [
            {
                "column": a.output if a.visible else f"{a.output} (for HAVING, ORDER BY or an expression)",
                "kind": a.kind,
                "epsilon": a.epsilon,
                "statistics": list(a.statistics),
            }
            for a in plan.aggregates
        ],
        "expressions": [
            {"column": name, "formula": plan.resolved.formulas[i].text, "epsilon": 0.0}
            for name, role, i in plan.resolved.outputs
            if role == "formula"
        ],
        "having": plan.resolved.having.text if plan.resolved.having is not None else None,
        "statistics": stats,
        "order_statistics": order_statistics,
        "keys": keys,
        "groups_released": len(plan.public_groups())
        if plan.domains is not None and plan.resolved.keys
        else None,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
    } | truncation.describe(plan)


def describe_release(plan: ReleasePlan, sql: str) -> dict[str, Any]:
    """The plan of a record release: per released column its mechanism and ε."""
    release = [{"column": c.output, "mechanism": c.mechanism, "epsilon": c.epsilon} for c in plan.columns]
    return {
        "table": plan.table.name,
        "engine_sql": _pretty(sql),
        "privacy_unit": plan.table.privacy_unit,
        "neighbouring": plan.neighbouring,
        "count_epsilon": plan.count_epsilon,
        "columns": [
            r | {"role": "record", "epsilon_share": c.epsilon / plan.epsilon} | _RECORD
            for r, c in zip(release, plan.columns, strict=True)
        ],
        "release": release,
        "aggregates": [],
        "statistics": [],
        "keys": "none (record release)",
        "groups_released": None,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
    }
