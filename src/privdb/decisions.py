"""Private decisions: pick the best of a finite set of candidates with the exponential mechanism.

McSherry & Talwar (FOCS 2007): candidate ``r`` is chosen with probability ``∝ exp(ε·u(x, r) / (2Δ))``,
where ``u`` scores each candidate on the private data ``x`` and ``Δ`` bounds how much one person can move
any score. That is ε-DP for every utility. When the caller declares the utility *monotone* (every score
moves the same way between neighbours, as counts do under add/remove), the ``exp(ε·u/Δ)`` form is also
ε-DP and twice as sharp; privdb uses it only when told so.

Accuracy (Dwork & Roth 2014, Thm 3.11): with probability at least ``1 − β`` the chosen candidate's utility
is within ``(2Δ/ε)·(ln|R| + ln(1/β))`` of the best (``Δ/ε`` in the monotone form), ``|R|`` candidates.

Sampling is the exact, CSPRNG-driven Gumbel race of :class:`privdb.mechanisms.ExponentialMechanism`
(docs/proofs/exponential.md); this module only scores candidates and validates what the caller passes.
Worked examples: docs/decisions.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _validate
from privdb.mechanisms.exponential import ExponentialMechanism
from privdb.mechanisms.randomness import RandomSource

__all__ = ["Decision", "decide"]

C = TypeVar("C")

GENERAL_FORM = "exp(ε·u/(2Δ))"
MONOTONE_FORM = "exp(ε·u/Δ)"


@dataclass(frozen=True)
class Decision(Generic[C]):
    """The outcome of :func:`decide`: what was chosen, what it cost, and how good it is likely to be."""

    choice: C
    index: int
    epsilon: float
    sensitivity: float
    monotone: bool
    n_candidates: int

    @property
    def form(self) -> str:
        """The sampling weight used: ``exp(ε·u/(2Δ))``, or ``exp(ε·u/Δ)`` for a declared monotone utility."""
        return MONOTONE_FORM if self.monotone else GENERAL_FORM

    @property
    def epsilon_spent(self) -> float:
        """The privacy cost of this decision (pure ε-DP, δ = 0)."""
        return self.epsilon

    def utility_loss(self, beta: float = 0.05) -> float:
        """With probability ``≥ 1 − β`` the choice's utility is within this of the best (Thm 3.11), at the
        sampler's coefficient (1e-6 below the textbook one: docs/proofs/exponential.md, "Float scores")."""
        mech = ExponentialMechanism(
            epsilon=self.epsilon, sensitivity=self.sensitivity, monotone=self.monotone
        )
        return mech.utility_loss(self.n_candidates, beta)

    @property
    def note(self) -> str:
        """One line on the expected utility loss, for people reading the result."""
        return (
            f"chosen by the exponential mechanism, weight {self.form}, ε = {self.epsilon:g}; with "
            f"probability ≥ 95% its utility is within {self.utility_loss(0.05):.4g} of the best of "
            f"{self.n_candidates} candidates (McSherry & Talwar 2007; Dwork & Roth Thm 3.11)"
        )


def _candidates(candidates: Sequence[C] | NDArray[np.generic]) -> list[C]:
    if isinstance(candidates, str | bytes):
        raise InvalidParameter(
            "candidates is a single string; pass a list of candidates, e.g. ['flu', 'HIV']"
        )
    try:
        items: list[C] = list(candidates)
    except TypeError:
        raise InvalidParameter(
            f"candidates must be a sequence (list, tuple, array), got {type(candidates).__name__}"
        ) from None
    if not items:
        raise InvalidParameter("candidates is empty; pass at least one candidate to choose from")
    return items


def _scores(items: list[C], utility: Callable[[C], float] | ArrayLike) -> NDArray[np.float64]:
    if callable(utility):
        try:
            raw = [float(utility(c)) for c in items]
        except (TypeError, ValueError):
            raise InvalidParameter(
                "utility must return one real number per candidate; make the callable return a float"
            ) from None
        scores = np.asarray(raw, dtype=np.float64)
    else:
        try:
            scores = np.asarray(utility, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameter(
                "utility must be a callable on a candidate or an array of real scores"
            ) from None
        if scores.ndim != 1:
            raise InvalidParameter(
                f"utility must be a 1-d array of scores, one per candidate; got shape {scores.shape}"
            )
        if scores.size != len(items):
            raise InvalidParameter(
                f"utility has {scores.size} scores for {len(items)} candidates; "
                "pass one score per candidate, in the same order"
            )
    if not np.all(np.isfinite(scores)):
        # no values or counts in the message: the scores come from private data
        raise InvalidParameter(
            "utility must be finite for every candidate (NaN or infinity found); "
            "give impossible candidates a low finite utility instead"
        )
    return scores


def decide(
    candidates: Sequence[C] | NDArray[np.generic],
    utility: Callable[[C], float] | ArrayLike,
    sensitivity: float,
    epsilon: float,
    *,
    monotone: bool = False,
    rng: RandomSource | None = None,
) -> Decision[C]:
    """Choose one candidate, favouring high ``utility``, with ε-DP (the exponential mechanism).

    ``utility`` is a callable scoring one candidate on the private data, or an array of scores in the
    candidates' order; ``sensitivity`` bounds the change of any score between neighbouring datasets.
    Declare ``monotone=True`` only if all scores always move in the same direction between neighbours
    (counts under add/remove): it doubles the sharpness and is not ε-DP otherwise.
    """
    eps = _validate.positive("epsilon", epsilon)
    delta_u = _validate.positive("sensitivity", sensitivity)
    items = _candidates(candidates)
    scores = _scores(items, utility)
    mech = ExponentialMechanism(epsilon=eps, sensitivity=delta_u, monotone=monotone, rng=rng)
    index = mech.select(scores)
    return Decision(
        choice=items[index],
        index=index,
        epsilon=eps,
        sensitivity=delta_u,
        monotone=bool(monotone),
        n_candidates=len(items),
    )
