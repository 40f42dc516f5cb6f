"""Each aggregate's noisy values and intervals from the noisy per-group statistics (post-processing).

Sums are released as noised, counts rounded to whole numbers; their interval is the mechanism's (a
count's rounded outward). Ratios are post-processing:
``AVG = S/N`` clipped to the column bounds, ``VAR_POP = Q/N − (S/N)²`` clipped to ``[0, ((U − L)/2)²]``
and ``VARIANCE = VAR_POP·N/(N−1)`` to ``[0, ((U − L)/2)²·N/(N − 1)]`` (the most n values in ``[L, U]``
allow), ``STDDEV``/``STDDEV_POP`` their square roots. Their intervals propagate the parts' intervals (each at
``1 − 0.05/k`` for ``k`` parts, a union bound) and are clipped to the value's range, so they cover the truth
at least 95% of the time, always satisfy ``L ≤ a ≤ b ≤ U`` (``0 ≤ a ≤ b`` for variances), and are as wide
as the noise makes them: with income bounds 0..500,000 a small group's variance interval is large, and says
so. When the propagated interval lies wholly outside the value's range, the parts' intervals missed the
truth; the answer is then the whole range, never a point at a bound (issue 26).
CORR, COVAR_POP and
REGR_* come from noisy sufficient statistics, with a simulated (plug-in) interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import Laplace
from privdb.mechanisms.base import AdditiveNoise
from privdb.sql.answer.intervals import released_count_intervals
from privdb.sql.plan.planner import PAIR_STATISTICS
from privdb.sql.plan.types import AggregatePlan, Threshold

__all__ = ["PAIR_KINDS", "VARIANCE_KINDS", "Interval", "combine", "whole"]

Interval = tuple[float, float]
VARIANCE_KINDS = ("variance", "stddev", "variance_pop", "stddev_pop")
PAIR_KINDS = ("covar", "corr", "regr_slope", "regr_intercept")
_SIMULATIONS = 4000


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def _ratio(s: Interval, n: Interval, lo: float, hi: float) -> Interval:
    """Where ``S/N`` lies when ``S`` and ``N`` lie in their intervals, within ``[lo, hi]``.

    Over a box with ``N > 0`` the ratio is extreme at the corners; both ends are clipped to ``[lo, hi]``.
    When every corner lies at or beyond one bound the box cannot hold the truth (which lies in ``[lo, hi]``):
    the parts' intervals missed, and clipping would claim a point (``[U, U]`` for ten people aged 69); what is
    honestly known then is ``[lo, hi]`` (issue 26)."""
    if n[0] <= 0:
        return (lo, hi)
    corners = (s[0] / n[0], s[0] / n[1], s[1] / n[0], s[1] / n[1])
    a, b = min(corners), max(corners)
    if b <= lo or a >= hi:
        return (lo, hi)
    return (_clip(a, lo, hi), _clip(b, lo, hi))


def whole(
    values: NDArray[np.float64], intervals: list[Interval]
) -> tuple[NDArray[np.float64], list[Interval]]:
    """A count as a whole number, its interval's ends rounded outward (issue 26). Post-processing: with a
    privacy unit a unit's rows are scaled (``min(1, m/R)``) and the noise is continuous, so the noisy
    count is fractional (5,001.19); a count is a whole number in plain SQL. The interval still holds the
    truth whenever the unrounded one did (it only grew), and the rounded value lies inside it."""
    rounded: NDArray[np.float64] = np.rint(values)
    return rounded, [
        (math.floor(a) if math.isfinite(a) else a, math.ceil(b) if math.isfinite(b) else b)
        for a, b in intervals
    ]


def combine(
    agg: AggregatePlan,
    noisy: dict[str, NDArray[np.float64]],
    mechs: Mapping[str, AdditiveNoise],
    threshold: Threshold | None = None,
    alpha: float = 0.05,
) -> tuple[NDArray[np.float64], list[Interval]]:
    """The aggregate's noisy values and ``1 − alpha`` intervals, per group (``threshold``: the key
    selection, whose count's interval is conditional on release)."""
    if agg.kind in PAIR_KINDS:
        return _pair(agg, noisy, mechs, alpha)
    if agg.kind in ("count_star", "count", "sum", "count_distinct"):
        (name,) = agg.statistics
        values = noisy[name]
        if threshold is not None and threshold.statistic == name:
            mech = mechs[name]
            assert isinstance(
                mech, Laplace
            )  # the threshold's count keeps Laplace noise (privdb.sql.plan.gaussian)
            raw = released_count_intervals(values, mech, threshold.tau, 1.0 - alpha)
        else:
            width = mechs[name].half_width(alpha)  # one width for every group: one mechanism noised each
            raw = [(v - width, v + width) for v in values.tolist()]
        return (values, raw) if agg.kind == "sum" else whole(values, raw)
    if agg.kind != "avg" and agg.kind not in VARIANCE_KINDS:
        raise ValueError(f"no noisy combination for aggregate kind {agg.kind!r}")
    assert agg.column is not None and agg.column.lower is not None and agg.column.upper is not None
    lo, hi = agg.column.lower, agg.column.upper
    k = len(agg.statistics)
    beta = alpha / k
    widths = {n: mechs[n].half_width(beta) for n in agg.statistics}

    def interval(name: str, i: int) -> Interval:
        return (noisy[name][i] - widths[name], noisy[name][i] + widths[name])

    out = np.empty(len(noisy[agg.statistics[0]]))
    intervals: list[Interval] = []
    if agg.kind == "avg":
        s, n = agg.statistics
        for i in range(out.size):
            count = noisy[n][i]
            out[i] = _clip(noisy[s][i] / count, lo, hi) if count >= 1 else (lo + hi) / 2
            intervals.append(_ratio(interval(s, i), interval(n, i), lo, hi))
        return out, intervals
    # VARIANCE (sample, N − 1) or VAR_POP (population, N) from Q = Σx², S = Σx, N
    population = agg.kind in ("variance_pop", "stddev_pop")
    least = 1 if population else 2  # rows the estimate needs
    q, s, n = agg.statistics
    square_lo = 0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)
    square_hi = max(lo * lo, hi * hi)
    cap = ((hi - lo) / 2) ** 2
    for i in range(out.size):
        count = noisy[n][i]
        if count >= least:
            mean = _clip(noisy[s][i] / count, lo, hi)
            second = _clip(noisy[q][i] / count, square_lo, square_hi)
            var = second - mean * mean
            scale = 1.0 if population else count / (count - 1)
            out[i] = _clip(var * scale, 0.0, cap * scale)
        else:
            out[i] = cap / 2
        n_int = interval(n, i)
        if n_int[0] <= 0:  # the count may be 0: nothing is known
            intervals.append((0.0, cap if population else 2 * cap))
            continue
        m_lo, m_hi = _ratio(interval(s, i), n_int, lo, hi)
        e_lo, e_hi = _ratio(interval(q, i), n_int, square_lo, square_hi)
        mean_sq_lo = 0.0 if m_lo <= 0 <= m_hi else min(m_lo * m_lo, m_hi * m_hi)
        mean_sq_hi = max(m_lo * m_lo, m_hi * m_hi)
        # the population variance lies in [e_lo − m²_hi, e_hi − m²_lo]; the sample variance is it times
        # N/(N − 1) ≥ 1, at most n_lo/(n_lo − 1) (no bound while N may be 1)
        # the sample variance of n values in [L, U] reaches ((U − L)/2)²·n/(n − 1) (two values, one at each
        # bound: twice the cap), so its interval may reach that far
        top = cap if population else (cap * n_int[0] / (n_int[0] - 1) if n_int[0] > 2 else 2 * cap)
        raw_lo = e_lo - mean_sq_hi
        if population:
            raw_hi = e_hi - mean_sq_lo
        else:
            raw_hi = (e_hi - mean_sq_lo) * n_int[0] / (n_int[0] - 1) if n_int[0] > 1 else top
        if raw_hi < 0 or raw_lo > top:  # the parts' intervals missed (a variance is ≥ 0): not a point
            intervals.append((0.0, top))
            continue
        v_lo = _clip(raw_lo, 0.0, top)
        intervals.append((v_lo, _clip(raw_hi, v_lo, top)))
    if agg.kind in ("stddev", "stddev_pop"):
        return np.sqrt(out), [(math.sqrt(a), math.sqrt(b)) for a, b in intervals]
    return out, intervals


def _simulate(draws: np.random.Generator, mech: AdditiveNoise) -> NDArray[np.float64]:
    """Draws of ``mech``'s noise law (a public distribution), for the plug-in intervals below."""
    if mech.name in ("gaussian", "discrete_gaussian"):
        return draws.normal(0.0, mech.scale, _SIMULATIONS)
    return draws.laplace(0.0, mech.scale, _SIMULATIONS)


def _pair_value(kind: str, st: dict[str, NDArray[np.float64]]) -> NDArray[np.float64]:
    """The aggregate from (noisy) sufficient statistics; NaN where it is undefined (too few rows)."""
    n, sx, sy, sxy = st["pn"], st["sx"], st["sy"], st["sxy"]
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "covar":
            out = sxy / n - (sx / n) * (sy / n)
        elif kind == "corr":
            num = n * sxy - sx * sy
            den = np.sqrt((n * st["sxx"] - sx * sx) * (n * st["syy"] - sy * sy))
            out = np.clip(num / den, -1.0, 1.0)
        else:
            slope = (n * sxy - sx * sy) / (n * st["sxx"] - sx * sx)
            out = slope if kind == "regr_slope" else (sy - slope * sx) / n
    result: NDArray[np.float64] = np.where(n >= 2, out, np.nan)
    return result


def _pair(
    agg: AggregatePlan,
    noisy: dict[str, NDArray[np.float64]],
    mechs: Mapping[str, AdditiveNoise],
    alpha: float = 0.05,
) -> tuple[NDArray[np.float64], list[Interval]]:
    """CORR, COVAR_POP, REGR_SLOPE, REGR_INTERCEPT from noisy sufficient statistics (post-processing).

    The interval is a parametric bootstrap: the known noise distributions are simulated around the
    released statistics and the aggregate recomputed; its 2.5 and 97.5 percentiles (approximate: a
    plug-in, unlike the exact intervals of counts and sums)."""
    roles = dict(zip(PAIR_STATISTICS[agg.kind], agg.statistics, strict=True))
    released = {role: noisy[name] for role, name in roles.items()}
    values = _pair_value(agg.kind, released)
    draws = np.random.default_rng()  # simulates public noise distributions: no secret is involved
    intervals: list[Interval] = []
    for i in range(values.size):
        simulated = {role: released[role][i] + _simulate(draws, mechs[name]) for role, name in roles.items()}
        sims = _pair_value(agg.kind, simulated)
        sims = sims[np.isfinite(sims)]
        if sims.size < _SIMULATIONS // 2:
            intervals.append((-math.inf, math.inf))
        else:
            lo, hi = np.percentile(sims, [50 * alpha, 100 - 50 * alpha])
            intervals.append((float(lo), float(hi)))
    return values, intervals
