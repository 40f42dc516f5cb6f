"""Optimised local hashing (OLH), a frequency oracle for large domains: a hash seed and one noisy bucket.

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency Estimation", USENIX Security
2017. Like optimised unary encoding (:mod:`privdb.local.unary_encoding`, the other frequency oracle of that
paper) it keeps the variance of a count near ``4n·e^ε/(e^ε − 1)²`` whatever the domain size ``d``, where
k-ary randomised response grows with ``d``; a report is three integers where OUE's is ``d`` bits.

A person draws a hash function ``H(x) = ((a·x + b) mod P) mod g`` from the universal family of
Carter and Wegman (1979) — ``P`` the smallest prime ``≥ d``, ``a`` uniform in ``[1, P)``, ``b`` uniform in
``[0, P)``, a fresh seed per person — and sends ``(a, b, y)`` with ``y`` the ``g``-ary randomised response
to ``H(v)``, ``g = round(e^ε + 1)`` (Wang et al., §4.4). The collector counts, for each value ``v``, the
reports with ``H(v) = y``. For ``x ≠ v`` the pair ``(H(x), H(v))`` before the final ``mod g`` is uniform
over distinct pairs in ``[0, P)²``, so their collision probability ``c`` is known exactly (≤ 1/g) and the
estimator is exactly unbiased for this family (docs/proofs/local.md). The collector enumerates, per report,
only the ``≈ P/g`` values that hash to its ``y`` (``v = a⁻¹(t − b) mod P`` for ``t ≡ y mod g``), not all
``d``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks
from privdb.local.domain import Domain
from privdb.local.estimators import SupportEstimator
from privdb.local.protocols import Labels, LocalProtocol, Randomizer
from privdb.mechanisms import _samplers
from privdb.mechanisms.randomized_response import KaryRandomizedResponse
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = ["HashReports", "OLHProtocol"]

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]
_CHUNK = 1 << 24  # entries per OLH work buffer (64 MiB of uint32)


def next_prime(n: int) -> int:
    """The smallest prime ``≥ n`` (trial division: ``n < 2^31``)."""
    candidate = max(n, 2)
    while True:
        if candidate < 4 or (
            candidate % 2 and all(candidate % f for f in range(3, math.isqrt(candidate) + 1, 2))
        ):
            return candidate
        candidate += 1


def _mod_inverse(a: Ints, prime: int) -> Ints:
    """``a^(P−2) mod P`` for every entry (Fermat), by square-and-multiply in uint64 (``P < 2^31``)."""
    base = a.astype(np.uint64) % np.uint64(prime)
    result = np.ones_like(base)
    e, mod = prime - 2, np.uint64(prime)
    while e:
        if e & 1:
            result = result * base % mod
        base = base * base % mod
        e >>= 1
    return result.astype(np.int64)


@dataclass(frozen=True)
class HashReports:
    """OLH reports of many people: hash seeds ``a``, ``b`` and the randomised bucket ``y`` of each."""

    prime: int
    g: int
    a: Ints
    b: Ints
    y: Ints

    def __len__(self) -> int:
        return int(self.y.size)

    def __getitem__(self, people: slice) -> HashReports:
        return HashReports(self.prime, self.g, self.a[people], self.b[people], self.y[people])

    def hash(self, values: ArrayLike) -> Ints:
        """Each person's hash of the matching entry of ``values``: ``((a·x + b) mod P) mod g``."""
        x = np.asarray(values, dtype=np.int64)
        out: Ints = (self.a * x + self.b) % self.prime % self.g
        return out


class _OLHEstimator(SupportEstimator):
    def __init__(self, protocol: OLHProtocol) -> None:
        super().__init__(d=protocol.d, p_star=protocol.p, q_star=protocol.q_star, domain=protocol.domain)
        self.prime, self.g = protocol.prime, protocol.g

    def _support(self, reports: object) -> tuple[Ints, int]:
        if not isinstance(reports, HashReports):
            raise InvalidParameter("OLH estimators take HashReports (what OLHProtocol's randomizer returns)")
        if (reports.prime, reports.g) != (self.prime, self.g):
            raise InvalidParameter(
                f"these reports use P = {reports.prime}, g = {reports.g}; the protocol P = {self.prime},"
                f" g = {self.g}: estimate them with the protocol that made them"
            )
        a, b, y = reports.a, reports.b, reports.y
        if not (a.shape == b.shape == y.shape and a.ndim == 1):
            raise InvalidParameter("a, b and y of HashReports must be 1-d arrays of one length")
        if a.size and (
            a.min() < 1 or a.max() >= self.prime or b.min() < 0 or b.max() >= self.prime or y.min() < 0
        ) | (y.max() >= self.g):
            raise InvalidParameter(
                "a report lies outside its ranges (a in [1, P), b in [0, P), y in [0, g) with"
                f" P = {self.prime}, g = {self.g})"
            )
        return self._enumerate(a, b, y), int(y.size)

    def _enumerate(self, a: Ints, b: Ints, y: Ints) -> Ints:
        """Support counts: per report, the ``v < d`` with ``(a·v + b) mod P ≡ y (mod g)``.

        ``v_j = a⁻¹(y + j·g − b) mod P`` for ``j = 0 … ⌈(P − y)/g⌉ − 1``, stepped by ``a⁻¹·g mod P``
        with one add and one wrapped subtraction per step in uint32.
        """
        prime, g = self.prime, self.g
        inv = _mod_inverse(a, prime)
        first = (inv * ((y - b) % prime)) % prime
        step = (inv * g) % prime
        steps = np.maximum((prime - y + g - 1) // g, 0)  # how many t ≡ y (mod g) lie in [0, P)
        longest = int(steps.max()) if steps.size else 0
        counts = np.zeros(prime + 1, dtype=np.int64)
        rows = max(1, _CHUNK // max(longest, 1))
        sentinel = np.uint32(prime)  # counted in an ignored bin
        p32 = np.uint32(prime)
        for lo in range(0, y.size, rows):
            v = first[lo : lo + rows].astype(np.uint32)
            s = step[lo : lo + rows].astype(np.uint32)
            m = steps[lo : lo + rows]
            shortest = int(m.min())
            buf = np.empty((longest, v.size), dtype=np.uint32)
            tmp = np.empty_like(v)
            for j in range(longest):
                row = buf[j]
                row[:] = v
                if j >= shortest:
                    row[m <= j] = sentinel
                np.add(v, s, out=v)
                np.subtract(v, p32, out=tmp)
                np.minimum(v, tmp, out=v)  # v + s − P wraps above 2^31 when v + s < P
            counts += np.bincount(buf.ravel(), minlength=prime + 1)
        return counts[: self.d]


class _OLHRandomizer(Randomizer[HashReports]):
    def __init__(self, protocol: OLHProtocol, rng: RandomSource | None) -> None:
        super().__init__(protocol)
        self._source = rng if rng is not None else default_source()
        self._rr = KaryRandomizedResponse(epsilon=protocol.epsilon, k=protocol.g, rng=rng)
        self._prime, self._g, self._d = protocol.prime, protocol.g, protocol.d

    def _randomize(self, x: Ints) -> HashReports:
        a = _samplers.uniform_int(self._prime - 1, x.size, self._source) + 1
        b = _samplers.uniform_int(self._prime, x.size, self._source)
        hashed = (a * x + b) % self._prime % self._g
        return HashReports(self._prime, self._g, a, b, self._rr.release(hashed))


class OLHProtocol(LocalProtocol[HashReports]):
    """Optimised local hashing: ``g = round(e^ε + 1)`` buckets, ``g``-ary randomised response on ``H(v)``.

    Support probabilities: ``p* = e^ε/(e^ε + g − 1)``, ``q* = p*·c + (1 − p*)(1 − c)/(g − 1)`` with ``c`` the
    family's collision probability (``q* = 1/g`` for an ideal hash, Wang et al.; here ``c ≤ 1/g`` exactly).
    """

    name = "olh"

    def __init__(
        self, *, epsilon: float, d: int | None = None, domain: Labels | None = None, g: int | None = None
    ) -> None:
        self._epsilon = _checks.epsilon(epsilon)
        self.domain = Domain.of(d, domain)
        self.d = self.domain.size
        e = math.exp(self._epsilon)
        if g is None:
            g = max(2, round(e + 1.0))
        if isinstance(g, bool) or not isinstance(g, int) or g < 2:
            raise InvalidParameter(
                f"g (hash buckets) must be an integer >= 2, got {g!r}; omit it for e^ε + 1"
            )
        self.g = g
        self.prime = next_prime(self.d)
        self.p = e / (e + g - 1)
        self.q = 1.0 / (e + g - 1)
        m, s = divmod(self.prime, g)
        self.collision = m * (self.prime + s - g) / (self.prime * (self.prime - 1))
        self.q_star = self.p * self.collision + (1.0 - self.p) * (1.0 - self.collision) / (g - 1)

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def pair_matrix(self) -> Floats:
        """Columns: the two hashes collide (any ``y``); else ``y = H(v)``, ``y = H(u)``, another ``y``."""
        c, p, q = self.collision, self.p, self.q
        rest = max(1.0 - p - q, 0.0)
        return np.array(
            [
                [c, (1 - c) * p, (1 - c) * q, (1 - c) * rest],
                [c, (1 - c) * q, (1 - c) * p, (1 - c) * rest],
            ]
        )

    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[HashReports]:
        return _OLHRandomizer(self, rng)

    def estimator(self) -> SupportEstimator:
        return _OLHEstimator(self)

    def likelihood(self, report: object) -> Floats:
        """``report``: one person's ``(a, b, y)``."""
        if not (isinstance(report, tuple | list) and len(report) == 3):
            raise InvalidParameter("an OLH report is the triple (a, b, y) of one person")
        a, b, y = (int(r) for r in report)
        hashed = (a * np.arange(self.d, dtype=np.int64) + b) % self.prime % self.g
        return np.where(hashed == y, self.p, self.q)
