"""Collector-side estimators of the local model: unbiased counts from randomised reports, never true answers.

Every protocol of :mod:`privdb.local` reduces a batch of reports to one *support count* per value:
``C_v`` = how many reports "support" ``v`` (the response was ``v`` for direct protocols; bit ``v`` was set for
unary encoding; ``v`` hashes to the reported bucket for local hashing). A person holding ``v`` supports ``v``
with probability ``p*`` and a person holding any other value with probability ``q*``, independently of each
other, so with ``n_v`` holders of ``v`` among ``n`` people (Wang et al., USENIX Security 2017, Theorem 2)

    n̂_v = (C_v − n·q*) / (p* − q*),   E[n̂_v] = n_v,
    Var[n̂_v] = (n_v·p*(1 − p*) + (n − n_v)·q*(1 − q*)) / (p* − q*)².

The variance is conditional on the true answers (only the randomisation is random): the right one for "how
many of the people who answered hold v". The reported standard error plugs the estimate (clipped to
``[0, n]``) in for ``n_v``; the 95% interval is the normal one of :class:`~privdb.mechanisms.Estimate`.

Estimators accumulate: ``add`` a batch, ``add`` another (a survey that grows), ``merge`` another collector's
state, and ask for :meth:`SupportEstimator.estimate` at any time. :class:`Frequencies` speaks the protocol's
labels: ``freq["yes"]``, ``freq.share("yes")``, ``freq.to_frame()`` (one row per label). Projecting the
estimated frequencies onto the probability simplex (:func:`project_simplex`) is post-processing: it costs no
privacy, lowers the error of the whole vector, and makes the estimates biased (docs/proofs/local.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.local.domain import Domain
from privdb.mechanisms.randomized_response import Estimate

__all__ = ["Frequencies", "SupportEstimator", "project_simplex"]

Floats = NDArray[np.float64]


def project_simplex(vector: ArrayLike) -> Floats:
    """The Euclidean projection of ``vector`` onto the probability simplex ``{x ≥ 0, Σx = 1}``.

    Sort-based algorithm (Held, Wolfe, Crowder 1974; Duchi et al., ICML 2008; Wang and Carreira-Perpiñán,
    arXiv:1309.1541): ``x = max(v − τ, 0)`` with the one threshold ``τ`` that makes the result sum to 1.
    """
    v = np.asarray(vector, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise InvalidParameter("project_simplex takes a non-empty 1-d vector of estimated frequencies")
    if not np.isfinite(v).all():
        raise InvalidParameter("project_simplex takes finite values; the vector has NaN or infinite entries")
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - 1.0
    ranks = np.arange(1, v.size + 1)
    rho = int(np.flatnonzero(u - cumulative / ranks > 0)[-1])
    tau = cumulative[rho] / (rho + 1)
    out: Floats = np.maximum(v - tau, 0.0)
    return out


Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval


@dataclass(frozen=True)
class Frequencies:
    """Unbiased estimates of how many of ``n`` people hold each value of the domain, with their variances.

    Arrays are in domain order; ``freq[label]`` and ``share(label)`` read one value by its label (for a
    domain given as a size, the label is the code ``0 … d−1``). Accessors follow one rule throughout
    :mod:`privdb.local`: what an object holds is a property (``counts``, ``shares``, ``std_errors``,
    ``ci95``, ``projected``), what it computes from arguments is a method.
    """

    n: int
    counts: Floats
    variances: Floats
    domain: Domain | None = None  # None: the codes 0 … d−1

    def __len__(self) -> int:
        return int(self.counts.size)

    @property
    def labels(self) -> tuple[object, ...]:
        """The value each entry estimates, in order."""
        return tuple(range(len(self))) if self.domain is None else self.domain.labels

    def _at(self, value: object) -> int:
        if self.domain is None or self.domain.coded:
            if (
                isinstance(value, bool)
                or not isinstance(value, int | np.integer)
                or not 0 <= value < len(self)
            ):
                raise InvalidParameter(f"no value {value!r} in the domain 0 … {len(self) - 1}")
            return int(value)
        return self.domain.index(value)

    def __getitem__(self, value: object) -> Estimate:
        """The count estimate of one value (by label), with its standard error and 95% interval."""
        i = self._at(value)
        return Estimate(float(self.counts[i]), float(math.sqrt(self.variances[i])))

    def share(self, value: object) -> Estimate:
        """The estimated share of people holding ``value`` (by label), with its standard error."""
        i = self._at(value)
        return Estimate(float(self.counts[i]) / self.n, float(math.sqrt(self.variances[i])) / self.n)

    @property
    def std_errors(self) -> Floats:
        out: Floats = np.sqrt(self.variances)
        return out

    @property
    def shares(self) -> Floats:
        """Estimated shares ``n̂_v / n`` (unbiased; may fall outside [0, 1] and need not sum to 1)."""
        out: Floats = self.counts / self.n
        return out

    @property
    def ci95(self) -> tuple[Floats, Floats]:
        """Normal 95% intervals of every count, as two arrays (low, high)."""
        return self.counts - Z95 * self.std_errors, self.counts + Z95 * self.std_errors

    @property
    def projected(self) -> Floats:
        """Shares projected onto the probability simplex: post-processing, biased, lower total error."""
        return project_simplex(self.shares)

    def to_frame(self) -> pd.DataFrame:
        """One row per value: its label, count, share, standard error, 95% interval of the count, and
        projected share (the collector's table; ``privdb survey estimate`` prints it)."""
        lo, hi = self.ci95
        return pd.DataFrame(
            {
                "value": pd.Series(self.labels, dtype=object),
                "count": self.counts,
                "share": self.shares,
                "std_error": self.std_errors,
                "ci95_low": lo,
                "ci95_high": hi,
                "projected_share": self.projected,
            }
        )


class SupportEstimator:
    """Accumulates support counts and turns them into unbiased count estimates (formula in the module doc).

    ``p_star`` and ``q_star`` may be scalars or one entry per value (the binary protocols need per-value
    ones). Subclasses only say how a batch of reports becomes support counts (:meth:`_support`); ``domain``
    names the values in the estimates (default: the codes ``0 … d−1``).
    """

    def __init__(self, *, d: int, p_star: ArrayLike, q_star: ArrayLike, domain: Domain | None = None) -> None:
        self.d = d
        self.domain = domain
        self.p_star: Floats = np.broadcast_to(np.asarray(p_star, dtype=np.float64), (d,)).copy()
        self.q_star: Floats = np.broadcast_to(np.asarray(q_star, dtype=np.float64), (d,)).copy()
        if not (self.p_star > self.q_star).all():
            raise InvalidParameter("a report must support its true value more often than others (p* > q*)")
        self.n = 0
        self.support = np.zeros(d, dtype=np.int64)

    def _support(self, reports: object) -> tuple[NDArray[np.int64], int]:
        """Support counts of one batch and its number of reports."""
        raise NotImplementedError

    def add(self, reports: object) -> SupportEstimator:
        """Take in one batch of randomised reports (any number of batches, in any order)."""
        counts, n = self._support(reports)
        self.support += counts
        self.n += n
        return self

    def merge(self, other: SupportEstimator) -> SupportEstimator:
        """Add another collector's reports of the same protocol (e.g. from a parallel worker)."""
        if type(other) is not type(self) or not (
            np.array_equal(other.p_star, self.p_star) and np.array_equal(other.q_star, self.q_star)
        ):
            raise InvalidParameter("only estimators of the same protocol and parameters can be merged")
        self.support += other.support
        self.n += other.n
        return self

    def estimate(self) -> Frequencies:
        """Unbiased count estimates of every value so far, with plug-in variances."""
        if self.n == 0:
            raise InvalidParameter("no reports yet: add at least one batch of reports before estimating")
        gap = self.p_star - self.q_star
        counts = (self.support - self.n * self.q_star) / gap
        variances = self.variance(np.clip(counts, 0.0, self.n), n=self.n)
        return Frequencies(self.n, counts, variances, self.domain)

    def variance(self, true_counts: ArrayLike, *, n: int | None = None) -> Floats:
        """Var[n̂_v] given the true count of every value (theory; used for tests and benchmarks)."""
        nv = np.asarray(true_counts, dtype=np.float64)
        total = float(nv.sum()) if n is None else float(n)
        p, q = self.p_star, self.q_star
        out: Floats = (nv * p * (1.0 - p) + (total - nv) * q * (1.0 - q)) / (p - q) ** 2
        return out
