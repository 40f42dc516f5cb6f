"""Say what an answer's intervals cover, and estimate (with DP) how much contribution bounding dropped.

With a privacy unit ``u`` and ``max_contributions: m``, each unit's rows beyond ``m`` (and its groups beyond
``max_groups: G``) are scaled away before noise (privdb.sql.run.rewrite), so an answer's intervals cover the
*bounded* data, which can be far from the table's own aggregate when many units have more than ``m`` rows.
Whether a unit loses rows depends on the data, so the label says only what is public (the bound), and the
answer carries a noisy count of the units that lost rows:

* ``covers``: "the data" without a privacy unit, else "the data after contribution bounding (at most m rows
  per unit[, in at most G groups])" (values clamped to the declared bounds are added per column);
* the *truncation estimate*: the number of units whose rows kept by the query's WHERE exceed ``m`` or reach
  more than ``G`` groups. One unit changes it by at most 1 (add/remove or substitute), so the geometric
  mechanism at ``ε_t = ε/20`` (``TRUNCATION_SHARE``) releases it; the query's other shares split ``ε − ε_t``,
  so the query still costs exactly the ε written (docs/proofs/sql.md, "Truncation estimate"). Answers to an
  ACCURACY request (the ε chosen, or a step schedule) carry the label but no estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from privdb.mechanisms import Geometric, RandomSource

if TYPE_CHECKING:
    from privdb.catalog.metadata import TableMeta
    from privdb.sql.plan.types import AggregatePlan, Plan

__all__ = [
    "COLUMN",
    "QUERY",
    "TRUNCATION_SHARE",
    "covers",
    "describe",
    "estimate",
    "label",
    "split",
    "units_over",
]

TRUNCATION_SHARE = 20  # the estimate costs ε/20 (5 %) of a query on a table with a privacy unit
COLUMN = "t_over"  # the engine column holding the number of units over the bound
QUERY = "(truncation)"  # the key of the separate engine query, when the statistics query has no place for it
_VALUE_KINDS = ("sum", "avg", "variance", "stddev", "variance_pop", "stddev_pop", "quantile")


def split(epsilon: float, table: TableMeta, accuracy_first: bool) -> tuple[float, float]:
    """``(ε_t, ε − ε_t)``: the truncation estimate's share (0 without a privacy unit, or for an ACCURACY
    request)
    and what is left for the query's statistics, with ``ε_t + rest ≤ ε`` exactly."""
    if table.privacy_unit is None or accuracy_first or epsilon <= 0:
        return 0.0, epsilon
    share = epsilon / TRUNCATION_SHARE
    while Fraction(share) * TRUNCATION_SHARE > Fraction(epsilon):
        share = math.nextafter(share, 0.0)
    rest = epsilon - share
    while Fraction(rest) + Fraction(share) > Fraction(epsilon):
        rest = math.nextafter(rest, 0.0)
    return share, rest


def label(table: TableMeta, grouped: bool) -> str:
    """What every interval of an answer over ``table`` covers, from public facts only."""
    if table.privacy_unit is None:
        return "the data"
    m = table.max_contributions
    groups = f", in at most {table.max_groups} group{'s' * (table.max_groups > 1)}" if grouped else ""
    return (
        f"the data after contribution bounding (at most {m} row{'s' * (m > 1)} per "
        f"{table.privacy_unit}{groups}; a unit's rows beyond are scaled away)"
    )


def covers(plan: Plan, agg: AggregatePlan | None) -> str:
    """What one output column's interval covers: the answer's label, and the clamping of its values."""
    base = label(plan.table, bool(plan.resolved.keys))
    col = agg.column if agg is not None else None
    if agg is None or col is None or agg.kind not in _VALUE_KINDS or col.lower is None or col.upper is None:
        return base
    clamp = f"{col.name} clamped to [{col.lower:g}, {col.upper:g}]"
    if agg.column2 is not None and agg.column2.lower is not None and agg.column2.upper is not None:
        clamp += f", {agg.column2.name} to [{agg.column2.lower:g}, {agg.column2.upper:g}]"
    return f"{base}, {clamp}"


def units_over(frame: Any) -> float:
    """The engine's number of units over the bound: the sum of ``COLUMN`` over the frame's rows (a
    DataFrame or column name → values; NULL is 0, the sum over no rows)."""
    if frame is None:
        return 0.0
    values = frame[COLUMN]
    cells = values.tolist() if hasattr(values, "tolist") else list(values)
    total = 0.0
    for v in cells:
        if v is not None and v == v:  # NaN and NULL are no units
            total += float(v)
    return total


def _mechanism(plan: Plan, rng: RandomSource | None = None) -> Geometric:
    return Geometric(epsilon=plan.truncation_epsilon, sensitivity=1, rng=rng)


def _what(plan: Plan) -> str:
    table = plan.table
    groups = f" or reach more than {table.max_groups} groups" if plan.resolved.keys else ""
    return (
        f"units ({table.privacy_unit}) whose rows kept by the query's WHERE number more than "
        f"{table.max_contributions}{groups}: bounding scaled their rows beyond the bound away"
    )


def estimate(plan: Plan, sources: Mapping[str, Any] | Any, rng: RandomSource | None = None) -> dict[str, Any]:
    """The answer's ``truncation`` field: the noisy number of units over the bound and its 95% interval
    (clipped at 0, which every true count respects), and a one-line note built from those noisy values."""
    mech = _mechanism(plan, rng)
    noisy = float(mech.release(np.array([units_over(sources)]))[0])
    low, high = mech.ci95(noisy)
    value = max(0, round(noisy))
    interval = [max(0, math.ceil(low)), max(0, math.floor(high))]
    m = plan.table.max_contributions
    over = f"more than {m} rows" + (f" or {plan.table.max_groups} groups" if plan.resolved.keys else "")
    if interval[0] > 0:
        note = (
            f"contribution bounding dropped rows: about {value:,} units "
            f"(95%: {interval[0]:,}–{interval[1]:,}) had {over}; the intervals cover the bounded data, not "
            "every row (`privdb tune` helps the owner choose the bound)"
        )
    else:
        note = (
            f"no sign that contribution bounding dropped rows: about {value:,} units (95%: up to "
            f"{interval[1]:,}) had {over}; the intervals cover the bounded data"
        )
    return {
        "units_over_bound": value,
        "ci95": interval,
        "epsilon": plan.truncation_epsilon,
        "mechanism": mech.name,
        "max_contributions": m,
        **({"max_groups": plan.table.max_groups} if plan.resolved.keys else {}),
        "what": _what(plan),
        "note": note,
    }


def describe(plan: Plan) -> dict[str, Any]:
    """What ``explain`` says before any read: what the intervals cover and, with a privacy unit, that
    bounding may drop rows and what the estimate costs and how precise it is."""
    out: dict[str, Any] = {"covers": label(plan.table, bool(plan.resolved.keys))}
    if plan.table.privacy_unit is None:
        return out
    entry: dict[str, Any] = {"possible": True, "what": _what(plan)}
    if plan.truncation_epsilon > 0:
        mech = _mechanism(plan)
        entry |= {
            "epsilon": plan.truncation_epsilon,
            "epsilon_share": plan.truncation_epsilon / plan.epsilon,
            "mechanism": mech.name,
            "ci95_half_width": mech.half_width(0.05),
        }
    else:
        entry["note"] = "an answer to an ACCURACY request carries no truncation estimate"
    return out | {"truncation": entry}
