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
(docs/proofs/safepub.md, "Calibrated scores"), rounded up so that float rounding never leaves them below.

Float evaluation: classes are grouped by size (q depends on s only); the per-size totals are exact integers
(shares on ``scores.GRID``), each term ``total·q(s)`` rounds at most three times, ``math.fsum`` adds them with
one more rounding and the final division one more: relative error ≤ 5.01·2^-53 (docs/proofs/safepub.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom

from privdb.anonymize.lattice import Lattice
from privdb.publish.scores import GRID, ClassTarget, bounded, grid_shares

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
    q[q < 2.0**-900] = 0.0  # a prefix (q is non-decreasing): no term of a score underflows below normal
    step = np.diff(q)  # q(s + 1) − q(s), s = 0..S − 1, all ≥ 0
    # each float below is within 3 roundings of the exact maximum over the float table: 1 + 2^-48 covers
    # them and the product d·max(1, J) (docs/proofs/safepub.md, "Float scores")
    jump = float((s[:-1] * step).max()) * (1.0 + 2.0**-48)
    lift = float((q[1:] + s[:-1] * step).max()) * (1.0 + 2.0**-48)
    return QTable(k, beta, q[:-1].copy(), jump, lift)


def _loss_factor(table: QTable, d: int) -> float:
    return d * max(1.0, table.jump)


def calibrated_score(
    name: str, lat: Lattice, levels: Sequence[int], table: QTable, target: ClassTarget | None = None
) -> float:
    """Score ``name`` (one of ``CALIBRATED``) of the node ``levels``, in units of its sensitivity."""
    cls, sizes = lat.classes(levels)
    if name == "classification":
        assert target is not None  # checked by the caller (check_inputs)
        width = max(target.distinct, 1)
        key = cls[target.tuples] * width + target.values
        cells, inverse = np.unique(key, return_inverse=True)
        per_value = np.bincount(inverse, weights=target.counts.astype(np.float64))  # integers below 2^53
        top = np.zeros(len(sizes))
        np.maximum.at(top, cells // width, per_value)
        return bounded(math.fsum(_terms(table, sizes, top.astype(np.int64))) / table.lift)
    d = len(lat.qis)
    per_class = np.zeros(len(sizes), dtype=np.int64)  # A·GRID per class, exact
    np.add.at(per_class, cls, grid_shares(lat, levels, name) * lat.weight)
    suppressed = (d * GRID) * sizes  # a class's d·s·GRID, weighted by 1 − q(s)
    expected = math.fsum(_terms(table, sizes, per_class) + _terms(table, sizes, suppressed, complement=True))
    return bounded(-(expected / GRID) / _loss_factor(table, d))


def _terms(
    table: QTable, sizes: NDArray[np.int64], values: NDArray[np.int64], complement: bool = False
) -> list[float]:
    """Terms adding up to Σ over classes of ``values``·q(s) (``1 − q(s)`` if ``complement``), s the class's
    size: per-size totals are exact integers, and each term rounds at most three times."""
    small = sizes < len(table.q)
    per_size = np.zeros(len(table.q), dtype=np.int64)
    np.add.at(per_size, sizes[small], values[small])
    present = np.flatnonzero(per_size)
    factor = 1.0 - table.q[present] if complement else table.q[present]
    terms = per_size[present].astype(np.float64) * factor
    rest = 0 if complement else int(values[~small].sum())  # q = 1 from S on
    return [*terms.tolist(), float(rest)]
