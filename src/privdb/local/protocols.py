"""Local protocols: public descriptions, client-side randomisers, and the adversary's view.

A :class:`LocalProtocol` holds only public parameters (ε, the domain size ``d``, the response
probabilities). From it come two separate objects: ``protocol.randomizer()`` runs on the client, sees one
person's true answer and draws from the CSPRNG; ``protocol.estimator()`` runs at the collector and sees
only reports. Neither can reach the other's data.

Direct protocols answer in the domain itself:

* :class:`BinaryProtocol` (yes/no, the course notes): ``coin()`` (ln 3-DP), ``alpha(α)``, ``flip(p)``,
  ``for_epsilon(ε)`` and the notes' non-private ``heads_say_yes()``, whose ε is infinite;
* :class:`KaryProtocol`: k-ary randomised response (Warner 1965; Kairouz, Oh, Viswanath 2014; the "direct
  encoding" of Wang et al. 2017), best for small domains (``d < 3e^ε + 2``).

Randomisation reuses the exact samplers of :mod:`privdb.mechanisms.randomized_response`. The privacy claim of
each protocol is checked from its response matrix with :func:`~privdb.mechanisms.epsilon_of`; the
adversary's posterior over a person's true value after seeing their report is :meth:`LocalProtocol.posterior`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from fractions import Fraction
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks
from privdb.local.estimators import Frequencies, SupportEstimator
from privdb.mechanisms import _validate
from privdb.mechanisms.randomized_response import (
    AlphaProtocol,
    BinaryRandomizedResponse,
    CoinProtocol,
    Estimate,
    FlipProtocol,
    HeadsSayYes,
    KaryRandomizedResponse,
    epsilon_of,
)
from privdb.mechanisms.randomness import RandomSource

__all__ = [
    "BinaryProtocol",
    "KaryProtocol",
    "LocalProtocol",
    "Randomizer",
]

R = TypeVar("R")
Matrix = list[list[Fraction]] | NDArray[np.float64]
Floats = NDArray[np.float64]


class Randomizer(ABC, Generic[R]):
    """The client side of a protocol: turns true answers into reports. It never sees an estimate."""

    def __init__(self, protocol: LocalProtocol[R]) -> None:
        self.protocol = protocol

    @abstractmethod
    def randomize(self, values: ArrayLike) -> R:
        """One report per person, each drawn independently (vectorised over people)."""


class LocalProtocol(ABC, Generic[R]):
    """Public parameters of a local protocol over the values ``0 … d−1``; reports of type ``R``."""

    name: str
    d: int

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """The ε each report costs its sender (``inf`` for a protocol that is not differentially private)."""

    @abstractmethod
    def pair_matrix(self) -> Matrix:
        """The response matrix for two true values, responses with equal likelihoods lumped together.

        Rows are the two true values, columns response classes; by symmetry every pair of values has the same
        matrix, and the lumped responses have likelihood ratio 1, so ``epsilon_of`` of this matrix is the
        protocol's exact ε.
        """

    def epsilon_from_matrix(self) -> float:
        """ε computed from the response matrix (to check the claim ``epsilon``)."""
        return epsilon_of(self.pair_matrix())

    @abstractmethod
    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[R]:
        """The client side (``rng`` only for reproducible tests; the default is the CSPRNG)."""

    @abstractmethod
    def estimator(self) -> SupportEstimator:
        """The collector side: an empty estimator to ``add`` batches of reports to."""

    def estimate(self, reports: R) -> Frequencies:
        """Count estimates from one batch of reports (shorthand for ``estimator().add(reports)``)."""
        return self.estimator().add(reports).frequencies()

    @abstractmethod
    def likelihood(self, report: object) -> Floats:
        """``P(report | true value v)`` for every ``v``, up to a factor common to all ``v``."""

    def posterior(self, prior: ArrayLike, report: object) -> Floats:
        """The adversary's belief about one person's true value after seeing their report (Bayes' rule)."""
        xi = np.asarray(prior, dtype=np.float64)
        if xi.shape != (self.d,) or (xi < 0).any() or not math.isclose(float(xi.sum()), 1.0, rel_tol=1e-9):
            raise InvalidParameter(f"the prior must be {self.d} probabilities (one per value) summing to 1")
        joint = xi * self.likelihood(report)
        out: Floats = joint / joint.sum()
        return out


# --------------------------------------------------------------------------------------- binary


class _BinaryEstimator(SupportEstimator):
    def _support(self, reports: object) -> tuple[NDArray[np.int64], int]:
        said = _checks.values(np.asarray(reports), 2, what="responses")
        yes = int(said.sum())
        return np.array([said.size - yes, yes], dtype=np.int64), int(said.size)


class _BinaryRandomizer(Randomizer[NDArray[np.bool_]]):
    def __init__(self, protocol: BinaryProtocol, mechanism: BinaryRandomizedResponse | HeadsSayYes) -> None:
        super().__init__(protocol)
        self._mechanism = mechanism

    def randomize(self, values: ArrayLike) -> NDArray[np.bool_]:
        return self._mechanism.release(values)


class BinaryProtocol(LocalProtocol[NDArray[np.bool_]]):
    """A yes/no survey: ``P(say yes | truly yes) = a``, ``P(say yes | truly no) = b``; 0 = no, 1 = yes.

    Build one with :meth:`coin`, :meth:`alpha`, :meth:`flip`, :meth:`for_epsilon` or :meth:`heads_say_yes`.
    The estimate of the share of yes is ``(λ̂ − b)/(a − b)`` for the observed share ``λ̂``: for the coin
    protocol ``2λ̂ − 1/2`` (the notes' ``q = 2p − 1/2``).
    """

    d = 2

    def __init__(
        self, name: str, make: Callable[[RandomSource | None], BinaryRandomizedResponse | HeadsSayYes]
    ) -> None:
        self.name = name
        self._make = make
        template = make(None)  # parameters only; its random source is never used
        self._matrix: list[list[Fraction]] = [list(row) for row in template.matrix]
        self._epsilon = template.epsilon

    @classmethod
    def coin(cls) -> BinaryProtocol:
        """The notes' protocol: flip a coin; heads, the truth; tails, a second coin says yes or no (ln 3)."""
        return cls("coin", lambda rng: CoinProtocol(rng=rng))

    @classmethod
    def alpha(cls, alpha: float | Fraction) -> BinaryProtocol:
        """The truth with probability α, otherwise a uniform answer: ε = ln((1 + α)/(1 − α))."""
        AlphaProtocol(alpha=alpha)  # validates now, not at the first randomisation
        return cls(f"alpha({float(alpha):g})", lambda rng: AlphaProtocol(alpha=alpha, rng=rng))

    @classmethod
    def flip(cls, p: float | Fraction) -> BinaryProtocol:
        """Flip the answer with probability ``p < 1/2``: ε = ln((1 − p)/p)."""
        FlipProtocol(p=p)
        return cls(f"flip({float(p):g})", lambda rng: FlipProtocol(p=p, rng=rng))

    @classmethod
    def for_epsilon(cls, epsilon: float) -> BinaryProtocol:
        """The most accurate ε-DP yes/no protocol: flip with probability ``1/(1 + e^ε)``."""
        eps = _checks.epsilon(epsilon)
        return cls(f"rr({eps:g})", lambda rng: BinaryRandomizedResponse.for_epsilon(eps, rng=rng))

    @classmethod
    def heads_say_yes(cls) -> BinaryProtocol:
        """The notes' variant "heads: say yes; tails: the truth". Not ε-DP for any ε: a "no" proves a no."""
        return cls("heads_say_yes", lambda rng: HeadsSayYes(rng=rng))

    @property
    def yes_given_yes(self) -> Fraction:
        return self._matrix[1][1]

    @property
    def yes_given_no(self) -> Fraction:
        return self._matrix[0][1]

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def matrix(self) -> list[list[Fraction]]:
        """``P(respond j | true i)``, rows and columns in the order no, yes."""
        return [list(row) for row in self._matrix]

    def pair_matrix(self) -> list[list[Fraction]]:
        return self.matrix

    def randomizer(
        self, *, rng: RandomSource | None = None, allow_non_private: bool = False
    ) -> Randomizer[NDArray[np.bool_]]:
        if math.isinf(self.epsilon) and not allow_non_private:
            raise InvalidParameter(
                f"the {self.name} protocol is not differentially private for any finite epsilon (one of its"
                " answers is only ever given by people with one true value); use BinaryProtocol.coin() or"
                " .for_epsilon(eps), or pass allow_non_private=True to simulate it for teaching"
            )
        return _BinaryRandomizer(self, self._make(rng))

    def estimator(self) -> SupportEstimator:
        a, b = float(self.yes_given_yes), float(self.yes_given_no)
        return _BinaryEstimator(d=2, p_star=[1.0 - b, a], q_star=[1.0 - a, b])

    def share_of_yes(self, responses: ArrayLike) -> Estimate:
        """The estimated true share of yes from yes/no responses, with its standard error."""
        return self.estimate(np.asarray(responses)).share(1)

    def variance_bound(self, n: int) -> float:
        """A bound on the variance of the estimated share for any truth: ``1/(4n(a − b)²)``.

        It covers both the variance given the true answers and the larger one of a random sample from a
        population, ``λ(1 − λ)/(n(a − b)²)``; for the α-protocol it is ``1/(4α²n)``, within the notes'
        ``1/(α²n)``.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidParameter(f"n must be a positive integer (the number of responses), got {n!r}")
        return 1.0 / (4.0 * n * float(self.yes_given_yes - self.yes_given_no) ** 2)

    def likelihood(self, report: object) -> Floats:
        said = _checks.values(np.asarray(report), 2, what="the response")
        if said.size != 1:
            raise InvalidParameter("the adversary's view takes one person's response (yes/no)")
        j = int(said[0])
        return np.array([float(self._matrix[0][j]), float(self._matrix[1][j])])

    def posterior_yes(self, prior: float, said_yes: bool = True) -> float:
        """P(truly yes | the response) for an adversary with prior ``ξ = P(yes)`` (the notes' exercise)."""
        xi = _validate.probability("prior", prior)
        return float(self.posterior([1.0 - xi, xi], said_yes)[1])


# ---------------------------------------------------------------------------------------- k-ary


class _DirectEstimator(SupportEstimator):
    def _support(self, reports: object) -> tuple[NDArray[np.int64], int]:
        said = _checks.values(np.asarray(reports), self.d, what="responses")
        return np.bincount(said, minlength=self.d), int(said.size)


class _KaryRandomizer(Randomizer[NDArray[np.int64]]):
    def __init__(self, protocol: KaryProtocol, rng: RandomSource | None) -> None:
        super().__init__(protocol)
        self._mechanism = KaryRandomizedResponse(epsilon=protocol.epsilon, k=protocol.d, rng=rng)

    def randomize(self, values: ArrayLike) -> NDArray[np.int64]:
        x = _checks.values(values, self.protocol.d)
        return self._mechanism.release(x)


class KaryProtocol(LocalProtocol[NDArray[np.int64]]):
    """k-ary randomised response: the truth with ``p = e^ε/(e^ε + d − 1)``, each other value with
    ``q = 1/(e^ε + d − 1)``. Count estimate ``(C_v − nq)/(p − q)``; for rare values its variance is about
    ``n(d − 2 + e^ε)/(e^ε − 1)²`` (Wang et al. 2017), growing with ``d``: use OUE or OLH for large domains.
    """

    name = "krr"

    def __init__(self, *, epsilon: float, d: int) -> None:
        self._epsilon = _checks.epsilon(epsilon)
        self.d = _checks.domain(d)
        e = math.exp(self._epsilon)
        self.p = e / (e + self.d - 1)
        self.q = 1.0 / (e + self.d - 1)

    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def matrix(self) -> Floats:
        """The full ``d × d`` response matrix (for small domains)."""
        if self.d > 4096:
            raise InvalidParameter(f"the full matrix of d = {self.d} values is too large; use pair_matrix()")
        m = np.full((self.d, self.d), self.q)
        np.fill_diagonal(m, self.p)
        return m

    def pair_matrix(self) -> Floats:
        rest = max(1.0 - self.p - self.q, 0.0)  # the d − 2 other responses: q under both values
        return np.array([[self.p, self.q, rest], [self.q, self.p, rest]])

    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[NDArray[np.int64]]:
        return _KaryRandomizer(self, rng)

    def estimator(self) -> SupportEstimator:
        return _DirectEstimator(d=self.d, p_star=self.p, q_star=self.q)

    def likelihood(self, report: object) -> Floats:
        said = _checks.values(np.asarray(report), self.d, what="the response")
        if said.size != 1:
            raise InvalidParameter("the adversary's view takes one person's response")
        out = np.full(self.d, self.q)
        out[int(said[0])] = self.p
        return out
