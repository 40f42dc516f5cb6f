"""The accuracy an answer will have, known from its plan before anything is read: per output column its
mechanism(s), ε share and 95% ± in the answer's units, where that ± does not depend on the data (explain
shows it; ``DP-SELECT ACCURACY`` chooses ε by it, privdb.sql.accuracy).

- counts and sums: the mechanism's ± (the same for every group);
- AVG, VARIANCE, STDDEV (ratios of noisy sums): the ± shrinks with the group's size ``n``, which is private.
  It is given for stated sizes (``ci95_half_width_at``: 100, 1,000, 10,000 rows), computed by the answer's
  own interval code for a group of that size whose values are spread evenly over the bounds, with the
  noise at zero: a public assumption, stated, never the private count;
- MEDIAN, QUANTILE, MIN, MAX: the answer's rank error and the rank offset of its interval's ends; under
  USING SMOOTH the mechanism and its β, and no ± at all (the noise scales with the data's smooth
  sensitivity, so no interval is released);
- expressions over aggregates: post-processing (ε 0), their interval from their aggregates' in the answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privdb.mechanisms.base import AdditiveNoise
from privdb.mechanisms.smooth import smooth_beta
from privdb.sql.answer.combine import combine
from privdb.sql.plan.order import bracket
from privdb.sql.plan.types import ANSWER_SHARE, END_SHARE, AggregatePlan, Plan

__all__ = ["STATED_SIZES", "columns_of"]

STATED_SIZES = (100, 1_000, 10_000)  # group sizes at which a ratio's ± is stated
_RATIOS = ("avg", "variance", "stddev", "variance_pop", "stddev_pop")


def _ratio_at(plan: Plan, agg: AggregatePlan, mechs: dict[str, AdditiveNoise], n: int) -> float:
    """Half the width of the answer's interval for a group of ``n`` rows spread evenly over the bounds,
    the noise at zero (the answer's own propagation code, ``privdb.sql.answer.combine.combine``)."""
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
    if hist is not None and hist.smooth_delta > 0:  # USING SMOOTH (privdb.sql.answer.smooth)
        entry |= {
            "mechanism": "smooth_sensitivity",
            "epsilon_per_group": hist.epsilon,
            "delta_per_group": hist.smooth_delta,
            "beta": smooth_beta(hist.epsilon, hist.smooth_delta),
            "resolution": hist.width,
            "note": "smooth sensitivity (Laplace noise of scale 2·S/ε, (ε, δ)-DP): no interval is released, "
            "its width would depend on the data through S",
        }
        return entry
    if hist is not None:
        entry |= {"mechanism": "exponential", "epsilon_per_group": hist.epsilon, "candidates": hist.points}
        loss = hist.mechanism().utility_loss(hist.points, 0.05)
        if agg.kind == "mode":
            cap = hist.mechanism().max_span / 2.0
            entry |= {
                "count_gap95": loss,
                "note": f"a public value; its count within {loss:.4g} of the top (of {cap:.3g}, the counts' "
                "public cap, if the top count exceeds it)",
            }
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
    entry["mechanism"] = " + ".join(dict.fromkeys(m.name for m in mechs.values()))
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
