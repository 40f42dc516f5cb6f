"""``DP-SELECT ACCURACY a [CONFIDENCE c] [MAX m] …``: the smallest ε whose answer reaches ± a.

Analysts think in accuracy, not ε. For every aggregate whose interval follows from public facts alone (counts
and sums: the noise scale is a function of the bounds, the contribution limits and ε), the half-width at
confidence c decreases as ε grows, so the smallest sufficient ε is found by bisection over plans of the same
query at different ε — each plan reads nothing, so the choice of ε, what explain shows and what is charged are
functions of the query text and the metadata only (the outcome rule). Averages and variances, whose interval
depends on the private group size, go to the accuracy-first noise reduction of Ligett et al. (NeurIPS 2017:
privdb.sql.accuracy.first); quantiles (their interval depends on the data's ranks) are refused, free.

Confidence other than 95% converts through the mechanism's tail: Laplace and geometric half-widths scale with
ln(1/(1−c)), Gaussian ones with the normal quantile Φ⁻¹((1+c)/2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from privdb import deadline
from privdb.errors import InvalidParameter
from privdb.sql.front.query import MAX_EPSILON

__all__ = ["epsilon_for_accuracy"]

_STEPS = 60  # bisection steps (geometric, to 1e-9 relative)
_ROUNDS = 64  # doublings or halvings between 1e-12 and MAX_EPSILON: 50 suffice
_FLOOR = 1e-9


def _scale(mechanism: str, confidence: float) -> float:
    """The half-width at ``confidence`` over the 95% half-width, for ``mechanism``."""
    if confidence == 0.95:
        return 1.0
    if mechanism in ("laplace", "geometric"):
        return math.log(1 / (1 - confidence)) / math.log(20)
    if mechanism in ("gaussian", "discrete_gaussian"):
        from scipy.special import ndtri  # SciPy for a Gaussian's quantile only (a start's largest import)

        return float(ndtri((1 + confidence) / 2) / ndtri(0.975))
    raise InvalidParameter(
        f"CONFIDENCE {confidence:g} is not available for the {mechanism} mechanism; use CONFIDENCE 0.95"
    )


def worst_ratio(columns: list[dict[str, Any]], half: float, confidence: float) -> float:
    """max over the answer's aggregates of (half-width at ``confidence``) / wanted half-width."""
    worst = 0.0
    for c in columns:
        if c.get("role") not in ("aggregate", "hidden"):
            continue
        width = c.get("ci95_half_width")
        if width is None:
            raise InvalidParameter(
                f"ACCURACY needs each aggregate's interval to follow from public facts, and {c['column']}'s "
                "depends on the data (an average's on its private group size, a quantile's on the data's "
                "ranks); write an ε instead (DP-SELECT 0.5 …), or ask for SUM and COUNT and divide"
            )
        worst = max(worst, float(width) * _scale(str(c.get("mechanism")), confidence) / half)
    if worst == 0.0:
        raise InvalidParameter("ACCURACY needs at least one aggregate (COUNT, SUM, …) to be accurate")
    return worst


def epsilon_for_accuracy(
    accuracy: tuple[float, float, float | None], columns_at: Callable[[float], list[dict[str, Any]]]
) -> float:
    """The smallest ε (to 6 significant digits, rounded up) at which every aggregate's half-width at the
    requested confidence is at most the requested one; ``columns_at(ε)`` plans the query at ε (explain's
    per-column facts)."""
    half, confidence, most = accuracy
    cap = MAX_EPSILON if most is None else most

    def enough(eps: float) -> bool:
        try:
            columns = columns_at(eps)
        except InvalidParameter:  # noise not calibrated at this ε (too small for the sensitivity): not enough
            return False
        return worst_ratio(columns, half, confidence) <= 1.0

    guess = worst_ratio(columns_at(1.0), half, confidence)  # half-widths scale about as 1/ε
    hi = min(max(guess * 1.01, _FLOOR), cap) if math.isfinite(guess) else cap
    # doublings from _FLOOR reach cap (≤ MAX_EPSILON) in ≤ 40 rounds, halvings reach 1e-12 in ≤ 50
    for _ in range(_ROUNDS):
        deadline.check()
        if enough(hi):
            break
        if hi >= cap:
            raise InvalidParameter(
                f"reaching ± {half:g} at {confidence:.0%} needs more than ε = {cap:g}"
                + (" (your MAX)" if most is not None else " (privdb's limit)")
                + "; ask for less accuracy, raise MAX, or narrow the query"
            )
        hi = min(hi * 2, cap)
    lo = hi / 2
    for _ in range(_ROUNDS):
        deadline.check()
        if not (lo > 1e-12 and enough(lo)):
            break
        hi, lo = lo, lo / 2
    for _ in range(_STEPS):
        deadline.check()
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
        if hi / lo < 1 + 1e-9:
            break
    rounded = float(f"{hi:.6g}")
    return rounded if rounded >= hi and enough(rounded) else float(f"{hi * (1 + 1e-6):.6g}")
