"""Choosing ε by the economics of a study (Hsu, Gaboardi, Haeberlen, Khanna, Narayan, Pierce, Roth,
"Differential privacy: an economic method for choosing epsilon", CSF 2014).

Two parties pull ε apart. The *analyst* wants an (α, β)-accurate answer; the *participants* must be paid
for the risk they take by joining. The paper's model, as implemented here:

- **Participants.** Each faces an expected cost ``E`` (the *base cost*) from the study's bad events whether
  or not they join. ε-differential privacy multiplies the probability of any event by at most ``e^ε`` (the
  *harm factor*), so joining raises the expected cost to at most ``e^ε·E``: each must be offered at least
  ``(e^ε − 1)·E``. An analyst with budget ``B`` for ``N`` participants can afford

      ε ≤ ε_budget = ln(1 + B/(N·E)).

- **Analyst.** The study estimates the mean of ``N`` values in [0, 1] (a proportion, or any bounded mean
  rescaled) with Laplace noise of scale ``1/(N·ε)``; the answer is within ``α`` of the data's mean with
  probability ``1 − e^(−N·ε·α)``, at least ``1 − β`` when

      ε ≥ ε_accuracy = ln(1/β) / (N·α).

The study is feasible when ``ε_accuracy ≤ ε_budget``; any ε between serves both, and the cheapest,
``ε_accuracy``, is the one chosen (the compensation ``N·(e^ε − 1)·E`` grows with ε). When it is not
feasible, more participants help: ``N·(e^(c/N) − 1)`` (``c = ln(1/β)/α``) falls towards ``c`` as ``N``
grows, so the study becomes affordable at some ``N`` exactly when ``B > c·E``. The paper also counts the
sampling error of a sample from a population; this module leaves it to the analyst's ``α`` (the noise's
share of the error).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from privdb.errors import InvalidParameter

__all__ = ["EconomicChoice", "economic_epsilon", "participants_needed"]

_MAX_PARTICIPANTS = 10**12


@dataclass(frozen=True)
class EconomicChoice:
    """The ε the study's two sides allow, and what it costs."""

    epsilon: float | None  # the chosen ε (ε_accuracy when feasible), None when no ε serves both
    epsilon_accuracy: float  # the least ε the analyst's (α, β) needs
    epsilon_budget: float  # the most ε the budget can compensate
    feasible: bool
    harm_factor: float | None  # e^ε: how much joining may multiply a participant's expected cost
    compensation: float | None  # each participant's payment, (e^ε − 1)·E
    cost: float | None  # N·compensation, at most the budget
    participants_needed: int | None  # the fewest participants that make the study feasible (None: none do)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _positive(name: str, value: float, meaning: str) -> None:
    if isinstance(value, bool) or not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
        raise InvalidParameter(f"{name} ({meaning}) must be a positive number, got {value!r}")


def _check(alpha: float, beta: float, participants: int, base_cost: float, budget: float) -> None:
    if isinstance(alpha, bool) or not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise InvalidParameter(
            f"alpha (the error the analyst tolerates, as a share of the values' range [0, 1]) must be in "
            f"(0, 1), e.g. 0.05, got {alpha!r}"
        )
    if isinstance(beta, bool) or not (isinstance(beta, int | float) and 0 < beta < 1):
        raise InvalidParameter(
            f"beta (the chance the answer may miss by more than alpha) must be in (0, 1), e.g. 0.05, "
            f"got {beta!r}"
        )
    if isinstance(participants, bool) or not isinstance(participants, int) or participants < 1:
        raise InvalidParameter(f"participants must be a whole number ≥ 1, got {participants!r}")
    if participants > _MAX_PARTICIPANTS:
        raise InvalidParameter(f"participants must be at most {_MAX_PARTICIPANTS:g}, got {participants!r}")
    _positive(
        "base cost", base_cost, "E, a participant's expected cost from the study whether or not they join"
    )
    _positive("budget", budget, "B, the total the analyst can pay the participants")


def _cost(participants: int, c: float, base_cost: float) -> float:
    if c / participants > 700.0:  # e^700 ≈ 1e304: beyond any budget float64 holds
        return math.inf
    return participants * math.expm1(c / participants) * base_cost


def participants_needed(alpha: float, beta: float, *, base_cost: float, budget: float) -> int | None:
    """The fewest participants for which the budget compensates the ε the (α, β) accuracy needs; None when
    no number does (``B ≤ ln(1/β)/α · E``)."""
    _check(alpha, beta, 1, base_cost, budget)
    c = math.log(1.0 / beta) / alpha
    if budget <= c * base_cost:
        return None
    hi = 1
    while _cost(hi, c, base_cost) > budget:  # the cost falls with N: double, then bisect
        hi *= 2
        if hi > _MAX_PARTICIPANTS:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _cost(mid, c, base_cost) <= budget:
            hi = mid
        else:
            lo = mid
    return hi


def economic_epsilon(
    alpha: float, beta: float, *, participants: int, base_cost: float, budget: float
) -> EconomicChoice:
    """The ε a study of ``participants`` people can use: at least what the analyst's (α, β) accuracy needs,
    at most what the budget ``B`` compensates at base cost ``E`` (Hsu et al. 2014)."""
    _check(alpha, beta, participants, base_cost, budget)
    low = math.log(1.0 / beta) / (participants * alpha)
    high = math.log1p(budget / (participants * base_cost))
    feasible = low <= high
    needed = participants_needed(alpha, beta, base_cost=base_cost, budget=budget)
    if not feasible:
        return EconomicChoice(None, low, high, False, None, None, None, needed)
    compensation = math.expm1(low) * base_cost
    return EconomicChoice(
        low, low, high, True, math.exp(low), compensation, participants * compensation, needed
    )
