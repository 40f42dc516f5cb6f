"""Optimised unary encoding (OUE), a frequency oracle for large domains: one bit per value of the domain.

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency Estimation", USENIX Security
2017. Like optimised local hashing (:mod:`privdb.local.local_hashing`, the other frequency oracle of that
paper) it keeps the variance of a count near ``4n·e^ε/(e^ε − 1)²`` whatever the domain size ``d``, where
k-ary randomised response grows with ``d``; it sends ``d`` bits where OLH sends a hash seed and a bucket.

A person with value ``v`` sends ``d`` bits: bit ``v`` set with probability ``p = 1/2``, every other
bit with ``q = 1/(e^ε + 1)``. Here ``q`` is rounded *up* to a multiple of ``2^-32`` (so ε never rounds up,
and every coin is exact: see :mod:`privdb.local._gaps`); the estimator uses the same ``q``. A report is the
*set* of its set bits, sorted (a canonical form: the order of a report never tells which bit was the true
one), held for many people at once in :class:`UnaryReports` (compressed sparse rows). The client draws the
gaps between set bits rather than ``d`` coins per person, so ``n·d`` bits are never materialised: memory and
time grow with the number of set bits, ``n(1/2 + (d − 1)q)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks
from privdb.local._gaps import Q_BITS, GapSampler
from privdb.local.domain import Domain
from privdb.local.estimators import SupportEstimator
from privdb.local.protocols import Labels, LocalProtocol, Randomizer
from privdb.mechanisms import _exact, _validate
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = ["OUEProtocol", "UnaryReports"]

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]
_SUM_CHUNK = 1 << 18  # entries per bincount: its int64 copy stays in cache
_WORK = 1 << 20  # gap entries per OUE chunk: the buffers stay in cache


@dataclass(frozen=True)
class UnaryReports:
    """OUE reports of many people: person ``i`` set the bits ``indices[indptr[i]:indptr[i+1]]`` (sorted)."""

    d: int
    indptr: Ints
    indices: NDArray[np.unsignedinteger]

    def __len__(self) -> int:
        return int(self.indptr.size - 1)

    def __getitem__(self, people: slice) -> UnaryReports:
        """The reports of a contiguous range of people."""
        start, stop, step = people.indices(len(self))
        if step != 1:
            raise InvalidParameter("UnaryReports can be sliced by contiguous ranges of people only")
        ptr = self.indptr[start : stop + 1]
        return UnaryReports(self.d, ptr - ptr[0], self.indices[ptr[0] : ptr[-1]])

    def report(self, i: int) -> Ints:
        """The set bits of person ``i``'s report (codes: ``protocol.domain.labels_of`` names them)."""
        return self.indices[self.indptr[i] : self.indptr[i + 1]].astype(np.int64)

    @classmethod
    def from_sets(cls, d: int, sets: list[Ints]) -> UnaryReports:
        """Reports from each person's set bits (codes), e.g. as a collector receives them."""
        rows = [np.unique(s) for s in sets]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([r.size for r in rows], out=indptr[1:])
        dtype: type[np.unsignedinteger] = np.uint16 if d <= 1 << 16 else np.uint32
        indices: NDArray[np.unsignedinteger] = (
            np.concatenate(rows).astype(dtype) if indptr[-1] else np.zeros(0, dtype)
        )
        return cls(d, indptr, indices)

    def to_bits(self) -> NDArray[np.bool_]:
        """The ``n × d`` bit matrix the people sent (for small batches only)."""
        if len(self) * self.d > 1 << 28:
            raise InvalidParameter("to_bits would build over 2^28 bits; slice fewer people first")
        bits = np.zeros((len(self), self.d), dtype=np.bool_)
        rows = np.repeat(np.arange(len(self)), np.diff(self.indptr))
        bits[rows, self.indices.astype(np.int64)] = True
        return bits

    def column_sums(self) -> Ints:
        """How many reports set each bit (in chunks: bincount widens its input to int64)."""
        out = np.zeros(self.d, dtype=np.int64)
        for lo in range(0, self.indices.size, _SUM_CHUNK):
            counts = np.bincount(self.indices[lo : lo + _SUM_CHUNK], minlength=self.d)
            if counts.size > self.d:
                raise InvalidParameter(f"a report sets a bit outside the domain [0, {self.d})")
            out += counts
        return out


class _OUEEstimator(SupportEstimator):
    def _support(self, reports: object) -> tuple[Ints, int]:
        if not isinstance(reports, UnaryReports):
            raise InvalidParameter("OUE estimators take UnaryReports (what OUEProtocol's randomizer returns)")
        if reports.d != self.d:
            raise InvalidParameter(f"these reports have d = {reports.d}, the protocol d = {self.d}")
        return reports.column_sums(), len(reports)


class _OUERandomizer(Randomizer[UnaryReports]):
    """Draws the gaps between set bits row by row, in chunks of about 2^20 entries held in reused buffers."""

    def __init__(self, protocol: OUEProtocol, rng: RandomSource | None) -> None:
        super().__init__(protocol)
        self._source = rng if rng is not None else default_source()
        self._gaps = protocol._gaps
        self._d = protocol.d
        self._dtype: type[np.unsignedinteger] = np.uint16 if protocol.d <= 1 << 16 else np.uint32
        q = float(protocol.q)
        mean = (protocol.d - 1) * q
        # gaps drawn per person: enough for all but ~3e-5 of people, who draw more
        self._per_row = max(4, math.ceil(mean + 4.0 * math.sqrt(mean * (1.0 - q)) + 4.0))
        # positions are summed in int32 with wrap-around: exact while one row's sum stays below 2^31
        self._wide = self._per_row * (protocol.d + 1) >= 2**31

    def _randomize(self, x: Ints) -> UnaryReports:
        rows = min(max(1, _WORK // self._per_row), x.size)
        work = _Work(rows, self._per_row, self._dtype, wide=self._wide)
        # room for every row's k + 1 entries: only the pages written are ever touched
        out = np.empty(x.size * (self._per_row + 1), dtype=self._dtype)
        counts = np.empty(x.size, dtype=np.int64)
        filled = 0
        for i in range(0, x.size, rows):
            chunk = x[i : i + rows]
            kept, more = self._chunk(chunk, work)
            size = int(kept.sum())
            if more is None:
                np.compress(
                    work.keep[: chunk.size].ravel(),
                    work.cols[: chunk.size].ravel(),
                    out=out[filled : filled + size],
                )
            else:
                if filled + more[0].size > out.size:  # pragma: no cover - needs far more than k set bits
                    out = np.concatenate([out[:filled], np.empty(more[0].size + x.size, dtype=self._dtype)])
                size = more[0].size
                out[filled : filled + size] = more[0]
                kept = more[1]
            counts[i : i + chunk.size] = kept
            filled += size
        indptr = np.zeros(x.size + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return UnaryReports(self._d, indptr, out[:filled])

    def _chunk(self, x: Ints, work: _Work) -> tuple[Ints, tuple[NDArray[np.unsignedinteger], Ints] | None]:
        """Reports of a chunk of people, left in ``work.cols`` where ``work.keep`` is set.

        Returns the set bits per person, and for the rare chunks with rows that need more gaps the whole
        chunk's sorted set bits and counts.
        """
        n, k, slots = x.size, self._per_row, self._d - 1  # the d − 1 bits other than the true one
        # end = slot + 1 of each set bit: running sums of (gap + 1), restarted per row
        steps = self._gaps.steps(n * k, self._d, self._source)  # a step past the row's end stays past it
        end = work.end[:n]
        if self._wide:
            np.cumsum(steps, out=end.reshape(-1))
        else:
            np.cumsum(steps, out=steps)
            end[:] = steps.reshape(n, k)
        base = np.empty(n, dtype=end.dtype)
        base[0] = 0
        base[1:] = end[:-1, -1]
        end -= base[:, None]
        below = work.below[:n]
        np.less_equal(end, x.astype(end.dtype)[:, None], out=below)  # set bits before the true bit
        np.subtract(end, below, out=end)  # slot -> bit: col = slot + (slot >= x) = end − (end <= x)
        valid = work.valid[:n]
        np.less_equal(end, slots, out=valid)
        # the true bit (probability 1/2) in its sorted place: shift each row right by one after it
        heads = np.unpackbits(self._source.words((n + 63) // 64).view(np.uint8))[:n].astype(np.bool_)
        at = np.count_nonzero(below, axis=1)
        cols, keep, rows = work.cols[:n], work.keep[:n], np.arange(n)
        cols[:, 1:] = end
        np.copyto(cols[:, :k], end, where=below, casting="unsafe")
        cols[rows, at] = x
        keep[:, 1:] = valid
        np.copyto(keep[:, :k], True, where=below)
        keep[rows, at] = heads
        counts = np.count_nonzero(keep, axis=1).astype(np.int64)
        unfinished = np.flatnonzero(valid[:, -1])  # rows whose gaps ran out inside their slots (rare)
        if not unfinished.size:
            return counts, None
        return counts, self._more(cols[keep], counts, unfinished, end[unfinished, -1].astype(np.int64), x)

    def _more(
        self, cols: NDArray[np.unsignedinteger], counts: Ints, rows: Ints, last_bits: Ints, x: Ints
    ) -> tuple[NDArray[np.unsignedinteger], Ints]:
        """Finish the rows whose gaps did not reach the end of their slots; each such row is re-sorted."""
        slots = self._d - 1
        bounds = np.concatenate([[0], np.cumsum(counts)])
        segments, done, new_counts = [], 0, counts.copy()
        for r, last_bit in zip(rows.tolist(), last_bits.tolist(), strict=True):
            slot = last_bit - (1 if last_bit > x[r] else 0)  # the last drawn set slot of the row
            more: list[int] = []
            while True:
                nxt = slot + np.cumsum(np.minimum(self._gaps.draw(64, self._source), self._d) + 1)
                more.extend(int(s) for s in nxt[nxt < slots])
                slot = int(nxt[-1])
                if slot >= slots:
                    break
            extra = np.array(more, dtype=np.int64)
            row = np.concatenate(
                [cols[bounds[r] : bounds[r + 1]], (extra + (extra >= x[r])).astype(cols.dtype)]
            )
            segments += [cols[done : bounds[r]], np.sort(row)]
            done = int(bounds[r + 1])
            new_counts[r] = row.size
        segments.append(cols[done:])
        return np.concatenate(segments), new_counts


class _Work:
    """Work buffers of one ``randomize`` call, reused chunk after chunk (fresh memory costs page faults)."""

    def __init__(self, rows: int, k: int, dtype: type[np.unsignedinteger], *, wide: bool) -> None:
        self.end: NDArray[Any] = np.empty((rows, k), dtype=np.int64 if wide else np.int32)
        self.below = np.empty((rows, k), dtype=np.bool_)
        self.valid = np.empty((rows, k), dtype=np.bool_)
        self.cols = np.empty((rows, k + 1), dtype=dtype)
        self.keep = np.empty((rows, k + 1), dtype=np.bool_)


class OUEProtocol(LocalProtocol[UnaryReports]):
    """Optimised unary encoding: ``p = 1/2``, ``q = 1/(e^ε + 1)`` (rounded up to 2^-32), per-count variance
    ``n·q(1 − q)/(p − q)² + n_v(1 − p − q)/(p − q)``, about ``4n·e^ε/(e^ε − 1)²`` for rare values.
    """

    name = "oue"

    def __init__(self, *, epsilon: float, d: int | None = None, domain: Labels | None = None) -> None:
        self._epsilon = _checks.epsilon(epsilon)
        self.domain = Domain.of(d, domain)
        self.d = self.domain.size
        # q = ⌈2^32/(e^ε + 1)⌉/2^32 ≥ 1/(e^ε + 1), from rigorous bounds: ε is never rounded up
        hi = _exact.odds(-_validate.exact(self._epsilon), 1)(128)[1]
        q_num = min(max(math.ceil(hi * (1 << Q_BITS)), 1), (1 << (Q_BITS - 1)) - 1)
        self.p = Fraction(1, 2)
        self.q = Fraction(q_num, 1 << Q_BITS)
        self._gaps = GapSampler(q_num)

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def pair_matrix(self) -> list[list[Fraction]]:
        """Bits ``v``, ``u`` under true values ``v``, ``u`` (columns 00, 01, 10, 11); other bits cancel."""
        p, q = self.p, self.q

        def row(pv: Fraction, pu: Fraction) -> list[Fraction]:
            return [(1 - pv) * (1 - pu), (1 - pv) * pu, pv * (1 - pu), pv * pu]

        return [row(p, q), row(q, p)]

    @property
    def matrix(self) -> list[list[Fraction]]:
        """The full ``d × 2^d`` response matrix (``d ≤ 10``); column ``j`` is the bit vector of ``j``."""
        if self.d > 10:
            raise InvalidParameter(f"the full OUE matrix has 2^{self.d} columns; use pair_matrix")
        out = []
        for v in range(self.d):
            row = []
            for j in range(1 << self.d):
                prob = Fraction(1)
                for bit in range(self.d):
                    on = (j >> bit) & 1
                    pb = self.p if bit == v else self.q
                    prob *= pb if on else 1 - pb
                row.append(prob)
            out.append(row)
        return out

    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[UnaryReports]:
        return _OUERandomizer(self, rng)

    def estimator(self) -> SupportEstimator:
        return _OUEEstimator(d=self.d, p_star=float(self.p), q_star=float(self.q), domain=self.domain)

    def likelihood(self, report: object) -> Floats:
        """``report``: the set bits of one person's report, as values of the domain (or their ``d`` bits as
        booleans)."""
        arr = np.asarray(report)
        if arr.dtype == np.bool_ and arr.shape == (self.d,):
            bits = arr
        else:
            bits = np.zeros(self.d, dtype=np.bool_)
            bits[self.domain.codes(report, what="the report's set bits")] = True  # type: ignore[arg-type]
        p, q = float(self.p), float(self.q)
        return np.where(bits, p / q, (1.0 - p) / (1.0 - q))
