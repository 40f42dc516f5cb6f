"""Order statistics and modes, calibrated before anything is read: the ε shares of a quantile's answer and
the ends of its 95% interval, the ranks those ends aim at, and the refusal of a grid or ε float64 cannot
carry. The choices themselves, per group, are the answer stage's (privdb.sql.answer.choose).

*Why the interval costs a release of its own.* No interval computed from the released answer ``y`` and
public information alone can be both sound and useful: on a column whose values sit half at ``L``, half at
``U`` (one more at ``L``, or one more at ``U``) the median is ``L`` (or ``U``) and ``y`` is all but uniform
over the grid between them in both cases, so an interval ``I(y)`` covering the median 95% of the time on
both must hold all of ``[L, U]`` for most ``y`` (docs/proofs/sql.md, "Intervals of order statistics").
Turning the rank error into values would need the data's ranks, which is a leak.

*What is released instead.* The group's ε for the statistic is split: half chooses the answer (Smith's
utility, as before), a quarter each chooses a *lower end* aimed ``t`` ranks below ``q·n`` and an *upper
end* aimed ``t`` ranks above, with the lowest (highest) candidate's utility floored at ``−s₀``. With
probability ≥ 97.5% each end lands on its side of every true q-quantile (proof in docs/proofs/sql.md), so
``[lower end, upper end]`` — widened by one grid step on a float grid, where the engine moves a value to
its nearest grid point (up to half a step), and stretched to hold the answer — covers the true quantile
with probability ≥ 95%.

*Ties.* Every candidate is scored by its rank interval ``[#{x < y}, #{x ≤ y}]`` over the values at their
grid points, on float grids too: a value held by many rows is one candidate whose interval covers all
their ranks, so a point mass holding ``q·n`` wins (issue 26; docs/proofs/sql.md, "Order statistics"). ``t``
and ``s₀`` depend only on ε, Δ and the number of candidates; the interval is a function of the three
released values and public metadata (``interval_of``), never of the data.
"""

from __future__ import annotations

import math

from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism, RandomSource
from privdb.sql.plan.types import ANSWER_SHARE, END_SHARE, Histogram, answer_share

__all__ = ["ANSWER_SHARE", "END_SHARE", "answer_share", "bracket", "check_calibration", "end_mechanism"]

_END_BETA = 0.025  # each end fails with probability at most this: 95% for the interval (a union bound)
_SHRINK = 2e-6  # the sampler shrinks its coefficient by ≤ 1e-6 relative (float scores): bounds use less


def end_mechanism(hist: Histogram, rng: RandomSource | None = None) -> ExponentialMechanism:
    """The mechanism choosing one end of a quantile's interval, at ``END_SHARE`` of the group's ε."""
    return ExponentialMechanism(
        epsilon=hist.epsilon * END_SHARE, sensitivity=hist.sensitivity, monotone=False, rng=rng
    )


def bracket(hist: Histogram) -> tuple[float, float]:
    """``(t, s₀)`` in ranks, from public parameters only: each end aims ``t`` ranks beyond ``q·n``; the
    extreme candidate's utility is floored at ``−s₀``. With ``s = (ln |C| + ln 40)/c`` the McSherry–Talwar
    loss at 97.5% and ``s₀ = ln 40/c``, ``t = s + s₀`` makes each end sound (docs/proofs/sql.md)."""
    c = end_mechanism(hist).coefficient * (1.0 - _SHRINK)
    floor = math.log(1.0 / _END_BETA) / c
    return math.log(hist.points) / c + 2.0 * floor, floor


def check_calibration(hist: Histogram, what: str, epsilon: float) -> None:
    """Refuse, before anything is read, a histogram whose grid or exponential mechanisms float64 cannot
    carry: a grid of the bounds that overflows, or (a quantile) ends aimed so many ranks away that their
    utilities alone exceed the mechanism's float tolerance (``ExponentialMechanism.max_span``; at ε near
    1e-7). ``what``: the aggregate as written; ``epsilon``: the query's ε (named in the fix)."""
    top = hist.lo + hist.points * hist.width
    if not (math.isfinite(hist.width) and hist.width > 0 and math.isfinite(top)):
        raise InvalidParameter(
            f"{what}: the bounds of {hist.column.name!r} span more than float64 can divide into "
            f"{hist.cells} cells; declare narrower bounds (or rescale the column)"
        )
    hist.mechanism()  # its own parameter checks
    if hist.values is not None:
        return
    ends = end_mechanism(hist)
    t, _ = bracket(hist)
    # t must lie inside the utilities' public floor −max_span/2 (answer.choose.utilities): then the floor
    # never touches an end's choice when the end is sound, and no data can make the draw refuse
    ratio = 2.0 * t / ends.max_span
    if not ratio <= 1.0:
        raise InvalidParameter(
            f"{what} at epsilon {epsilon:g} is too small for the exponential mechanism in float64: its "
            f"interval's ends would be aimed {t:.3g} ranks away; use epsilon >= {epsilon * ratio:.2g}"
        )
