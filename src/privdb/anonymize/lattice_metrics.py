"""The full-domain search's metrics, as ARX defines them (``org.deidentifier.arx.metric.v2``).

Cell metrics add up a cost per record and quasi-identifier, then aggregate the columns:

* ``loss``: ARX's loss (Iyengar 2002): per cell (leaves under the label − 1) / (leaves − 1), per column the
  mean over records; the columns' arithmetic mean (privdb's default since issue 12).
* ``geometric-loss``: the same columns aggregated as ARX's ``Metric.createLossMetric()`` does, by the
  geometric mean Π(1 + lossⱼ)^(1/d) − 1.
* ``entropy``: non-uniform entropy (Gionis, Tassa 2009; ARX's ``createEntropyMetric`` and
  ``createPrecomputedEntropyMetric(…, false)``): a record whose value v is published as g costs
  log₂(#g / #v), counts over the table; the suppressed records of a column add −Σ c·log₂(c / S) over the
  values g they had at the node (c of them, S suppressed in all); columns summed.
* ``monotonic-entropy``: the same without the suppression term (ARX's
  ``createPrecomputedEntropyMetric(…, true)``): suppression costs nothing more than the node's generalisation.
* ``precision`` (Sweeney 2002; ARX's ``createPrecisionMetric``): a kept cell at level h of a hierarchy of
  height H costs h/H, a suppressed one 1; per column the mean over records, the columns' arithmetic mean.
* ``height`` (ARX's ``createHeightMetric``): the sum of the node's levels; suppression costs nothing.

The generalisation/suppression factor gs ∈ [0, 1] (ARX's gsFactor, default 0.5: both weigh alike) weighs
the two: generalisation by g = 1 if gs ≤ 0.5 else 1 − 2(gs − 0.5), suppression by s = 2·gs if gs < 0.5
else 1. For the loss a kept cell costs g·cost, a suppressed one 1 when s = 1, else cost + s·(1 − cost); for
the entropy metrics the generalisation term is multiplied by g and the suppression term by s. Precision and
height take ARX's default 0.5 only (``GS_FREE``).

Class metrics: ``discernibility`` (Bayardo, Agrawal 2005; ARX's non-monotonic DM): Σ|E|² over kept
classes + n·|suppressed|; ``dm-star`` (ARX's ``createDiscernabilityMetric(true)``, DM*): Σ|E|² over all
classes, the suppressed ones included, with no penalty; ``aecs``: n / #classes, the suppressed records one
class.

Every cell metric's value without the suppression term is a lower bound on the node and on every node above
it (costs only grow with generalisation), which is what the optimal search orders by.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from privdb.anonymize.lattice_levels import QiLevels
from privdb.errors import InvalidParameter

__all__ = ["AGGREGATES", "CELL_METRICS", "METRICS", "aggregate", "factors", "tuple_costs"]

AGGREGATES = {
    "loss": "mean", "geometric-loss": "geometric", "entropy": "sum", "monotonic-entropy": "sum",
    "precision": "mean", "height": "sum",
}  # fmt: skip
CELL_METRICS = tuple(AGGREGATES)
METRICS = (*CELL_METRICS, "discernibility", "dm-star", "aecs")
GS_FREE = ("precision", "height")  # metrics without a gs factor (ARX's default 0.5 only)
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def check_metric(metric: str, gs_factor: float) -> None:
    """Refuse an unknown metric or a gs factor outside 0..1."""
    if metric not in METRICS:
        raise InvalidParameter(f"unknown metric '{metric}': use one of {', '.join(METRICS)}")
    if isinstance(gs_factor, bool) or not isinstance(gs_factor, (int, float)) or not 0 <= gs_factor <= 1:
        raise InvalidParameter(
            f"gs_factor weighs generalisation against suppression in 0..1 (got {gs_factor!r})"
        )
    if metric in GS_FREE and gs_factor != 0.5:
        raise InvalidParameter(
            f"the {metric} metric has no gs factor (ARX defines it at 0.5): leave gs_factor at 0.5, or use "
            "metric='loss'"
        )


def factors(gs_factor: float) -> tuple[float, float]:
    """ARX's generalisation and suppression factors (g, s) of a gs factor."""
    g = 1.0 if gs_factor <= 0.5 else 1.0 - 2.0 * (gs_factor - 0.5)
    s = 2.0 * gs_factor if gs_factor < 0.5 else 1.0
    return g, s


def aggregate(columns: FloatArray, metric: str) -> FloatArray:
    """The metric's value from its per-column values (the last axis)."""
    how = AGGREGATES.get(metric, "mean")  # a class metric: the loss's columns (for the heuristics' bound)
    if how == "mean":
        return np.asarray(columns.mean(axis=-1), dtype=np.float64)
    if how == "sum":
        return np.asarray(columns.sum(axis=-1), dtype=np.float64)
    d = columns.shape[-1]
    return np.asarray(np.prod((1.0 + columns) ** (1.0 / d), axis=-1) - 1.0, dtype=np.float64)


def tuple_costs(
    metric: str, qis: Sequence[QiLevels], tup: Sequence[IntArray], weight: IntArray
) -> list[list[FloatArray]]:
    """Per quasi-identifier and level, the cost of one cell of each distinct tuple (before g)."""
    out: list[list[FloatArray]] = []
    for q, t in zip(qis, tup, strict=True):
        if metric in GS_FREE:  # one cost per level: h/H (precision) or h (height)
            scale = max(q.height, 1) if metric == "precision" else 1
            out.append([np.full(len(t), lv / scale) for lv in range(q.height + 1)])
            continue
        if metric not in ("entropy", "monotonic-entropy"):  # the loss (the class metrics order by it)
            out.append([q.cost[lv][q.groups[lv][t]] for lv in range(q.height + 1)])
            continue
        raw = np.bincount(t, weights=weight)[t]  # records holding each tuple's raw value
        per_level = []
        for lv in range(q.height + 1):
            g = q.groups[lv][t]
            per_level.append(np.log2(np.bincount(g, weights=weight)[g] / raw))
        out.append(per_level)
    return out


def suppression_terms(
    metric: str,
    group_codes: Sequence[IntArray],
    cell_costs: Sequence[FloatArray],
    weight: IntArray,
    supp: NDArray[np.bool_],
    g: float,
    s: float,
    totals: Sequence[FloatArray] | None = None,
) -> FloatArray:
    """Per column, what the suppressed tuples add to the generalisation term g·Σ cost (in records).
    ``totals``: per column, the records of each group over all tuples (entropy: where most tuples are
    suppressed, their counts are the totals less the kept tuples' — integers, so the same bits)."""
    d = len(cell_costs)
    if not supp.any() or metric in ("monotonic-entropy", "height"):
        return np.zeros(d)
    if metric == "entropy":
        return -s * _suppressed_entropy(group_codes, weight, supp, totals)
    rows = np.flatnonzero(supp)  # once for every column: take by index is ~3× a boolean mask per column
    w = weight.take(rows).astype(np.float64)
    out = np.zeros(d)
    for j in range(d):
        cost = cell_costs[j].take(rows)
        pen = np.ones_like(cost) if s == 1.0 else cost + s * (1.0 - cost)
        out[j] = float(((pen - g * cost) * w).sum())
    return out


def _suppressed_entropy(
    group_codes: Sequence[IntArray],
    weight: IntArray,
    supp: NDArray[np.bool_],
    totals: Sequence[FloatArray] | None,
) -> FloatArray:
    """Per column, Σ c·log₂(c/C) over the suppressed records' groups (c a group's suppressed records, C all
    suppressed records): counted over the suppressed tuples, or over the kept ones taken from ``totals``."""
    kept_from = totals if totals is not None and 2 * int(np.count_nonzero(supp)) > len(supp) else None
    rows = np.flatnonzero(supp if kept_from is None else ~supp)  # once for every column: take beats a mask
    w = weight.take(rows).astype(np.float64)
    out = np.zeros(len(group_codes))
    for j, codes in enumerate(group_codes):
        if kept_from is None:
            counts = np.asarray(np.bincount(codes.take(rows), weights=w), dtype=np.float64)
        else:
            counts = kept_from[j] - np.bincount(codes.take(rows), weights=w, minlength=len(kept_from[j]))
        counts = counts[counts > 0]
        out[j] = float((counts * np.log2(counts / counts.sum())).sum())
    return out
