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

Discernibility, non-uniform entropy and classification are SafePub's other three scores; their published
normalisations divide by the table size n, which add/remove neighbours change, so privdb leaves them out
until their sensitivity is proven for that neighbourhood (docs/proofs/safepub.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from privdb.anonymize.lattice import Lattice

__all__ = ["SCORES", "score"]

SCORES = ("loss", "precision", "aecs")


def _kept(lat: Lattice, levels: Sequence[int], t: int) -> tuple[NDArray[np.bool_], int, int]:
    """Per distinct tuple: kept or not; the number of suppressed records; the number of kept classes."""
    cls, sizes = lat.classes(levels)
    ok = sizes >= t
    kept = ok[cls]
    return kept, int(lat.weight[~kept].sum()), int(ok.sum())


def _loss(lat: Lattice, levels: Sequence[int], t: int) -> float:
    kept, n_supp, _ = _kept(lat, levels, t)
    d = len(lat.qis)
    total = float(d * n_supp)
    w = lat.weight[kept].astype(np.float64)
    for q, tg, lv in zip(lat.qis, lat._tg, levels, strict=True):
        total += float((q.cost[lv][tg[lv][kept]] * w).sum())
    return -total / (d * max(t - 1, 1))


def _precision(lat: Lattice, levels: Sequence[int], t: int) -> float:
    kept, n_supp, _ = _kept(lat, levels, t)
    d = len(lat.qis)
    n_kept = int(lat.weight[kept].sum())
    share = sum(float(lv) / float(h) for lv, h in zip(levels, lat.heights.tolist(), strict=True) if h > 0)
    return float(-(n_kept * share + d * n_supp) / (d * max(t - 1, 1)))


def _aecs(lat: Lattice, levels: Sequence[int], t: int) -> float:
    _, n_supp, n_classes = _kept(lat, levels, t)
    return float(n_classes + (1 if n_supp else 0))


_FUNCTIONS: dict[str, Callable[[Lattice, Sequence[int], int], float]] = {
    "loss": _loss,
    "precision": _precision,
    "aecs": _aecs,
}


def score(name: str, lat: Lattice, levels: Sequence[int], threshold: int) -> float:
    """Score ``name`` of the node ``levels``, in units of its sensitivity (higher is better)."""
    return float(_FUNCTIONS[name](lat, levels, threshold))
