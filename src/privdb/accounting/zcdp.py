"""Zero-concentrated DP (Bun & Steinke 2016) and its conversion to (ε, δ)-DP.

A ρ-zCDP mechanism is (ε, δ)-DP for every δ > 0 with (Canonne, Kamath, Steinke 2020, Proposition 12)

    δ = inf_{α>1}  exp((α−1)(αρ − ε)) / (α−1) · (1 − 1/α)^α,

i.e. ε(δ) = min_{α>1} αρ + (ln(1/δ) + α·ln(1 − 1/α) − ln(α − 1)) / (α − 1).
It is never worse than Bun & Steinke's ε = ρ + 2·sqrt(ρ·ln(1/δ)), which privdb also computes and takes the
smaller of. ρ-zCDP answers compose by adding their ρ.
"""

from __future__ import annotations

import math
import sys

from privdb import deadline
from privdb.errors import InvalidParameter
from privdb.mechanisms import _validate

__all__ = ["epsilon_from_rho", "rho_from_epsilon"]


def _cks_epsilon(rho: float, delta: float, alpha: float) -> float:
    return alpha * rho + (-math.log(delta) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)) / (
        alpha - 1.0
    )


def epsilon_from_rho(rho: float, delta: float) -> float:
    """The ε of (ε, δ)-DP implied by ρ-zCDP (the smaller of the two conversions above)."""
    rho = _validate.non_negative("rho", rho)
    delta = _validate.probability("delta", delta, open_low=True, open_high=True)
    if rho == 0.0:
        return 0.0
    from scipy.optimize import minimize_scalar  # SciPy where a conversion needs it: a start's largest import

    classic = rho + 2.0 * math.sqrt(rho * -math.log(delta))
    # ε(α) is convex in α; search log(α − 1) over a wide bracket.
    result = minimize_scalar(
        lambda s: _cks_epsilon(rho, delta, 1.0 + math.exp(s)),
        bounds=(-20.0, 20.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    best = float(result.fun)
    eps = min(classic, best) if math.isfinite(best) else classic
    # a tiny ρ with a large δ can make the bound negative: the mechanism is then (0, δ)-DP
    return max(0.0, eps)


ROUNDS = 1100  # doublings of ρ from ε's float to beyond float64's largest
BISECTIONS = 200


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """The largest ρ whose conversion gives at most ``epsilon`` at ``delta`` (bisection, rounded down).

    At most ``ROUNDS`` doublings and ``BISECTIONS`` halvings, each one bounded conversion
    (``minimize_scalar`` stops after 500 evaluations); a ρ that is not a positive normal float64 is refused
    (``invalid_parameter``).
    """
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.probability("delta", delta, open_low=True, open_high=True)
    lo, hi = 0.0, epsilon
    for _ in range(ROUNDS):
        deadline.check()
        if not epsilon_from_rho(hi, delta) < epsilon:
            break
        hi *= 2.0
        if not math.isfinite(hi):
            raise InvalidParameter(
                f"epsilon {epsilon:g} at delta {delta:g} converts to no finite zCDP rho; use a smaller "
                "epsilon"
            )
    for _ in range(BISECTIONS):
        deadline.check()
        mid = 0.5 * (lo + hi)
        if epsilon_from_rho(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    if not lo >= sys.float_info.min:
        raise InvalidParameter(
            f"epsilon {epsilon:g} at delta {delta:g} is too small for zCDP (rho {lo:g} underflows float64); "
            "raise epsilon or delta"
        )
    return lo
