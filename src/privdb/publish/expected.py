"""SafePub's calibrated scores: the release's expected loss or correct majority votes, over the sampling.

A class of s records survives sampling and suppression with probability q(s) = P(Bin(s, β) ≥ k): the
release keeps it when at least k of its records are sampled. ARX's scores (``scores``) replace q by a hard
threshold (all or nothing at t) and so must be divided by d·(t − 1) ≈ d·k/β: one record lifting a class
over t moves them by that much. Scored with q itself, one record moves a class's value by at most d·max(1,
s·(q(s + 1) − q(s))) — a binomial probability times s, about √(k/β) for Adult — so the exponential mechanism
sees scores about √(k/β) times sharper for the same ε, and the score is what the release will be on average.

With d quasi-identifiers, a class of s records whose shares (per record, Σ over QIs of the cell's
(leaves − 1)/(domain − 1), in [0, d]) add up to A:

* ``loss``: −Σ_classes [d·s·(1 − q(s)) + A·q(s)] / c_loss (a suppressed record costs d, as in ARX's score);
  ``precision`` the same with a record's share Σ level/height.
* ``classification``: Σ_classes m·q(s) / c_class, m the class's most frequent target count.

q is a public function of (k, β) only: ``QTable`` tabulates it up to S − 1 (S = ⌈4k/β⌉ + 64, past which a
class is kept with probability 1 − q(S − 1) < 1e-9 for the parameters ``parameters`` gives) and sets it to 1
from S on; it is made non-decreasing. The divisors c are maxima over s < S of the exact one-record changes
(docs/proofs/safepub.md, "Calibrated scores").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom

from privdb.anonymize.lattice import Lattice
from privdb.publish.scores import ClassTarget

__all__ = ["CALIBRATED", "QTable", "calibrated_score", "q_table"]

CALIBRATED = ("loss", "precision", "classification")


@dataclass(frozen=True)
class QTable:
    """q(s) for s = 0..S − 1 (q(s) = 1 for s ≥ S) and the sensitivity factors of the calibrated scores."""

    k: int
    beta: float
    q: NDArray[np.float64]
    jump: float  # max over s of s·(q(s + 1) − q(s))
    lift: float  # max over s of q(s + 1) + s·(q(s + 1) − q(s))

    def at(self, sizes: NDArray[np.int64]) -> NDArray[np.float64]:
        """q at each class size."""
        out = np.ones(len(sizes))
        small = sizes < len(self.q)
        out[small] = self.q[sizes[small]]
        return out


def q_table(k: int, beta: float) -> QTable:
    """The table of q for SafePub's (k, β) (module doc)."""
    top = int(np.ceil(4 * k / beta)) + 64
    s = np.arange(top + 1)
    q = np.maximum.accumulate(np.asarray(binom.sf(k - 1, s, beta), dtype=np.float64))
    q[-1] = 1.0  # q(S) = 1: the table's last entry stands for every s ≥ S
    step = np.diff(q)  # q(s + 1) − q(s), s = 0..S − 1, all ≥ 0
    jump = float((s[:-1] * step).max())
    lift = float((q[1:] + s[:-1] * step).max())
    return QTable(k, beta, q[:-1].copy(), jump, lift)


def _loss_factor(table: QTable, d: int) -> float:
    return d * max(1.0, table.jump)


def calibrated_score(
    name: str, lat: Lattice, levels: Sequence[int], table: QTable, target: ClassTarget | None = None
) -> float:
    """Score ``name`` (one of ``CALIBRATED``) of the node ``levels``, in units of its sensitivity."""
    cls, sizes = lat.classes(levels)
    q = table.at(sizes)
    if name == "classification":
        assert target is not None  # checked by the caller (check_inputs)
        width = max(target.distinct, 1)
        key = cls[target.tuples] * width + target.values
        cells, inverse = np.unique(key, return_inverse=True)
        per_value = np.bincount(inverse, weights=target.counts.astype(np.float64))
        top = np.zeros(len(sizes))
        np.maximum.at(top, cells // width, per_value)
        return float((top * q).sum()) / table.lift
    d = len(lat.qis)
    w = lat.weight.astype(np.float64)
    share = np.zeros(len(lat.weight))
    for qi, tg, lv, h in zip(lat.qis, lat._tg, levels, lat.heights.tolist(), strict=True):
        if name == "loss":
            share += qi.cost[lv][tg[lv]]
        elif h > 0:
            share += float(lv) / float(h)
    per_class = np.bincount(cls, weights=share * w, minlength=len(sizes))
    expected = d * sizes * (1.0 - q) + per_class * q
    return -float(expected.sum()) / _loss_factor(table, d)
