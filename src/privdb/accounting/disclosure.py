"""Choosing ε from a tolerated disclosure risk, and back (Lee & Clifton, "How much is enough? Choosing ε for
differential privacy", ISC 2011).

The adversary of Lee & Clifton knows every record but one and hesitates between ``n`` possible worlds
(the datasets that differ in that one person: in or out, or which of ``n`` candidates), with a uniform prior.
After a Laplace answer ``f(D) + Lap(Δf/ε)`` the posterior of the true world ω₁ is

    P(ω₁ | r) = p(r|ω₁) / Σⱼ p(r|ωⱼ) ≤ 1 / (1 + (n−1)·e^(−ε·Δv/Δf)),

because each density ratio p(r|ωⱼ)/p(r|ω₁) ≥ e^(−ε·|f(ωⱼ)−f(ω₁)|/Δf) ≥ e^(−ε·Δv/Δf), where Δv is the
largest difference of the query's true values between possible worlds (Δv ≤ Δf; Δv = Δf in the worst case).
Solving for ε gives the largest ε that keeps the posterior at most ρ:

    ε = (Δf/Δv)·ln((n−1)·ρ/(1−ρ)),   defined for 1/n < ρ < 1 (the prior is already 1/n).

For the presence question (n = 2, Δv = Δf) this is ρ = e^ε/(1+e^ε): ε = ln 3 caps the adversary's belief that
someone is in the data at 3/4. Sequential answers compose: use the total ε spent about a person.
"""

from __future__ import annotations

import math
from typing import Any

from privdb.errors import InvalidParameter

__all__ = ["disclosure_risk", "epsilon_for_risk", "presence_disclosure"]


def _check(worlds: int, sensitivity: float, spread: float | None) -> float:
    if isinstance(worlds, bool) or not isinstance(worlds, int) or worlds < 2:
        raise InvalidParameter(
            f"worlds must be a whole number ≥ 2 (the datasets the adversary hesitates between), "
            f"got {worlds!r}"
        )
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise InvalidParameter(f"sensitivity must be a positive number, got {sensitivity!r}")
    spread = sensitivity if spread is None else spread
    if not (0 < spread <= sensitivity):
        raise InvalidParameter(
            f"spread (Δv, the largest difference of the query between possible worlds) must be in (0, Δf = "
            f"{sensitivity:g}], got {spread!r}"
        )
    return sensitivity / spread


def disclosure_risk(
    epsilon: float, *, worlds: int = 2, sensitivity: float = 1.0, spread: float | None = None
) -> float:
    """The bound on the adversary's posterior belief in the true world after an ε-DP Laplace answer."""
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise InvalidParameter(f"epsilon must be a non-negative number, got {epsilon!r}")
    ratio = _check(worlds, sensitivity, spread)
    return 1.0 / (1.0 + (worlds - 1) * math.exp(-epsilon / ratio))


def epsilon_for_risk(
    risk: float, *, worlds: int = 2, sensitivity: float = 1.0, spread: float | None = None
) -> float:
    """The largest ε that keeps the adversary's posterior belief at most ``risk``."""
    ratio = _check(worlds, sensitivity, spread)
    if not (1.0 / worlds < risk < 1.0):
        raise InvalidParameter(
            f"the tolerated risk must be above the prior 1/{worlds} = {1 / worlds:.3g} and below 1, "
            f"got {risk!r} (the adversary believes that much before any answer)"
        )
    return ratio * math.log((worlds - 1) * risk / (1.0 - risk))


def presence_disclosure(epsilon: float) -> dict[str, Any]:
    """What a query's ε means to the adversary who knows everyone else's data and hesitates between one
    person's presence and absence (two worlds, the worst-case spread): shown by explain."""
    return {
        "worlds": 2,
        "posterior_bound": disclosure_risk(epsilon),
        "meaning": "an adversary who knows every other record believes a person present at most this much "
        "after the answer (from 1/2 before); Lee & Clifton 2011",
    }
