"""Intervals for the counts released through the noisy threshold.

*Counts that passed the noisy threshold* (keys without a public domain, decision for issue 13, finding 11):
a key is released only when its noisy count ``X`` reaches ``τ``, so near ``τ`` the released values are
biased upward and ``X ± w`` covers the truth well under 95% of the time (40–65% for true counts 2.5 noise
scales below ``τ``; ~85% over a typical mix of released keys). The interval of the count that was
thresholded is therefore a confidence set *conditional on release*: for a true count ``c`` the released
value follows the noise law truncated to ``X ≥ τ``; its acceptance region is the shortest
(highest-probability) set ``{x ≥ τ : |x − c| ≤ r(c)}`` holding ≥ 95% of that truncated law, and the interval
is every ``c ≥ 0`` whose region holds the observed ``x``. It covers the truth ≥ 95% of the time among the
released keys, for every true count; it is never empty; far above ``τ`` it is the unconditional ``X ± w``;
near ``τ`` its lower end reaches 0 (a key that barely passed may have had any small count). Only that one
statistic is affected: every other statistic has its own independent noise, so its interval keeps its
coverage conditional on release.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import Geometric, Laplace

__all__ = ["released_count_intervals"]

Interval = tuple[float, float]


def _log_tail(k: NDArray[np.float64], rate: float) -> NDArray[np.float64]:
    """``log P(Z ≥ k)`` for integer ``k`` and the discrete Laplace ``Z`` of ``rate`` λ (``q = e^−λ``):
    ``q^k/(1 + q)`` for ``k ≥ 0``, ``1 − q^(1−k)/(1 + q)`` below."""
    log1p_q = math.log1p(math.exp(-rate))
    above = -rate * np.maximum(k, 0.0) - log1p_q
    below = np.log1p(-np.exp(-rate * (1.0 - np.minimum(k, 0.0)) - log1p_q))
    out: NDArray[np.float64] = np.where(k >= 0, above, below)
    return out


def _accepts(
    c: NDArray[np.float64], x: NDArray[np.float64], t: float, rate: float, level: float
) -> NDArray[np.bool_]:
    """Whether ``x`` (grid steps, ≥ ``t``) lies in the acceptance region of the true count ``c`` (grid
    steps): the shortest set ``{x ≥ t : |x − c| ≤ r}`` holding ≥ ``level`` of ``c + Z`` given ``c + Z ≥ t``.
    ``x`` is outside iff the set of radius ``|x − c| − 1`` already holds ``level``."""
    d = x - c
    radius = np.abs(d) - 1.0
    start = t - c  # released iff Z ≥ start
    log_released = _log_tail(start, rate)
    # P(max(start, −r) ≤ Z ≤ r | Z ≥ start), both tails relative to P(Z ≥ start) (≤ 1: an empty region,
    # r < start, gives 1 − 1 = 0)
    inside = np.exp(np.minimum(_log_tail(np.maximum(start, -radius), rate) - log_released, 0.0)) - np.exp(
        np.minimum(_log_tail(radius + 1.0, rate) - log_released, 0.0)
    )
    accepted: NDArray[np.bool_] = (d == 0) | (np.maximum(inside, 0.0) < level)
    return accepted


def _bisect(good: NDArray[np.float64], bad: NDArray[np.float64], test: Any) -> NDArray[np.float64]:
    """Per entry, the last integer from ``good`` towards ``bad`` where ``test`` holds (it holds at ``good``,
    fails at ``bad`` and changes once in between; integers below 2^53 in magnitude, so floats are exact)."""
    good, bad = good.copy(), bad.copy()
    for _ in range(128):  # 54 halvings reach any gap below 2^53
        open_ = np.abs(bad - good) > 1
        if not open_.any():
            break
        mid = np.where(open_, np.floor((good + bad) / 2), good)
        ok = test(mid)
        good = np.where(open_ & ok, mid, good)
        bad = np.where(open_ & ~ok, mid, bad)
    return good


def released_count_intervals(
    values: NDArray[np.float64], mech: Laplace, tau: float, level: float = 0.95
) -> list[Interval]:
    """Intervals for counts released because their noisy value reached ``tau``, that cover the true count
    with probability ≥ ``level`` given the release, whatever it is (module doc): every true count ``c ≥ 0``
    whose shortest ``level`` region of the noise law truncated to ``≥ tau`` holds the released value.

    Works in grid steps (the mechanism releases ``g·(round(c/g) + Z)``, ``Z`` discrete Laplace of rate λ);
    the accepted true counts form an interval (checked exhaustively in tests/test_sql_accuracy.py), found by
    bisection, vectorised over the groups."""
    if not values.size:
        return []
    g, rate = mech.granularity, mech.rate
    t = float(math.ceil(tau / g))  # released iff the grid value is ≥ t (g is a power of two: exact)
    x = np.maximum(np.rint(values / g), t)
    steps = float(round(mech.half_width(1.0 - level) / g))  # c above x + steps: rejected by construction

    def accepts(c: NDArray[np.float64]) -> NDArray[np.bool_]:
        return _accepts(c, x, t, rate, level)

    upper = _bisect(x, x + steps + 1.0, accepts)
    # far below t the law given release is t + a geometric: x is accepted there iff 1 − q^(x − t) < level;
    # where it is not, double the distance until a true count is rejected, then bisect
    bounded = -np.expm1(-rate * (x - t)) >= level
    reach = np.full_like(x, steps + 1.0)
    for _ in range(60):
        rejected = ~accepts(x - reach)
        if (rejected | ~bounded).all():
            break
        reach = np.where(rejected | ~bounded, reach, np.minimum(2.0 * reach, 2.0**53))
    bounded &= ~accepts(x - reach)  # (a bound beyond 2^53 steps is no bound)
    lower = np.full_like(x, -np.inf)
    if bounded.any():
        xb = x[bounded]
        lower[bounded] = _bisect(xb, xb - reach[bounded], lambda c: _accepts(c, xb, t, rate, level))
    slack = 0.0 if isinstance(mech, Geometric) else 0.5  # rounding to the grid moved the truth ≤ g/2
    return [
        (max(0.0, (a - slack) * g), max(0.0, (b + slack) * g))
        for a, b in zip(lower.tolist(), upper.tolist(), strict=True)
    ]
