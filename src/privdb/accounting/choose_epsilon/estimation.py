"""Choosing ε by the accuracy an adversary's interval estimate reaches (Naldi & D'Acquisto, "Differential
privacy: an estimation theory-based method for choosing epsilon", arXiv 1510.00917, 2015).

A query answered as ``r = f(D) + Lap(b)``, ``b = Δf/ε``, lets anyone estimate the true value by the interval
``[r − a, r + a]``; it holds ``f(D)`` with probability

    γ = P(|Lap(b)| ≤ a) = 1 − e^(−a/b) = 1 − e^(−ε·a/Δf).

Naldi & D'Acquisto propose to state privacy by the two numbers of interval estimation — the half-width ``a``
(accuracy) and the confidence ``γ`` — instead of ``b``: the owner names the interval an adversary must *not*
reach (e.g. "no one may place a count within ±5 with 90% confidence"), and the largest ε keeping the
adversary's confidence in that interval at most γ is

    ε = Δf·ln(1/(1 − γ)) / a.

A larger a (a coarser estimate the owner tolerates) or a smaller γ gives a smaller ε; a larger Δf a larger
one (the noise scales with Δf/ε). Sequential answers compose: the ε is a person's total.
"""

from __future__ import annotations

import math

from privdb.errors import InvalidParameter

__all__ = ["estimation_confidence", "estimation_epsilon"]


def _positive(name: str, value: float, meaning: str) -> None:
    if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
        raise InvalidParameter(f"{name} ({meaning}) must be a positive number, got {value!r}")


def estimation_epsilon(accuracy: float, confidence: float, *, sensitivity: float = 1.0) -> float:
    """The largest ε at which an adversary's interval ``answer ± accuracy`` holds the true value with
    probability at most ``confidence`` (a Laplace answer of sensitivity ``sensitivity``)."""
    _positive("accuracy", accuracy, "the half-width of the adversary's interval, in the query's units")
    _positive("sensitivity", sensitivity, "Δf, the query's sensitivity")
    if not (isinstance(confidence, int | float) and 0 < confidence < 1):
        raise InvalidParameter(
            f"confidence (the adversary's chance that the interval holds the true value) must be in (0, 1), "
            f"e.g. 0.9, got {confidence!r}"
        )
    return sensitivity * -math.log1p(-confidence) / accuracy


def estimation_confidence(epsilon: float, accuracy: float, *, sensitivity: float = 1.0) -> float:
    """The confidence an adversary's interval ``answer ± accuracy`` reaches after an ε-DP Laplace answer."""
    _positive("epsilon", epsilon, "the privacy parameter")
    _positive("accuracy", accuracy, "the half-width of the adversary's interval, in the query's units")
    _positive("sensitivity", sensitivity, "Δf, the query's sensitivity")
    return -math.expm1(-epsilon * accuracy / sensitivity)
