"""Population uniqueness from a sample: how many of the population's records are alone in their class,
estimated from the sample's class-size histogram and the sampling fraction π = n/N, as ARX computes it.

* Pitman (1996): the sample is a draw from a Pitman (two-parameter Poisson–Dirichlet) partition; θ and α are
  the maximum-likelihood estimates (Hoshino 2001); population uniques ≈ Γ(θ+1)/Γ(θ+α)·N^α (``pitman``: ARX's
  closed-form equations with ARX's ψ and an exact ψ₁, not ARX's defective one, and its retry with the
  term-by-term form).
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
ARX. With no sample uniques every estimate is 0. The solver is ARX's (``newton``): the initial guess (SNB:
(1, 1)), then ARX's grid of start values (0, 0.33, 0.66, 0.99)², at most 1,001 evaluations per start and
10,000 in all, accepting a point where both equations are within 1e-6 of zero. Not kept from ARX: its
wall-clock limits (an estimate must not depend on the machine's speed).
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privdb.anonymize.newton import GRID, Arr, newton
from privdb.anonymize.pitman import pitman
from privdb.errors import InvalidParameter

__all__ = ["ESTIMATORS", "Uniqueness", "check_estimator", "estimate", "population_uniqueness"]

ESTIMATORS = ("pitman", "zayatz", "snb", "dankar")


def _hypergeom_one(population: int, size: np.ndarray, n: int) -> np.ndarray:
    """P(exactly one of a class's ``size`` population records is among ``n`` drawn from ``population``)."""
    from scipy.special import gammaln  # heavy (SciPy's special functions): only the estimators need it

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

    a, b = newton(eq, [(1.0, 1.0), *GRID])  # ARX's solve() starts at (1, 1)
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
        solve = _ESTIMATE[estimator]
        key = (solve, self.population, _digest(self.sizes, self.counts))
        with _LOCK:
            if key in _SHARES:
                _SHARES.move_to_end(key)
                return _SHARES[key]
        n_pop = self.population
        value = solve(self.sizes, self.counts, self.n, n_pop)
        # no estimate: not finite, 0, or outside the population (SNB's k·β^α can be negative or exceed N
        # where its equations have a root off the model's domain)
        share = value / n_pop if math.isfinite(value) and 0 < value <= n_pop else None
        with _LOCK:
            _SHARES[key] = share
            while len(_SHARES) > _REMEMBERED:
                _SHARES.popitem(last=False)  # the least recently asked
        return share


# An estimate is a pure function of the histogram and N, and a costly one (Pitman's: milliseconds, up to a
# second where its tries jitter to their 1,001 evaluations); a search asks it for thousands of histograms
# and a second search on the same table (another metric or estimator whose rule picks the same one) for the
# same ones: the shares are kept, keyed by the solver, N and a 128-bit digest of the histogram (about
# 250 bytes an entry, the 65,536 most recently asked: 16 MB at most).
_REMEMBERED = 1 << 16
_SHARES: OrderedDict[tuple[Callable[..., float], int, bytes], float | None] = OrderedDict()
_LOCK = threading.Lock()


def _digest(sizes: np.ndarray, counts: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(sizes, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(counts, dtype=np.int64).tobytes())
    return h.digest()


_ESTIMATE = {"pitman": pitman, "zayatz": _zayatz, "snb": _snb}
