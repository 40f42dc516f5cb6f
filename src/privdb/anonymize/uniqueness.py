"""Population uniqueness from a sample: how many of the population's records are alone in their class,
estimated from the sample's class-size histogram and the sampling fraction π = n/N, as ARX computes it.

* Pitman (1996): the sample is a draw from a Pitman (two-parameter Poisson–Dirichlet) partition; θ and α are
  the maximum-likelihood estimates (Hoshino 2001), found by two-dimensional Newton–Raphson from the
  moment-style initial guess; population uniques ≈ Γ(θ+1)/Γ(θ+α)·N^α.
* Zayatz (1991): the share of sample uniques that are population uniques is estimated with hypergeometric
  probabilities of drawing one record of a class of each observed size; population uniques = (sample
  uniques × that share) / π.
* SNB (Chen and Keller-McNulty 1998): the slide negative binomial model; the number of non-empty classes K
  is estimated first, then α and β solve the equations for the sample's counts of classes of size 1 and 2;
  population uniques = K·β^α. ARX's K estimate sums ``(1−π)^i·(1+π)^i·c_i − 1`` per observed class size i
  (the −1 is inside the sum); that formula is kept, so the figures are ARX's.
* Dankar et al. (BMC Med. Inform. Decis. Mak. 2012), the decision rule: π ≤ 0.1 → Pitman (Zayatz if Pitman
  has no estimate); π > 0.1 → the smaller of Zayatz and SNB (Zayatz if SNB has none).

An estimate that does not converge, is not finite or falls outside 0..N counts as none (``None``), as in
ARX. With no sample uniques every estimate is 0. The solver tries the initial guess, then ARX's grid of
start values (0, 0.33, 0.66, 0.99)², each for at most 1,000 steps, and accepts a point where both
equations are within 1e-6 of zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from privdb.errors import InvalidParameter

__all__ = ["ESTIMATORS", "Uniqueness", "population_uniqueness"]

ESTIMATORS = ("pitman", "zayatz", "snb", "dankar")
_ACCURACY = 1e-6
_STEPS = 1000
_GRID = [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]

Vec = tuple[float, float]
Equations = Callable[[float, float], tuple[Vec, tuple[float, float, float, float]]]


def _newton(
    f: Equations, starts: list[Vec], valid: Callable[[float, float], bool] = lambda x, y: True
) -> Vec:
    """A root of the two equations ``f`` (values and Jacobian) from the first start that converges."""
    for x, y in starts:
        for _ in range(_STEPS):
            try:
                with np.errstate(all="ignore"):
                    (f1, f2), (a, b, c, d) = f(x, y)
            except (ZeroDivisionError, OverflowError, ValueError):
                break
            if not all(math.isfinite(v) for v in (f1, f2, a, b, c, d)):
                break
            if abs(f1) <= _ACCURACY and abs(f2) <= _ACCURACY:
                if valid(x, y):
                    return x, y
                break
            det = a * d - b * c
            if det == 0:
                break
            x, y = x - (d * f1 - b * f2) / det, y - (a * f2 - c * f1) / det
    return math.nan, math.nan


def _trigamma(x: float) -> float:
    return float(polygamma(1, x))


def _pitman(sizes: np.ndarray, counts: np.ndarray, n: float, population: float) -> float:
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum()) or 1.0
    c = c1 * (c1 - 1) / c2
    theta0 = (n * u * c - c1 * (n - 1) * (2 * u + c)) / (2 * c1 * u + c1 * c - n * c)
    alpha0 = (theta0 * (c1 - n) + (n - 1) * c1) / (n * u)
    big, big_counts = sizes[sizes != 1].astype(np.float64), counts[sizes != 1].astype(np.float64)

    def eq(t: float, a: float) -> tuple[Vec, tuple[float, float, float, float]]:
        # log-likelihood derivatives of the Pitman partition (closed forms with polygamma functions)
        v = u - 1.0
        s1, s4 = float(digamma(v + t / a + 1)), float(digamma(t / a + 1))
        s2, s3 = _trigamma((a + t + a * v) / a), _trigamma(t / a + 1)
        d1 = (s3 - s2) / a**2
        d5 = (a * s1 + t * s2 - a * s4 - t * s3) / a**3
        d3 = (a**2 * v - t * t * s2 + t * t * s3 - 2 * a * t * s1 + 2 * a * t * s4) / a**4
        o1 = (s1 - s4) / a
        o3 = (-t * s1 + a * v + t * s4) / a**2
        o2 = float(digamma(n + t) - digamma(t + 1))
        d2 = _trigamma(t + 1) - _trigamma(n + t)
        d4 = float((big_counts * (_trigamma(1 - a) - polygamma(1, big - a))).sum())
        o4 = float((big_counts * (digamma(big - a) - digamma(1 - a))).sum())
        return (o1 - o2, o3 - o4), (d2 - d1, -d5, -d5, -d3 - d4)

    t, a = _newton(eq, [(theta0, alpha0), *_GRID], lambda t, a: t >= 0)
    if not (math.isfinite(t) and math.isfinite(a)) or a == 0:
        return math.nan
    with np.errstate(all="ignore"):
        value = float(np.exp(gammaln(t + 1) - gammaln(t + a) + a * math.log(population)))
    return value if 0 <= value <= population else math.nan


def _hypergeom_one(population: int, size: np.ndarray, n: int) -> np.ndarray:
    """P(exactly one of a class's ``size`` population records is among ``n`` drawn from ``population``)."""
    size = size.astype(np.float64)
    log = (
        np.log(size)
        + gammaln(population - size + 1) - gammaln(n) - gammaln(population - size - n + 2)
        - (gammaln(population + 1) - gammaln(n + 1) - gammaln(population - n + 1))
    )  # fmt: skip
    with np.errstate(invalid="ignore"):
        return np.where(population - size >= n - 1, np.exp(log), 0.0)


def _zayatz(sizes: np.ndarray, counts: np.ndarray, n: float, population: float) -> float:
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    pop, draws = int(min(population, 2**31 - 1)), int(n)
    total = float((counts / u * _hypergeom_one(pop, sizes, draws)).sum())
    share = (c1 / u) * float(_hypergeom_one(pop, np.array([1]), draws)[0]) / total
    return c1 * share / (n / population)


def _snb(sizes: np.ndarray, counts: np.ndarray, n: float, population: float) -> float:
    f = n / population
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum())
    i, ci = sizes.astype(np.float64), counts.astype(np.float64)
    with np.errstate(all="ignore"):
        v1 = float((i * f * f * (1 - f * f) ** (i - 1) * ci).sum())
        v2 = float(((1 - f) ** i * ci * (1 + f) ** i - 1).sum())
        v3 = float(((1 - f) ** i * ci).sum())
        v4 = float((i * f * (1 - f) ** (i - 1) * ci).sum())
        k = float(counts.sum()) + c1 * (v1 / v2) * (v3 / v4) ** 2

    def eq(a: float, b: float) -> tuple[Vec, tuple[float, float, float, float]]:
        h = 1e-7  # the Jacobian by central differences: Newton's method needs only a good slope
        da = [
            x - y
            for x, y in zip(_snb_eqs(k, f, c1, c2, a + h, b), _snb_eqs(k, f, c1, c2, a - h, b), strict=True)
        ]
        db = [
            x - y
            for x, y in zip(_snb_eqs(k, f, c1, c2, a, b + h), _snb_eqs(k, f, c1, c2, a, b - h), strict=True)
        ]
        return _snb_eqs(k, f, c1, c2, a, b), (
            da[0] / (2 * h),
            db[0] / (2 * h),
            da[1] / (2 * h),
            db[1] / (2 * h),
        )

    a, b = _newton(eq, list(_GRID))
    with np.errstate(all="ignore"):
        return float(k * b**a) if math.isfinite(a) and math.isfinite(b) else math.nan


def _snb_eqs(k: float, f: float, c1: float, c2: float, a: float, b: float) -> Vec:
    """The SNB model's expected classes of size 1 and 2 minus the observed ones (NaN off its domain)."""
    a, b = np.float64(a), np.float64(b)
    d = (1 - f) * (1 - b)
    g1 = k * f * (b / (1 - d)) ** a * (a * d / (1 - d) + 1) - c1
    g2 = k * a * b**a * f * f * (1 - b) / 2 * (1 - d) ** (a + 2) * (2 - (1 - a) * d) - c2
    return float(g1), float(g2)


@dataclass(frozen=True)
class Uniqueness:
    """Estimated share of the population's records that are unique (fractions of N; None: no estimate)."""

    pitman: float | None
    zayatz: float | None
    snb: float | None
    dankar: float | None
    dankar_model: str | None
    sampling_fraction: float
    sample_uniques: float

    def of(self, estimator: str) -> float | None:
        if estimator not in ESTIMATORS:
            raise InvalidParameter(f"unknown estimator '{estimator}': use one of {', '.join(ESTIMATORS)}")
        value: float | None = getattr(self, estimator)
        return value

    def to_dict(self) -> dict[str, Any]:
        return {
            "pitman": self.pitman,
            "zayatz": self.zayatz,
            "snb": self.snb,
            "dankar": self.dankar,
            "dankar_model": self.dankar_model,
            "sampling_fraction": self.sampling_fraction,
            "sample_uniques": self.sample_uniques,
        }


def check_fraction(fraction: float) -> float:
    """π must be a number in (0, 1]."""
    bad = isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating))
    if bad or not 0 < fraction <= 1:
        raise InvalidParameter(
            f"the sampling fraction is the table's share of its population, in (0, 1] (got {fraction!r}): "
            "e.g. 0.01 for a 1 % sample"
        )
    return float(fraction)


def population_uniqueness(class_sizes: np.ndarray, sampling_fraction: float) -> Uniqueness:
    """Pitman, Zayatz, SNB and Dankar's estimates from the sample's class sizes and π = n/N."""
    pi = check_fraction(sampling_fraction)
    class_sizes = np.asarray(class_sizes, dtype=np.int64)
    n = float(class_sizes.sum())
    if n == 0:
        raise InvalidParameter("the table has no unsuppressed record: there is no class to estimate from")
    sizes, counts = np.unique(class_sizes, return_counts=True)
    c1 = float(counts[sizes == 1].sum())
    population = n / pi
    if c1 == 0:
        return Uniqueness(0.0, 0.0, 0.0, 0.0, "none", pi, 0.0)

    def share(value: float) -> float | None:
        return value / population if math.isfinite(value) and value != 0 else None

    pitman = share(_pitman(sizes, counts, n, population))
    zayatz = share(_zayatz(sizes, counts, n, population))
    snb = share(_snb(sizes, counts, n, population))
    if pi <= 0.1:
        dankar, model = (pitman, "pitman") if pitman is not None else (zayatz, "zayatz")
    elif snb is not None and (zayatz is None or zayatz >= snb):
        dankar, model = snb, "snb"
    else:
        dankar, model = zayatz, "zayatz"
    return Uniqueness(pitman, zayatz, snb, dankar, model, pi, c1 / n)
