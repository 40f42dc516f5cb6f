"""Exact geometric gaps for sparse Bernoulli(q) bits, with q a dyadic rational ``Q/2^32``.

Unary encoding sets each of a person's ``d − 1`` other bits with probability ``q``; for large ``d`` almost all
bits are 0, so privdb draws the *gaps* between set bits instead of the bits: the number of 0s before the next
1 is geometric, ``P(G = k) = (1 − q)^k q``, and a run of independent gaps is exactly a run of independent
Bernoulli(q) bits (docs/proofs/local.md).

``G = #{k ≥ 1 : U < τ_k}`` with ``τ_k = (1 − q)^k`` and ``U`` uniform. Sixteen random bits place ``U`` in one
of 2^16 cells; a cell that holds no threshold fixes ``G`` exactly, read from a table. Cells that hold a
threshold (about 0.1% of draws at ε = 2) and the tail cell ``[0, 2^-16)`` get 64 more random bits and are
decided in float64 with a rigorous error allowance; the few still undecided compare ``U`` with ``τ_k``
exactly (``τ_k`` is rational because ``q`` is). Four gaps per 64-bit word of the CSPRNG.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import _exact
from privdb.mechanisms.randomness import RandomSource

Q_BITS = 32
_CELL_BITS = 16
_CELLS = 1 << _CELL_BITS
_REL = 1e-12  # relative error allowance of the float thresholds when building the table
_MAX_TABLE_THRESHOLDS = 1 << 20  # beyond this (tiny q) every draw takes the float path


class GapSampler:
    """Draws ``P(G = k) = (1 − q)^k q`` for ``q = q_num / 2^32`` exactly."""

    def __init__(self, q_num: int) -> None:
        if not 0 < q_num < 1 << Q_BITS:
            raise ValueError("q must lie in (0, 1)")
        self.q = Fraction(q_num, 1 << Q_BITS)
        self._keep = 1 - self.q  # exact 1 − q
        self._log_keep = math.log1p(-float(self.q))  # < 0
        self._table = self._build_table()
        self._steps = np.where(self._table >= 0, self._table + 1, 0).astype(np.int32)  # 0: not in table
        self._table_max = int(self._table.max())

    def _build_table(self) -> NDArray[np.int32]:
        table = np.full(_CELLS, -1, dtype=np.int32)
        count = math.ceil(_CELL_BITS * math.log(2.0) / -self._log_keep) + 2  # τ_k ≥ 2^-16 for k < count
        if count > _MAX_TABLE_THRESHOLDS:
            return table  # every cell uncertain: the float path decides
        k = np.arange(1, count + 1, dtype=np.float64)
        taus = np.exp(k * self._log_keep)  # descending
        lo_cell = np.floor(taus * (1.0 - _REL) * _CELLS).astype(np.int64)
        hi_cell = np.floor(taus * (1.0 + _REL) * _CELLS).astype(np.int64)
        uncertain = np.zeros(_CELLS + 1, dtype=np.int64)  # difference array over cells
        np.add.at(uncertain, np.clip(lo_cell, 0, _CELLS), 1)
        np.add.at(uncertain, np.clip(hi_cell + 1, 0, _CELLS), -1)
        marked = np.cumsum(uncertain[:_CELLS]) > 0
        marked[0] = True  # U < 2^-16: the tail, beyond the table
        # G on a certain cell j = number of thresholds above j/2^16
        ascending = taus[::-1]
        above = count - np.searchsorted(ascending, np.arange(_CELLS) / _CELLS, side="right")
        table[~marked] = above[~marked].astype(np.int32)
        return table

    @property
    def uncertain_share(self) -> float:
        """Share of draws that leave the table (for the docs)."""
        return float((self._table < 0).mean())

    def draw(self, m: int, source: RandomSource) -> NDArray[np.int64]:
        """``m`` independent gaps."""
        cells = source.words((m + 3) // 4).view(np.uint16)[:m]
        out = self._table[cells].astype(np.int64)
        unsure = np.flatnonzero(out < 0)
        if unsure.size:
            out[unsure] = self._refine(cells[unsure].astype(np.int64), source)
        return out

    def steps(self, m: int, cap: int, source: RandomSource) -> NDArray[np.int32]:
        """``min(G, cap) + 1`` for ``m`` independent gaps ``G`` (``cap < 2^31 − 1``), in int32.

        The distance from one set bit to the next; capping changes nothing beyond ``cap`` positions.
        """
        cells = source.words((m + 3) // 4).view(np.uint16)[:m]
        out = np.take(self._steps, cells)
        unsure = np.flatnonzero(out == 0)
        if unsure.size:
            gaps = self._refine(cells[unsure].astype(np.int64), source)
            out[unsure] = np.minimum(gaps, cap) + 1
        if cap < self._table_max:
            np.minimum(out, cap + 1, out=out)
        return out

    def _refine(self, cells: NDArray[np.int64], source: RandomSource) -> NDArray[np.int64]:
        """``U = (cell + V)/2^16`` with ``V`` from 64 fresh bits: float64 with a margin, else exact."""
        low = source.words(cells.size)
        u = cells.astype(np.float64) * 2.0**-16 + low.astype(np.float64) * 2.0**-80
        with np.errstate(divide="ignore"):
            t = np.log(u) / self._log_keep  # G = floor(t) for U's exact value (t decreases in U)
        allowance = (np.abs(t) + 1.0 / -self._log_keep) * 2.0**-38
        g_lo, g_hi = np.floor(t - allowance), np.floor(t + allowance)
        sure = (g_lo == g_hi) & (u >= 2.0**-60)
        out = np.where(sure, g_lo, 0.0).astype(np.int64)
        for i in np.flatnonzero(~sure):
            prefix = (int(cells[i]) << 64) | int(low[i])
            out[i] = self._exact(prefix)(source)
        return out

    def _exact(self, prefix: int) -> _ExactGap:
        return _ExactGap(self._keep, self._log_keep, prefix)


class _ExactGap:
    """The largest ``k ≥ 0`` with ``U < (1 − q)^k`` for ``U`` known by an 80-bit prefix, decided exactly."""

    def __init__(self, keep: Fraction, log_keep: float, prefix: int) -> None:
        self.keep, self.log_keep, self.prefix = keep, log_keep, prefix

    def __call__(self, source: RandomSource) -> int:
        u = _exact.LazyUniform(self.prefix, _CELL_BITS + 64)
        while u.prefix == 0:
            u.refine(source)
        log_low = math.log(u.prefix) - u.bits * math.log(2.0)
        k = max(int(log_low / self.log_keep), 0)
        while k > 0 and not _exact.less_than(u, _exact.rational(self.keep**k), source):
            k -= 1
        while _exact.less_than(u, _exact.rational(self.keep ** (k + 1)), source):
            k += 1
        return k
