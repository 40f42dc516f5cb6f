"""Randomised response (Warner 1965): each person randomises their own answer; the analyst estimates rates.

Binary protocols are described by ``P(say yes | truly yes) = a`` and ``P(say yes | truly no) = b``; the
estimate of the true rate from the observed rate ``λ̂`` is ``(λ̂ − b)/(a − b)`` with variance
``λ(1 − λ)/(n(a − b)²)``. The protocols of the course notes:

* :class:`CoinProtocol`: flip a coin; heads, tell the truth; tails, flip again and say yes on heads.
  ``a = 3/4, b = 1/4``: ln 3-DP, estimate ``2λ̂ − 1/2``.
* :class:`AlphaProtocol`: truth with probability α, else a uniform answer. ε = ln((1+α)/(1−α)).
* :class:`FlipProtocol`: flip the answer with probability ``p ≤ 1/2``. ε = ln((1−p)/p).
* :class:`HeadsSayYes`: heads, say yes; tails, tell the truth. ``P(no | yes) = 0 < P(no | no)``: no finite
  ε, and :func:`epsilon_of` says so (``inf``) rather than report a number.
* :class:`KaryRandomizedResponse`: k-ary RR (Warner generalised; Wang et al. 2017):
  ``p = e^ε/(e^ε + k − 1)`` for the truth, ``q = 1/(e^ε + k − 1)`` for each other value.

All coins are exact: rational probabilities compare against CSPRNG integers; ``e^ε``-based ones use the
certified comparison of :mod:`privdb.mechanisms._samplers`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _exact, _samplers, _validate
from privdb.mechanisms.base import Mechanism, PrivacyCost
from privdb.mechanisms.randomness import RandomSource

__all__ = [
    "AlphaProtocol",
    "BinaryRandomizedResponse",
    "CoinProtocol",
    "Estimate",
    "FlipProtocol",
    "HeadsSayYes",
    "KaryRandomizedResponse",
    "epsilon_of",
]

Number = float | int | Fraction


def epsilon_of(matrix: Sequence[Sequence[Number]] | NDArray[np.float64]) -> float:
    """The smallest ε for which a response matrix is ε-DP; ``inf`` when no finite ε works.

    ``matrix[i][j]`` is ``P(respond j | true value i)``; rows must sum to 1. ε is the largest log-ratio
    ``ln(M[i][j] / M[i'][j])`` over responses ``j`` and true values ``i, i'``; a response possible under one
    true value and impossible under another makes the ratio unbounded.
    """
    rows = [[_validate.exact(x) for x in row] for row in matrix]
    if len(rows) < 2 or any(len(r) != len(rows[0]) for r in rows) or not rows[0]:
        raise InvalidParameter("matrix must have at least two rows of equal, non-zero length")
    for i, row in enumerate(rows):
        if any(x < 0 or x > 1 for x in row):
            raise InvalidParameter(f"row {i} of the response matrix has an entry outside [0, 1]")
        if abs(float(sum(row)) - 1.0) > 1e-9:
            raise InvalidParameter(f"row {i} of the response matrix sums to {float(sum(row)):g}, not 1")
    worst = Fraction(1)
    for column in zip(*rows, strict=True):
        hi, lo = max(column), min(column)
        if hi == 0:
            continue
        if lo == 0:
            return math.inf
        worst = max(worst, hi / lo)
    return math.log(worst.numerator) - math.log(worst.denominator)


@dataclass(frozen=True)
class Estimate:
    """An unbiased estimate with its standard error and a 95% normal interval."""

    value: float
    std_error: float

    @property
    def ci95(self) -> tuple[float, float]:
        from scipy.special import ndtri  # SciPy where an interval is made, not where a mechanism is

        z = float(ndtri(0.975))
        return (self.value - z * self.std_error, self.value + z * self.std_error)


def _bits(values: ArrayLike) -> NDArray[np.bool_]:
    arr = np.atleast_1d(np.asarray(values))
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameter("answers must be a non-empty 1-d array of yes/no (1/0) values")
    if arr.dtype != np.bool_:
        if not np.isin(arr, [0, 1]).all():
            raise InvalidParameter("answers must be yes/no: pass booleans or 0/1")
        arr = arr.astype(np.bool_)
    return arr


class BinaryRandomizedResponse(Mechanism):
    """A symmetric yes/no protocol: the answer is flipped with probability ``flip`` (< 1/2)."""

    name: ClassVar[str] = "randomized_response"

    def __init__(self, *, flip: Number, rng: RandomSource | None = None) -> None:
        super().__init__(rng=rng)
        p = _validate.probability("flip probability", flip)
        if not p < 0.5:
            raise InvalidParameter(f"the flip probability must be below 1/2 to carry information, got {p:g}")
        self.flip = _validate.exact(flip)
        self._flip_bounds: _exact.Bounds = _exact.rational(self.flip)

    @classmethod
    def for_epsilon(cls, epsilon: float, *, rng: RandomSource | None = None) -> BinaryRandomizedResponse:
        """The most accurate binary protocol at ``epsilon``: flip with probability 1/(1 + e^ε)."""
        eps = _validate.positive("epsilon", epsilon)
        mech = cls(flip=Fraction(1, 2) if eps < 1e-300 else 1.0 / (1.0 + math.exp(eps)), rng=rng)
        mech._flip_bounds = _exact.logistic(-_validate.exact(eps))
        mech._declared_epsilon = eps
        return mech

    _declared_epsilon: float | None = None

    @property
    def yes_given_yes(self) -> Fraction:
        return 1 - self.flip

    @property
    def yes_given_no(self) -> Fraction:
        return self.flip

    @property
    def matrix(self) -> list[list[Fraction]]:
        """``P(respond j | true i)``, rows and columns in the order no, yes."""
        a, b = self.yes_given_yes, self.yes_given_no
        return [[1 - b, b], [1 - a, a]]

    @property
    def cost(self) -> PrivacyCost:
        if self._declared_epsilon is not None:
            return PrivacyCost(epsilon=self._declared_epsilon)
        return PrivacyCost(epsilon=epsilon_of(self.matrix))

    def _flips(self, n: int) -> NDArray[np.bool_]:
        return _samplers.bernoulli(self._flip_bounds, n, self._source)

    def release(self, answers: ArrayLike) -> NDArray[np.bool_]:
        """Each person's randomised answer."""
        truth = _bits(answers)
        return truth ^ self._flips(truth.size)

    def estimate(self, responses: ArrayLike) -> Estimate:
        """Unbiased estimate of the true share of yes from randomised responses.

        The value is unbiased, so it can fall outside [0, 1] for few people (three yes of three: 1.5); clip
        it to read it as a share. The standard error is taken at that clipped share, whose rate of yes lies in
        [b, a]: not the observed rate, which is 0 or 1 when everyone said the same and would give 0."""
        said = _bits(responses)
        n = said.size
        a, b = float(self.yes_given_yes), float(self.yes_given_no)
        value = (float(said.mean()) - b) / (a - b)
        rate = b + (a - b) * min(max(value, 0.0), 1.0)
        return Estimate(value, math.sqrt(rate * (1 - rate) / n) / (a - b))

    def variance_bound(self, n: int) -> float:
        """Worst-case variance of the estimate: ``1/(4n(a − b)²)``."""
        return 1.0 / (4.0 * n * float(self.yes_given_yes - self.yes_given_no) ** 2)

    def posterior(self, prior: float, said_yes: bool = True) -> float:
        """An adversary's belief that the truth is yes after seeing the answer, from prior ``ξ``."""
        xi = _validate.probability("prior", prior)
        a, b = float(self.yes_given_yes), float(self.yes_given_no)
        if not said_yes:
            a, b = 1 - a, 1 - b
        return a * xi / (a * xi + b * (1 - xi))


class AlphaProtocol(BinaryRandomizedResponse):
    """Truth with probability α, otherwise a uniformly random answer."""

    name: ClassVar[str] = "rr_alpha"

    def __init__(self, *, alpha: Number, rng: RandomSource | None = None) -> None:
        a = _validate.probability("alpha", alpha, open_low=True)
        exact_alpha = _validate.exact(alpha)
        super().__init__(flip=(1 - exact_alpha) / 2, rng=rng)
        self.alpha = a


class CoinProtocol(AlphaProtocol):
    """The course's coin protocol: heads, the truth; tails, a second coin decides (α = 1/2, ln 3-DP)."""

    name: ClassVar[str] = "rr_coin"

    def __init__(self, *, rng: RandomSource | None = None) -> None:
        super().__init__(alpha=Fraction(1, 2), rng=rng)


class FlipProtocol(BinaryRandomizedResponse):
    """Flip the answer with probability ``p ≤ 1/2``: ε = ln((1 − p)/p)."""

    name: ClassVar[str] = "rr_flip"

    def __init__(self, *, p: Number, rng: RandomSource | None = None) -> None:
        super().__init__(flip=p, rng=rng)


class HeadsSayYes(Mechanism):
    """The notes' variant "heads: say yes; tails: tell the truth". Not differentially private.

    A "no" is only ever said by people whose true answer is no, so ``epsilon`` is infinite; privdb keeps
    the protocol to show that (and for the auditor to catch), never as a way to release data.
    """

    name: ClassVar[str] = "rr_heads_say_yes"

    matrix: ClassVar[list[list[Fraction]]] = [
        [Fraction(1, 2), Fraction(1, 2)],
        [Fraction(0), Fraction(1)],
    ]

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=epsilon_of(self.matrix))

    def release(self, answers: ArrayLike) -> NDArray[np.bool_]:
        truth = _bits(answers)
        heads = _samplers.bernoulli(_exact.rational(Fraction(1, 2)), truth.size, self._source)
        return heads | truth


class KaryRandomizedResponse(Mechanism):
    """k-ary randomised response over the values ``0 … k−1``: ε-DP."""

    name: ClassVar[str] = "rr_kary"

    def __init__(self, *, epsilon: float, k: int, rng: RandomSource | None = None) -> None:
        super().__init__(rng=rng)
        self._epsilon = _validate.positive("epsilon", epsilon)
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise InvalidParameter(f"k must be an integer >= 2 (the number of possible values), got {k!r}")
        self.k = k
        e = math.exp(self._epsilon)
        self.p = e / (e + k - 1)
        self.q = 1.0 / (e + k - 1)
        # keep the truth with probability p: exactly e^ε/(e^ε + k − 1) = 1/(1 + (k−1)e^−ε)
        self._keep = _exact.odds(_validate.exact(self._epsilon), k - 1)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self._epsilon)

    @property
    def matrix(self) -> NDArray[np.float64]:
        m = np.full((self.k, self.k), self.q)
        np.fill_diagonal(m, self.p)
        return m

    def release(self, values: ArrayLike) -> NDArray[np.int64]:
        x = np.atleast_1d(np.asarray(values))
        if x.ndim != 1 or x.size == 0 or not np.issubdtype(x.dtype, np.integer):
            raise InvalidParameter(f"values must be a non-empty 1-d array of integers in [0, {self.k})")
        if x.min() < 0 or x.max() >= self.k:
            raise InvalidParameter(f"values must lie in [0, {self.k}); encode categories as 0..k-1")
        keep = _samplers.bernoulli(self._keep, x.size, self._source)
        other = _samplers.uniform_int(self.k - 1, x.size, self._source)
        other += other >= x  # a uniform value among the k − 1 others
        return np.where(keep, x, other).astype(np.int64)

    def estimate_counts(self, responses: ArrayLike) -> list[Estimate]:
        """Unbiased estimates of how many people hold each value: ``(C − nq)/(p − q)``."""
        r = np.atleast_1d(np.asarray(responses, dtype=np.int64))
        n = r.size
        counts = np.bincount(r, minlength=self.k)
        out = []
        for c in counts:
            value = (c - n * self.q) / (self.p - self.q)
            rate = self.q + (self.p - self.q) * min(max(value / n, 0.0), 1.0)  # as for the binary estimate
            out.append(Estimate(value, math.sqrt(n * rate * (1 - rate)) / (self.p - self.q)))
        return out
