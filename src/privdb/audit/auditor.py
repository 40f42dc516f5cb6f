"""Empirical ε auditing: a statistical lower bound on the privacy loss of an implementation.

For two neighbouring inputs, draw outputs from each. An *event* ``E`` (an output above a threshold, below it,
or equal to a value) shows privacy loss at least ``ln((P₀(E) − δ) / P₁(E))``. The event is chosen on a first,
independent *selection* sample (the one that looks most revealing, with ``P₀(E) ≥ 0.01``); then, on fresh
samples, Clopper–Pearson bounds at ``α/2`` each give, with confidence ``1 − α``,

    ε ≥ ε_lb = ln((CP_lower(P₀(E)) − δ) / CP_upper(P₁(E))).

Because the event is fixed before the estimation samples are drawn, no multiple-comparison correction is
needed. A correct mechanism's ``ε_lb`` stays at or below its claim with probability ≥ ``1 − α``; a broken one
(half the noise, or a protocol with an impossible response) shows a bound above its claim.
This is the approach of DP-Sniper and Google's stochastic tester, in its simplest sound form.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta as beta_dist

from privdb.errors import InvalidParameter

__all__ = ["AuditResult", "audit", "clopper_pearson"]

Draw = Callable[[int], NDArray[Any]]


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided ``1 − alpha`` interval for a binomial proportion (each side ``alpha/2``)."""
    lo = 0.0 if k == 0 else float(beta_dist.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta_dist.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class AuditResult:
    """What an audit found: the claim, the lower bound, and the event that shows it."""

    name: str
    epsilon: float
    delta: float
    epsilon_lower_bound: float
    samples: int
    event: str
    confidence: float

    @property
    def passed(self) -> bool:
        """The bound does not exceed the claim (the implementation is consistent with it)."""
        return self.epsilon_lower_bound <= self.epsilon + 1e-12

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Event:
    """``output == value``, ``output > value`` or ``output <= value``."""

    op: str
    value: Any

    @property
    def description(self) -> str:
        shown = repr(self.value.item()) if self.op == "==" else f"{float(self.value):.6g}"
        return f"output {self.op} {shown}"

    def test(self, y: NDArray[Any]) -> NDArray[np.bool_]:
        if self.op == "==":
            return np.asarray(y == self.value)
        if self.op == ">":
            return np.asarray(y > self.value)
        return np.asarray(y <= self.value)


def _events(pooled: NDArray[Any]) -> list[_Event]:
    values = np.unique(pooled)
    events: list[_Event] = []
    if values.size <= 64:  # a discrete output: every single value is an event
        for v in values:
            events.append(_Event("==", v))
    thresholds = (
        values
        if values.size <= 256
        else np.unique(np.quantile(pooled.astype(np.float64), np.linspace(0.002, 0.998, 250)))
    )
    for t in thresholds:
        events.append(_Event(">", t))
        events.append(_Event("<=", t))
    return events


def _select_event(a: NDArray[Any], b: NDArray[Any], delta: float) -> _Event:
    """The event with the largest empirical ``(P_a − δ)/P_b`` among those with ``P_a ≥ 0.01``."""
    n = min(a.size, b.size)
    best: tuple[float, _Event] | None = None
    for event in _events(np.concatenate([a, b])):
        pa, pb = event.test(a).mean(), event.test(b).mean()
        if pa < 0.01 or pa - delta <= 0:
            continue
        score = math.log(pa - delta) - math.log(max(pb, 1.0 / n))
        if best is None or score > best[0]:
            best = (score, event)
    if best is None:  # pragma: no cover - every sample has an event of mass ≥ 0.01
        raise InvalidParameter("no output event has probability >= 0.01; draw more samples")
    return best[1]


def audit(
    name: str,
    draw0: Draw,
    draw1: Draw,
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int = 100_000,
    confidence: float = 0.95,
) -> AuditResult:
    """Lower-bound the ε of a mechanism from outputs on two neighbouring inputs.

    ``draw0(n)`` and ``draw1(n)`` return ``n`` independent outputs of the mechanism on each input. Both
    directions (0 against 1 and 1 against 0) are searched.
    """
    if samples < 1000:
        raise InvalidParameter(f"samples must be at least 1000 for a meaningful audit, got {samples}")
    alpha = 1.0 - confidence
    selection = max(samples // 4, 1000)
    s0, s1 = draw0(selection), draw1(selection)
    forward, backward = _select_event(s0, s1, delta), _select_event(s1, s0, delta)

    def ratio(a: NDArray[Any], b: NDArray[Any]) -> float:
        return float(a.mean()) / max(float(b.mean()), 1.0 / selection)

    use_backward = ratio(backward.test(s1), backward.test(s0)) > ratio(forward.test(s0), forward.test(s1))
    event = backward if use_backward else forward
    e0, e1 = draw0(samples), draw1(samples)
    hit_a = int(event.test(e1 if use_backward else e0).sum())
    hit_b = int(event.test(e0 if use_backward else e1).sum())
    p_a_low = clopper_pearson(hit_a, samples, alpha)[0]
    p_b_high = clopper_pearson(hit_b, samples, alpha)[1]
    bound = math.log(p_a_low - delta) - math.log(p_b_high) if p_a_low - delta > 0 else 0.0
    direction = "x1 vs x0" if use_backward else "x0 vs x1"
    return AuditResult(
        name=name,
        epsilon=epsilon,
        delta=delta,
        epsilon_lower_bound=max(bound, 0.0),
        samples=samples,
        event=f"{event.description} ({direction})",
        confidence=confidence,
    )
