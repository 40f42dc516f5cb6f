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
ARX. With no sample uniques every estimate is 0. The solver is ARX's (``_newton``): the initial guess (SNB:
(1, 1)), then ARX's grid of start values (0, 0.33, 0.66, 0.99)², at most 1,001 evaluations per start and
10,000 in all, accepting a point where both equations are within 1e-6 of zero. Not kept from ARX: its
wall-clock limits, and the second, term-by-term form of Pitman's equations it retries with when the closed
form finds no root (where those matter, privdb may report no estimate where ARX has one).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import digamma, gammaln, polygamma

from privdb.errors import InvalidParameter

__all__ = ["ESTIMATORS", "Uniqueness", "check_estimator", "estimate", "population_uniqueness"]

ESTIMATORS = ("pitman", "zayatz", "snb", "dankar")
_ACCURACY = 1e-6
_STEPS = 1000
_TOTAL = 10_000
_GRID = [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]

Vec = tuple[float, float]
Arr = NDArray[np.float64]
Equations = Callable[[Arr, Arr], tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]]


def _newton(
    f: Equations, starts: list[Vec], constraint: Callable[[Arr, Arr], NDArray[np.bool_]] | None = None
) -> Vec:
    """A root of the two equations ``f`` (values and Jacobian), searched as ARX's solver (linearbits'
    NewtonRaphson2D with ARX's deterministic configuration) searches: the starts are tried in order; a try
    evaluates at most 1,001 times and ends at a root (returned), a non-finite value or singular Jacobian, or a
    step that leaves the ``constraint``; a try begins only while the tries before it used at most 10,000
    evaluations in all; and the last start gets one evaluation (the solver stops once its prepared starts run
    out). ARX's wall-clock limits (100 ms per try, 1 s in all) are not kept: an answer must not depend on the
    machine's speed.

    Every try runs at once as arrays, so a start that does not converge costs one vector step, not 1,000 steps
    alone; the answer is the one-try-after-another search's.
    """
    x = np.array([s[0] for s in starts], dtype=np.float64)
    y = np.array([s[1] for s in starts], dtype=np.float64)
    alive = np.ones(len(starts), dtype=bool)
    root = np.zeros(len(starts), dtype=bool)
    evaluations = np.zeros(len(starts), dtype=np.int64)
    for step in range(_STEPS + 1):
        evaluations += alive
        with np.errstate(all="ignore"):
            (f1, f2), (a, b, c, d) = f(x, y)
            finite = np.isfinite(f1) & np.isfinite(f2) & np.isfinite(a) & np.isfinite(b)
            finite &= np.isfinite(c) & np.isfinite(d)
            converged = alive & finite & (np.abs(f1) <= _ACCURACY) & (np.abs(f2) <= _ACCURACY)
            root |= converged
            det = a * d - b * c
            alive &= finite & ~converged & (det != 0)
            safe = np.where(alive, det, 1.0)
            x = np.where(alive, x - (d * f1 - b * f2) / safe, x)
            y = np.where(alive, y - (a * f2 - c * f1) / safe, y)
            alive &= np.isfinite(x) & np.isfinite(y)
            if constraint is not None:
                alive &= constraint(x, y)
        alive[-1] = False  # the last start: one evaluation
        if step == _STEPS:
            alive[:] = False  # each start: at most 1,001 evaluations
        decided, winner = _first_root(root, alive, evaluations)
        if decided:
            break
    return (float(x[winner]), float(y[winner])) if winner is not None else (math.nan, math.nan)


def _first_root(
    root: NDArray[np.bool_], alive: NDArray[np.bool_], evaluations: NDArray[np.int64]
) -> tuple[bool, int | None]:
    """Whether the tries so far settle the one-after-another search, and which try's root it returns."""
    total = 0
    for j in range(len(root)):
        if total > _TOTAL:
            return True, None
        if root[j]:
            return True, j
        if alive[j]:
            return False, None
        total += int(evaluations[j])
    return True, None


def _trigamma(x: Arr) -> Arr:
    """ψ₁(x); below 0 by the reflection ψ₁(x) = π²/sin²(πx) − ψ₁(1 − x), since SciPy's Hurwitz zeta takes time
    linear in |x| there (seconds per call once a diverging Newton iterate reaches −10⁸)."""
    x = np.asarray(x, dtype=np.float64)
    negative = x < 0
    with np.errstate(all="ignore"):
        positive: Arr = polygamma(1, np.where(negative, 1.0 - x, x))
        out: Arr = np.where(negative, (math.pi / np.sin(math.pi * x)) ** 2 - positive, positive)
    return out


def _pitman(sizes: np.ndarray, counts: np.ndarray, n: float, population: float) -> float:
    u = float(counts.sum())
    c1 = float(counts[sizes == 1].sum())
    c2 = float(counts[sizes == 2].sum()) or 1.0
    c = c1 * (c1 - 1) / c2
    # a zero denominator gives ±inf or NaN, as in ARX's Java: that start fails
    with np.errstate(all="ignore"):
        theta0 = float(
            np.float64(n * u * c - c1 * (n - 1) * (2 * u + c)) / np.float64(2 * c1 * u + c1 * c - n * c)
        )
        alpha0 = float(np.float64(theta0 * (c1 - n) + (n - 1) * c1) / np.float64(n * u))
    big, big_counts = sizes[sizes != 1].astype(np.float64), counts[sizes != 1].astype(np.float64)

    def eq(t: Arr, a: Arr) -> tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]:
        # log-likelihood derivatives of the Pitman partition (closed forms with polygamma functions); a
        # start whose α is 0 or whose α⁴ overflows stops there (Python's float power would raise)
        a = np.where((a == 0) | ~np.isfinite(a**4), np.nan, a)
        v = u - 1.0
        s1, s4 = digamma(v + t / a + 1), digamma(t / a + 1)
        s2, s3 = _trigamma((a + t + a * v) / a), _trigamma(t / a + 1)
        d1 = (s3 - s2) / a**2
        d5 = (a * s1 + t * s2 - a * s4 - t * s3) / a**3
        d3 = (a**2 * v - t * t * s2 + t * t * s3 - 2 * a * t * s1 + 2 * a * t * s4) / a**4
        o1 = (s1 - s4) / a
        o3 = (-t * s1 + a * v + t * s4) / a**2
        o2 = digamma(n + t) - digamma(t + 1)
        d2 = _trigamma(t + 1) - _trigamma(n + t)
        col = a[:, None]
        d4 = (big_counts * (_trigamma(1 - col) - _trigamma(big - col))).sum(axis=1)
        o4 = (big_counts * (digamma(big - col) - digamma(1 - col))).sum(axis=1)
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
    pop, draws = int(population), int(n)
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

    def eq(a: Arr, b: Arr) -> tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]:
        h = 1e-7  # the Jacobian by central differences: Newton's method needs only a good slope
        (p1, p2), (m1, m2) = _snb_eqs(k, f, c1, c2, a + h, b), _snb_eqs(k, f, c1, c2, a - h, b)
        (q1, q2), (n1, n2) = _snb_eqs(k, f, c1, c2, a, b + h), _snb_eqs(k, f, c1, c2, a, b - h)
        w = 2 * h
        return _snb_eqs(k, f, c1, c2, a, b), ((p1 - m1) / w, (q1 - n1) / w, (p2 - m2) / w, (q2 - n2) / w)

    a, b = _newton(eq, [(1.0, 1.0), *_GRID])  # ARX's solve() starts at (1, 1)
    with np.errstate(all="ignore"):
        return float(k * b**a) if math.isfinite(a) and math.isfinite(b) else math.nan


def _snb_eqs(k: float, f: float, c1: float, c2: float, a: Arr, b: Arr) -> tuple[Arr, Arr]:
    """The SNB model's expected classes of size 1 and 2 minus the observed ones (NaN off its domain)."""
    d = (1 - f) * (1 - b)
    g1 = k * f * (b / (1 - d)) ** a * (a * d / (1 - d) + 1) - c1
    g2 = k * a * b**a * f * f * (1 - b) / 2 * (1 - d) ** (a + 2) * (2 - (1 - a) * d) - c2
    return g1, g2


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
        value: float | None = getattr(self, check_estimator(estimator))
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


MAX_POPULATION = 2**31 - 1  # ARX counts the population N = n/π in a Java int


def check_fraction(fraction: float) -> float:
    """π must be a number in (0, 1]."""
    bad = isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.integer, np.floating))
    if bad or not 0 < fraction <= 1:
        raise InvalidParameter(
            f"the sampling fraction is the table's share of its population, in (0, 1] (got {fraction!r}): "
            "e.g. 0.01 for a 1 % sample"
        )
    return float(fraction)


def check_estimator(estimator: str) -> str:
    """``estimator`` if it names one of ``ESTIMATORS``, else a refusal listing them."""
    if estimator not in ESTIMATORS:
        raise InvalidParameter(f"unknown estimator '{estimator}': use one of {', '.join(ESTIMATORS)}")
    return estimator


def population_uniqueness(class_sizes: np.ndarray, sampling_fraction: float) -> Uniqueness:
    """Pitman, Zayatz, SNB and Dankar's estimates from the sample's class sizes and π = n/N."""
    hist = _Histogram.of(class_sizes, sampling_fraction)
    if hist.c1 == 0:
        return Uniqueness(0.0, 0.0, 0.0, 0.0, "none", hist.pi, 0.0)
    pitman, zayatz, snb = hist.share("pitman"), hist.share("zayatz"), hist.share("snb")
    dankar, model = _dankar(hist.pi, lambda: pitman, lambda: zayatz, lambda: snb)
    return Uniqueness(pitman, zayatz, snb, dankar, model, hist.pi, hist.c1 / hist.n)


def estimate(class_sizes: np.ndarray, sampling_fraction: float, estimator: str) -> float | None:
    """One estimator's share of population uniques (what a threshold check needs: the others not run)."""
    check_estimator(estimator)
    hist = _Histogram.of(class_sizes, sampling_fraction)
    if hist.c1 == 0:
        return 0.0
    if estimator != "dankar":
        return hist.share(estimator)
    return _dankar(hist.pi, *(functools.partial(hist.share, name) for name in ("pitman", "zayatz", "snb")))[0]


def _dankar(
    pi: float,
    pitman: Callable[[], float | None],
    zayatz: Callable[[], float | None],
    snb: Callable[[], float | None],
) -> tuple[float | None, str]:
    """Dankar et al.'s decision rule over lazily computed estimates (each asked at most once)."""
    if pi <= 0.1:
        value = pitman()
        return (value, "pitman") if value is not None else (zayatz(), "zayatz")
    z, b = zayatz(), snb()
    if b is not None and (z is None or z >= b):
        return b, "snb"
    return z, "zayatz"


@dataclass(frozen=True)
class _Histogram:
    """A sample's class-size histogram with its size n, sampling fraction π and population N = n/π."""

    sizes: np.ndarray
    counts: np.ndarray
    n: float
    pi: float
    c1: float
    population: int  # N = n/π rounded half up: a count of records, as ARX's population model has it

    @classmethod
    def of(cls, class_sizes: np.ndarray, sampling_fraction: float) -> _Histogram:
        pi = check_fraction(sampling_fraction)
        class_sizes = np.asarray(class_sizes, dtype=np.int64)
        n = float(class_sizes.sum())
        if n == 0:
            raise InvalidParameter("the table has no unsuppressed record: there is no class to estimate from")
        population = math.floor(n / pi + 0.5)
        if population > MAX_POPULATION:
            raise InvalidParameter(
                f"a sampling fraction of {pi:g} puts the population at {n / pi:.3g} records, more than "
                f"{MAX_POPULATION:,} (2³¹ − 1, the largest population ARX's estimators take): raise the "
                "sampling fraction"
            )
        sizes, counts = np.unique(class_sizes, return_counts=True)
        return cls(sizes, counts, n, pi, float(counts[sizes == 1].sum()), population)

    def share(self, estimator: str) -> float | None:
        n_pop = self.population
        value = _ESTIMATE[estimator](self.sizes, self.counts, self.n, n_pop)
        # no estimate: not finite, 0, or outside the population (SNB's k·β^α can be negative or exceed N
        # where its equations have a root off the model's domain)
        return value / n_pop if math.isfinite(value) and 0 < value <= n_pop else None


_ESTIMATE = {"pitman": _pitman, "zayatz": _zayatz, "snb": _snb}
