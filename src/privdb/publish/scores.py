"""SafePub's score functions: a node's utility for the exponential mechanism, pre-divided by its sensitivity.

A node of the generalisation lattice is scored on the table as it would be released with classes below the
threshold ``t`` suppressed; higher is better and every score changes by at most 1 when one record is added or
removed (Bild, Kuhn, Prasser, PoPETs 2018, Section 5; ARX's ``getScore``), so the mechanism uses Δ = 1.
With d quasi-identifiers and S the suppressed records:

* ``loss``: −(Σ over kept records and QIs of the cell's share (leaves under its label − 1)/(domain − 1)
  + d·|S|) / (d·(t − 1)). One record added either joins a kept class (+ ≤ d), stays suppressed (+ d) or
  lifts a class of t − 1 to t (its t − 1 records fall from d each to shares ≥ 0, it adds ≤ d):
  |Δ| ≤ d·max(1, t − 1).
* ``precision``: the same with the cell's share replaced by level/height of its QI.
* ``aecs``: the number of kept classes, plus one if anything is suppressed (Δ ≤ 1 by the same three cases).
* ``discernibility``: −(|S| + Σ_kept |E|²/n) / c with c = t²/(t − 1) + 1 (5 for t = 1), ARX's form. n varies
  between add/remove neighbours, so with Q = Σ_kept |E|² (Q ≤ n²): a record joining a kept class of s moves
  it by (2s + 1)/(n + 1) − Q/(n(n + 1)) ∈ (−1, 2); staying suppressed by 1 − Q/(n(n + 1)) ∈ (0, 1]; lifting
  a class of t − 1 by −(t − 1) + t²/(n + 1) − Q/(n(n + 1)) ∈ [−t, 1] (t ≤ n + 1). So |Δ| ≤ max(2, t) ≤ c.

* ``entropy`` (non-uniform entropy, ARX's DP form): per QI, the records suppressed or at ``*`` plus
  Σ_v c_v²/n over the other records' values v (c_v of them), averaged over the QIs and divided by the same
  c. Per QI the three cases give (−1, 2), (0, 1] and, lifting a class of t − 1 whose value has c_v kept
  records, −(t − 1) + (2c_v·t + t²)/(n + 1) − Σc²/(n(n + 1)) ∈ [−t, t + 1) (c_v + t ≤ n + 1): |Δ| ≤ t + 1 ≤ c.

* ``classification`` (SafePub Section 5.5; ARX's ``MetricSDClassification`` for a target that is not a
  quasi-identifier): Σ over kept classes of the count of the class's most frequent target value — the
  records a majority vote within their class labels correctly — divided by t. One record added joins a kept
  class (that class's top count moves by 0 or 1), stays suppressed (0), or lifts a class of t − 1 to t (+ its
  top count, ≤ t): |Δ| ≤ max(1, t) = t (ARX divides by k, its threshold; privdb's search uses t). The target
  is read for the score only, never released.

Float evaluation (docs/proofs/safepub.md, "Float scores"): every sum over records or classes is exact — counts
are integers, and a cell's share is floored to a multiple of 1/``GRID`` (a public [0, 1] number, so the
argument above is unchanged) so that shares times counts add up exactly in int64 — and the one or two
divisions at the end round once each (Python's int/int true division rounds once). Each score is within
``SCORE_ERROR`` of its real value, and within ±``SCORE_BOUND`` (``bounded``), which makes that absolute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.hierarchy import STAR
from privdb.anonymize.lattice import Lattice
from privdb.errors import InvalidParameter

__all__ = ["GRID", "SCORES", "SCORE_BOUND", "SCORE_ERROR", "SCORE_RELATIVE_ERROR", "ClassTarget", "bounded",
           "class_target", "grid_shares", "score"]  # fmt: skip

SCORES = ("loss", "precision", "aecs", "discernibility", "entropy", "classification")
GRID = 2**30  # a cell's share is floored to a multiple of 1/GRID: d·n·GRID < 2^63 while d·n < 2^33
SCORE_BOUND = 2.0**27  # scores are clipped to ±this (1-Lipschitz: the sensitivity stays 1)
# every score is computed with relative error ≤ 5.01·2^-53 < 2^-50 (docs/proofs/safepub.md); clipped to
# SCORE_BOUND that is ≤ 2^-50·2^27 absolute: the exponential mechanism's utility_error
SCORE_RELATIVE_ERROR = 2.0**-50
SCORE_ERROR = SCORE_RELATIVE_ERROR * SCORE_BOUND


def bounded(value: float) -> float:
    """``value`` clipped to ±``SCORE_BOUND``: its error becomes absolute (≤ ``SCORE_ERROR``) and public."""
    return min(max(value, -SCORE_BOUND), SCORE_BOUND)


def grid_shares(lat: Lattice, levels: Sequence[int], name: str) -> NDArray[np.int64]:
    """Per distinct tuple, its share times ``GRID``: Σ over QIs of the cell's cost (``loss``; leaves under its
    label − 1 over domain − 1) or level/height (``precision``), each floored to a multiple of 1/``GRID``."""
    total = np.zeros(len(lat.weight), dtype=np.int64)
    for q, tg, lv, h in zip(lat.qis, lat._tg, levels, lat.heights.tolist(), strict=True):
        if name == "loss":
            total += np.floor(q.cost[lv] * GRID).astype(np.int64)[tg[lv]]
        elif h > 0:
            total += math.floor(float(lv) / float(h) * GRID)
    return total


@dataclass(frozen=True)
class ClassTarget:
    """A target column for ``classification``, folded onto a lattice's distinct QI tuples: one entry per
    (tuple, target value) pair that occurs, with its number of records."""

    column: str
    tuples: NDArray[np.int64]
    values: NDArray[np.int64]
    counts: NDArray[np.int64]
    distinct: int


def class_target(lat: Lattice, column: str, values: Sequence[Any] | pd.Series) -> ClassTarget:
    """Fold the target ``values`` (one per record of the lattice's table, NULL a value of its own) onto
    ``lat``'s distinct tuples."""
    codes = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)[0].astype(np.int64)
    distinct = int(codes.max(initial=-1)) + 1
    pairs, counts = np.unique(lat.tuple_of_record * max(distinct, 1) + codes, return_counts=True)
    width = max(distinct, 1)
    return ClassTarget(column, pairs // width, pairs % width, counts.astype(np.int64), distinct)


def _kept(lat: Lattice, levels: Sequence[int], t: int) -> tuple[NDArray[np.bool_], int, int]:
    """Per distinct tuple: kept or not; the number of suppressed records; the number of kept classes."""
    cls, sizes = lat.classes(levels)
    ok = sizes >= t
    kept = ok[cls]
    return kept, int(lat.weight[~kept].sum()), int(ok.sum())


def _loss(lat: Lattice, levels: Sequence[int], t: int) -> float:
    kept, n_supp, _ = _kept(lat, levels, t)
    d = len(lat.qis)
    total = d * n_supp * GRID + int((grid_shares(lat, levels, "loss")[kept] * lat.weight[kept]).sum())
    return -(total / (GRID * d * max(t - 1, 1)))  # exact integers, one rounding


def _precision(lat: Lattice, levels: Sequence[int], t: int) -> float:
    kept, n_supp, _ = _kept(lat, levels, t)
    d = len(lat.qis)
    n_kept = int(lat.weight[kept].sum())
    share = sum(float(lv) / float(h) for lv, h in zip(levels, lat.heights.tolist(), strict=True) if h > 0)
    return float(-(n_kept * share + d * n_supp) / (d * max(t - 1, 1)))


def _aecs(lat: Lattice, levels: Sequence[int], t: int) -> float:
    _, n_supp, n_classes = _kept(lat, levels, t)
    return float(n_classes + (1 if n_supp else 0))


def _discernibility(lat: Lattice, levels: Sequence[int], t: int) -> float:
    _, sizes = lat.classes(levels)
    ok = sizes >= t
    kept = sizes[ok].astype(np.int64)
    # |S| + Σ|E|²/n as one exact ratio of integers, rounded once, then divided once
    value = (int(sizes[~ok].sum()) * lat.n + int((kept**2).sum())) / lat.n if lat.n else 0.0
    return -value / (5.0 if t <= 1 else t * t / (t - 1) + 1.0)


def _classification(lat: Lattice, levels: Sequence[int], t: int, target: ClassTarget) -> float:
    cls, sizes = lat.classes(levels)
    kept = (sizes >= t)[cls[target.tuples]]
    if not kept.any():
        return 0.0
    width = max(target.distinct, 1)
    key = cls[target.tuples][kept] * width + target.values[kept]
    cells, inverse = np.unique(key, return_inverse=True)
    per_value = np.bincount(inverse, weights=target.counts[kept].astype(np.float64))
    top = np.zeros(len(sizes))
    np.maximum.at(top, cells // width, per_value)
    return float(top.sum()) / max(t, 1)


def _entropy(lat: Lattice, levels: Sequence[int], t: int) -> float:
    kept, _, _ = _kept(lat, levels, t)
    w = lat.weight
    total = 0  # Σ over QIs of n·(records suppressed or at *) + Σ_v c_v², an exact integer
    for q, tg, lv in zip(lat.qis, lat._tg, levels, strict=True):
        groups = tg[lv]
        counted = kept & (np.asarray(q.labels[lv], dtype=object)[groups] != STAR)
        counts = np.bincount(groups[counted], weights=w[counted]).astype(np.int64)  # integer sums below 2^53
        total += int(w[~counted].sum()) * lat.n + int((counts**2).sum())
    d = len(lat.qis)
    value = total / (lat.n * d) if lat.n else 0.0  # one rounding, then one division
    return -value / (5.0 if t <= 1 else t * t / (t - 1) + 1.0)


_FUNCTIONS: dict[str, Callable[[Lattice, Sequence[int], int], float]] = {
    "loss": _loss,
    "precision": _precision,
    "aecs": _aecs,
    "discernibility": _discernibility,
    "entropy": _entropy,
}


def score(
    name: str, lat: Lattice, levels: Sequence[int], threshold: int, target: ClassTarget | None = None
) -> float:
    """Score ``name`` of the node ``levels``, in units of its sensitivity (higher is better);
    ``classification`` needs the ``target`` (``class_target``)."""
    if name == "classification":
        if target is None:
            raise InvalidParameter("the classification score needs a target column: give --target COLUMN")
        return bounded(_classification(lat, levels, threshold, target))
    return bounded(float(_FUNCTIONS[name](lat, levels, threshold)))
