"""Local protocols: public descriptions, client-side randomisers, and the adversary's view.

A :class:`LocalProtocol` holds only public parameters (ε, the domain — a size ``d`` or a list of labels —
and the response probabilities). From it come two separate objects: ``protocol.randomizer()`` runs on the
client, sees one person's true answer and draws from the CSPRNG; ``protocol.estimator()`` runs at the
collector and sees only reports. Neither can reach the other's data. Both speak the domain's labels:
``randomize(["yes", "no"])`` and ``estimate(reports)["yes"]`` (a domain given as a size ``d`` has the labels
``0 … d−1``, the integer codes the protocols compute on; :mod:`privdb.local.domain`).

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
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks
from privdb.local.domain import Domain
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
Ints = NDArray[np.int64]
Labels = int | Sequence[Hashable] | Domain  # a domain: its size, or its values
Answers = ArrayLike | Sequence[Hashable]  # one true answer (a label of the domain) per person


class Randomizer(ABC, Generic[R]):
    """The client side of a protocol: turns true answers into reports. It never sees an estimate."""

    def __init__(self, protocol: LocalProtocol[R]) -> None:
        self.protocol = protocol

    def randomize(self, values: Answers) -> R:
        """One report per person, each drawn independently (vectorised over people). ``values`` are labels
        of the protocol's domain (the codes ``0 … d−1`` for a domain given as a size)."""
        return self._randomize(self.protocol.domain.codes(values))

    @abstractmethod
    def _randomize(self, codes: Ints) -> R:
        """Reports of people whose true answers have these codes."""


class LocalProtocol(ABC, Generic[R]):
    """Public parameters of a local protocol over a domain of ``d`` values; reports of type ``R``.

    Accessors follow one rule throughout :mod:`privdb.local`: what a protocol *is* is a property
    (``epsilon``, ``d``, ``domain``, ``matrix``, ``pair_matrix``), what it *does* is a method
    (``randomizer()``, ``estimator()``, ``estimate(reports)``, ``posterior(…)``, ``epsilon_from_matrix()``).
    """

    name: str
    d: int
    domain: Domain

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """The ε each report costs its sender (``inf`` for a protocol that is not differentially private)."""

    @property
    @abstractmethod
    def pair_matrix(self) -> Matrix:
        """The response matrix for two true values, responses with equal likelihoods lumped together.

        Rows are the two true values, columns response classes; by symmetry every pair of values has the same
        matrix, and the lumped responses have likelihood ratio 1, so ``epsilon_of`` of this matrix is the
        protocol's exact ε.
        """

    def epsilon_from_matrix(self) -> float:
        """ε computed from the response matrix (to check the claim ``epsilon``)."""
        return epsilon_of(self.pair_matrix)

    @abstractmethod
    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[R]:
        """The client side (``rng`` only for reproducible tests; the default is the CSPRNG)."""

    @abstractmethod
    def estimator(self) -> SupportEstimator:
        """The collector side: an empty estimator to ``add`` batches of reports to."""

    def estimate(self, reports: R) -> Frequencies:
        """Count estimates from one batch of reports (``estimator().add(reports).estimate()``)."""
        return self.estimator().add(reports).estimate()

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


class _DirectEstimator(SupportEstimator):
    """Reports of a direct protocol are values of the domain (labels): each supports the value it names."""

    def _support(self, reports: object) -> tuple[Ints, int]:
        domain = self.domain or Domain(self.d)
        said = domain.codes(reports if isinstance(reports, list) else np.asarray(reports), what="responses")
        return np.bincount(said, minlength=self.d), int(said.size)


class _BinaryRandomizer(Randomizer[NDArray[Any]]):
    def __init__(self, protocol: BinaryProtocol, mechanism: BinaryRandomizedResponse | HeadsSayYes) -> None:
        super().__init__(protocol)
        self._mechanism = mechanism

    def _randomize(self, codes: Ints) -> NDArray[Any]:
        return self.protocol.domain.labels_of(self._mechanism.release(codes))


class BinaryProtocol(LocalProtocol[NDArray[Any]]):
    """A yes/no survey: ``P(say yes | truly yes) = a``, ``P(say yes | truly no) = b``.

    Build one with :meth:`coin`, :meth:`alpha`, :meth:`flip`, :meth:`for_epsilon` or :meth:`heads_say_yes`.
    The estimate of the share of yes is ``(λ̂ − b)/(a − b)`` for the observed share ``λ̂``: for the coin
    protocol ``2λ̂ − 1/2`` (the notes' ``q = 2p − 1/2``). Answers are 0 = no, 1 = yes (or booleans; reports
    are booleans), or the two labels of ``domain=[no, yes]`` in that order (reports are labels then).
    """

    d = 2

    def __init__(
        self,
        name: str,
        make: Callable[[RandomSource | None], BinaryRandomizedResponse | HeadsSayYes],
        domain: Labels | None = None,
    ) -> None:
        self.name = name
        self._make = make
        self.domain = Domain.of(2, domain)
        template = make(None)  # parameters only; its random source is never used
        self._matrix: list[list[Fraction]] = [list(row) for row in template.matrix]
        self._epsilon = template.epsilon

    @classmethod
    def coin(cls, *, domain: Labels | None = None) -> BinaryProtocol:
        """The notes' protocol: flip a coin; heads, the truth; tails, a second coin says yes or no (ln 3)."""
        return cls("coin", lambda rng: CoinProtocol(rng=rng), domain)

    @classmethod
    def alpha(cls, alpha: float | Fraction, *, domain: Labels | None = None) -> BinaryProtocol:
        """The truth with probability α, otherwise a uniform answer: ε = ln((1 + α)/(1 − α))."""
        AlphaProtocol(alpha=alpha)  # validates now, not at the first randomisation
        return cls(f"alpha({float(alpha):g})", lambda rng: AlphaProtocol(alpha=alpha, rng=rng), domain)

    @classmethod
    def flip(cls, p: float | Fraction, *, domain: Labels | None = None) -> BinaryProtocol:
        """Flip the answer with probability ``p < 1/2``: ε = ln((1 − p)/p)."""
        FlipProtocol(p=p)
        return cls(f"flip({float(p):g})", lambda rng: FlipProtocol(p=p, rng=rng), domain)

    @classmethod
    def for_epsilon(cls, epsilon: float, *, domain: Labels | None = None) -> BinaryProtocol:
        """The most accurate ε-DP yes/no protocol: flip with probability ``1/(1 + e^ε)``."""
        eps = _checks.epsilon(epsilon)
        return cls(f"rr({eps:g})", lambda rng: BinaryRandomizedResponse.for_epsilon(eps, rng=rng), domain)

    @classmethod
    def heads_say_yes(cls, *, domain: Labels | None = None) -> BinaryProtocol:
        """The notes' variant "heads: say yes; tails: the truth". Not ε-DP for any ε: a "no" proves a no."""
        return cls("heads_say_yes", lambda rng: HeadsSayYes(rng=rng), domain)

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

    @property
    def pair_matrix(self) -> list[list[Fraction]]:
        return self.matrix

    def randomizer(
        self, *, rng: RandomSource | None = None, allow_non_private: bool = False
    ) -> Randomizer[NDArray[Any]]:
        if math.isinf(self.epsilon) and not allow_non_private:
            raise InvalidParameter(
                f"the {self.name} protocol is not differentially private for any finite epsilon (one of its"
                " answers is only ever given by people with one true value); use BinaryProtocol.coin() or"
                " .for_epsilon(eps), or pass allow_non_private=True to simulate it for teaching"
            )
        return _BinaryRandomizer(self, self._make(rng))

    def estimator(self) -> SupportEstimator:
        a, b = float(self.yes_given_yes), float(self.yes_given_no)
        return _DirectEstimator(d=2, p_star=[1.0 - b, a], q_star=[1.0 - a, b], domain=self.domain)

    def share_of_yes(self, responses: Answers) -> Estimate:
        """The estimated true share of yes (the domain's second value) from responses, with its standard
        error."""
        return self.estimate(np.asarray(responses)).share(self.domain.labels[1])

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
        j = _one_response(self.domain, report)
        return np.array([float(self._matrix[0][j]), float(self._matrix[1][j])])

    def posterior_yes(self, prior: float, said_yes: bool = True) -> float:
        """P(truly yes | the response) for an adversary with prior ``ξ = P(yes)`` (the notes' exercise)."""
        xi = _validate.probability("prior", prior)
        return float(self.posterior([1.0 - xi, xi], self.domain.labels[int(said_yes)])[1])


def _one_response(domain: Domain, report: object) -> int:
    """The code of one person's response (the adversary's view takes one report)."""
    said = domain.codes(report if isinstance(report, list) else np.asarray(report), what="the response")
    if said.size != 1:
        raise InvalidParameter("the adversary's view takes one person's response")
    return int(said[0])


# ---------------------------------------------------------------------------------------- k-ary


class _KaryRandomizer(Randomizer[NDArray[Any]]):
    def __init__(self, protocol: KaryProtocol, rng: RandomSource | None) -> None:
        super().__init__(protocol)
        self._mechanism = KaryRandomizedResponse(epsilon=protocol.epsilon, k=protocol.d, rng=rng)

    def _randomize(self, codes: Ints) -> NDArray[Any]:
        return self.protocol.domain.labels_of(self._mechanism.release(codes))


class KaryProtocol(LocalProtocol[NDArray[Any]]):
    """k-ary randomised response: the truth with ``p = e^ε/(e^ε + d − 1)``, each other value with
    ``q = 1/(e^ε + d − 1)``. Count estimate ``(C_v − nq)/(p − q)``; for rare values its variance is about
    ``n(d − 2 + e^ε)/(e^ε − 1)²`` (Wang et al. 2017), growing with ``d``: use OUE or OLH for large domains.
    Reports are values of the domain: codes for ``d=``, labels for ``domain=[…]``.
    """

    name = "krr"

    def __init__(self, *, epsilon: float, d: int | None = None, domain: Labels | None = None) -> None:
        self._epsilon = _checks.epsilon(epsilon)
        self.domain = Domain.of(d, domain)
        self.d = self.domain.size
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
            raise InvalidParameter(f"the full matrix of d = {self.d} values is too large; use pair_matrix")
        m = np.full((self.d, self.d), self.q)
        np.fill_diagonal(m, self.p)
        return m

    @property
    def pair_matrix(self) -> Floats:
        rest = max(1.0 - self.p - self.q, 0.0)  # the d − 2 other responses: q under both values
        return np.array([[self.p, self.q, rest], [self.q, self.p, rest]])

    def randomizer(self, *, rng: RandomSource | None = None) -> Randomizer[NDArray[Any]]:
        return _KaryRandomizer(self, rng)

    def estimator(self) -> SupportEstimator:
        return _DirectEstimator(d=self.d, p_star=self.p, q_star=self.q, domain=self.domain)

    def likelihood(self, report: object) -> Floats:
        out = np.full(self.d, self.q)
        out[_one_response(self.domain, report)] = self.p
        return out
