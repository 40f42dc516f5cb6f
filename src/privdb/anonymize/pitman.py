"""Pitman's population-uniqueness estimate (Pitman 1996, Hoshino 2001) as ARX computes it (``ModelPitman``).

θ and α are the maximum-likelihood estimates of the sample's Pitman partition; population uniques ≈
Γ(θ+1)/Γ(θ+α)·N^α. The likelihood equations come in two forms that are equal in exact arithmetic:

* closed: digamma and trigamma functions, with ARX's own ψ (``arx_digamma``, accurate) and an exact ψ₁
  (``newton.trigamma``). ARX's ψ₁ (``arx_trigamma``) adds its asymptotic tail only once the argument has been
  shifted to 12 or more, but shifts only up to 8, so between 10⁻⁴ and 12 it returns the bare shift sum (0
  from 8 to 12). ψ₁ enters only the Jacobian, so it changes where Newton's iterates go, not what a root is;
  privdb does not copy that defect (as it keeps SNB's correct Jacobian where ARX's second row is wrong), and
  ``pitman(..., trigamma=arx_trigamma)`` reproduces ARX's iterates for the tests.
* term by term: the sums ``Σ 1/(θ+iα)`` (i < u, the number of classes), ``Σ 1/(θ+i)`` (i < n) and
  ``Σ 1/(j−α)`` (j < a class's size) and their derivatives, as ARX's "iterative" functions write them.

ARX solves the closed form from its starts; if that finds no root, it solves the term-by-term form from the
same starts; if it finds one, it evaluates the term-by-term equations there and, when either is not
within 1e-6 of zero (or not finite), solves the term-by-term form instead (whose answer, root or none, then
stands). ``pitman`` follows that flow. ARX sums the second form term by term (n terms per evaluation);
here the same sums are exact rearrangements: ψ differences (SciPy's ψ, ψ₁, accurate to a few ulps) and, where
the ψ difference would cancel (|α|·(u−1) ≤ θ/2, α near 0), a power series in α(u−1)/θ over Faulhaber's
power sums, so an evaluation costs O(distinct class sizes), not O(n).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from privdb.anonymize.newton import ACCURACY, GRID, Arr, newton, trigamma

__all__ = ["arx_digamma", "arx_trigamma", "pitman", "starts_of", "term_sums"]

_EULER = 0.57721566490153286060651209008240243104215933593992
_ZETA3 = 1.202056903159594285399738161511449990764986292
_TRIGAMMA_1 = math.pi * math.pi / 6.0
_SERIES = 60  # terms of the power series: (k+1)·2⁻ᵏ below 1e-16 at k = 60 with |ρ| ≤ 1/2
_DIRECT = 2048  # power sums up to this many terms are summed, beyond it taken from Euler–Maclaurin
_SHIFTS = 13  # ARX's ψ shifts its argument at most this many times
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66)  # B₂ … B₁₀


def arx_digamma(x: Arr) -> Arr:
    """ARX's ψ (``risk.Gamma.digamma``): below 0 by reflection, up to 10⁻⁶ a Taylor term, else shifted up to
    12 and de Moivre's expansion; ±inf and NaN give NaN, 0 gives −inf."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        if (x > 1e-6).all() and (x < np.inf).all():  # the solver's usual case: no branch but the shift
            return _de_moivre(*_shifted(x))
        negative = x < 0
        z = np.where(negative, 1.0 - x, x)
        taylor = (-_EULER - 1.0 / z) + _TRIGAMMA_1 * z
        shift, finite = np.zeros_like(z), np.isfinite(z)  # ±inf and NaN: NaN below, as the loop leaves them
        shift[finite], z[finite] = _shifted(z[finite])
        out = _de_moivre(shift, z)
        out = np.where(np.where(negative, 1.0 - x, x) <= 1e-6, taylor, out)
        out = np.where(negative, out + math.pi / np.tan(-math.pi * x), out)
        out = np.where(x == 0, -np.inf, out)
        result: Arr = np.where(np.isfinite(x), out, np.nan)
    return result


def _shifted(z: Arr) -> tuple[Arr, Arr]:
    """ARX's shift for finite z: while z < 12, subtract 1/z from the sum and add 1 to z (at most 13 times);
    the sum and the final z. Cumulative sums along each row add in the loop's order, so the bits are the
    loop's; one pass over a (values × 13) array instead of 13 passes."""
    low = z < 12.0
    if not low.any():
        return np.zeros_like(z), z
    steps = np.ones((int(low.sum()), _SHIFTS), dtype=np.float64)
    steps[:, 0] = z[low]
    path = np.cumsum(steps, axis=1)  # z, z + 1, (z + 1) + 1, …: the loop's values of z
    under = path < 12.0
    shift, shifted = np.zeros_like(z), z.copy()
    shift[low] = np.cumsum(np.where(under, -1.0 / path, 0.0), axis=1)[:, -1]
    shifted[low] = path[np.arange(len(path)), np.minimum(under.sum(axis=1), _SHIFTS - 1)]
    return shift, shifted


def _de_moivre(shift: Arr, z: Arr) -> Arr:
    """ψ(x) = shift + ln z − 1/(2z) − Σ B₂ₖ/(2k·z²ᵏ), the series as ARX nests it."""
    r = 1.0 / z
    out = shift + (np.log(z) - 0.5 * r)
    r = r * r
    result: Arr = out - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
    return result


def arx_trigamma(x: Arr) -> Arr:
    """ARX's ψ₁ (``risk.Gamma.trigamma``) with its defect: shifted up to 8 but given the asymptotic tail only
    from 12, so between 10⁻⁴ and 12 it is the shift sum alone; below 0 by reflection. Not used by privdb's
    estimate: a test aid (``pitman(..., trigamma=arx_trigamma)`` reproduces ARX's Newton path)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        negative = x < 0
        z = np.where(negative, 1.0 - x, x)
        taylor = 1.0 / (z * z) + _TRIGAMMA_1 - 2.0 * _ZETA3 * z
        shift = np.zeros_like(z)
        for _ in range(9):
            low = z < 8.0
            shift = np.where(low, shift + 1.0 / (z * z), shift)
            z = np.where(low, z + 1.0, z)
        r = 1.0 / (z * z)
        tail = 0.5 * r + (1.0 + r * (1 / 6 + r * (-1 / 30 + r * (1 / 42 + r * (-1 / 30 + r * (5 / 66)))))) / z
        out = np.where(z >= 12.0, shift + tail, shift)
        out = np.where(np.where(negative, 1.0 - x, x) <= 1e-4, taylor, out)
        reflect = math.pi / np.sin(-math.pi * x)
        out = np.where(negative, reflect * reflect - out, out)
        out = np.where(x == 0, -np.inf, out)
        result: Arr = np.where(np.isfinite(x), out, np.nan)
    return result


def _power_sums(m: int) -> Arr:
    """P_k = Σ_{i=1..m} (i/m)^k for k = 0 … ``_SERIES`` + 2: summed up to ``_DIRECT`` terms, else by
    Euler–Maclaurin (exact for this polynomial; the first omitted term is below 10⁻²⁰ for m > 2048)."""
    ks = np.arange(_SERIES + 3, dtype=np.float64)
    if m <= _DIRECT:
        q = np.arange(1, m + 1, dtype=np.float64) / m
        powers: Arr = (q[:, None] ** ks).sum(axis=0)
        return powers
    out = m / (ks + 1) + 0.5
    for j, b in enumerate(_BERNOULLI, start=1):
        r = 2 * j - 1
        falling = np.prod([ks - i for i in range(r)], axis=0)  # k!/(k−r)!, 0 once r > k
        at_zero = np.where(ks == r, falling * float(m) ** -r, 0.0)  # f⁽ʳ⁾(0) is k!/mᵏ only when r = k
        out += b / math.factorial(2 * j) * (falling * float(m) ** -r - at_zero)
    out[0] = m
    return out


def term_sums(t: Arr, a: Arr, m: int, power: Arr | None = None) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    """Σ_{i=1..m} of 1/(t+ia), i/(t+ia), 1/(t+ia)², i/(t+ia)², i²/(t+ia)² for each (t, a), without summing m
    terms: with x = t/a, by ψ(x+m+1) − ψ(x+1) and ψ₁(x+1) − ψ₁(x+m+1); where |a|·m ≤ |t|/2 (the ψ difference
    would cancel) by the series 1/(1+ρq) = Σ(−ρq)ᵏ, ρ = ma/t, q = i/m, over the power sums ``power``."""
    from scipy.special import digamma  # heavy (SciPy's special functions): only the estimators need it

    zeros = np.zeros_like(np.asarray(t, dtype=np.float64))
    if m == 0:
        return zeros, zeros, zeros, zeros, zeros
    p = _power_sums(m) if power is None else power
    with np.errstate(all="ignore"):
        series = np.abs(m * a) <= np.abs(t) / 2
        rho = np.where(series, m * a / t, 0.0)
        pw = (-rho)[:, None] ** np.arange(_SERIES + 1)
        kw = pw * np.arange(1, _SERIES + 2)
        lo, mid, hi = p[: _SERIES + 1], p[1 : _SERIES + 2], p[2 : _SERIES + 3]
        s = (pw @ lo / t, m * (pw @ mid) / t, kw @ lo / t**2, m * (kw @ mid) / t**2, m * m * (kw @ hi) / t**2)
        x = np.where(series, 1.0, t / a)
        d1 = digamma(x + m + 1) - digamma(x + 1)
        d2 = trigamma(x + 1) - trigamma(x + m + 1)
        psi = (
            d1 / a,
            (m - x * d1) / a,
            d2 / a**2,
            (d1 - x * d2) / a**2,
            (m - 2 * x * d1 + x * x * d2) / a**2,
        )
        picked = tuple(np.where(series, sv, pv) for sv, pv in zip(s, psi, strict=True))
    return picked[0], picked[1], picked[2], picked[3], picked[4]


Fn = tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]


def _closed(
    t: Arr, a: Arr, u: float, n: float, big: Arr, big_counts: Arr, trigamma: Callable[[Arr], Arr] = trigamma
) -> Fn:
    """The likelihood equations and Jacobian in ARX's closed form (ARX's ψ, the ψ₁ given: exact unless a test
    passes ARX's); a start whose α is 0 or whose α⁴ overflows stops there (Python's float power would
    raise)."""
    a = np.where((a == 0) | ~np.isfinite(a**4), np.nan, a)
    v, k, col = u - 1.0, len(t), a[:, None]
    # one call of ψ and one of ψ₁ for every argument of every start (calls cost more than the sums)
    psi = arx_digamma(np.concatenate([v + t / a + 1, t / a + 1, n + t, t + 1, (big - col).ravel(), 1 - a]))
    tri = trigamma(np.concatenate([(a + t + a * v) / a, t / a + 1, t + 1, n + t, (big - col).ravel(), 1 - a]))
    s1, s4, p_n, p_1 = psi[:k], psi[k : 2 * k], psi[2 * k : 3 * k], psi[3 * k : 4 * k]
    s2, s3, q_1, q_n = tri[:k], tri[k : 2 * k], tri[2 * k : 3 * k], tri[3 * k : 4 * k]
    p_big, q_big = psi[4 * k : -k].reshape(k, -1), tri[4 * k : -k].reshape(k, -1)
    d4 = (big_counts * (tri[-k:, None] - q_big)).sum(axis=1)
    o4 = (big_counts * (p_big - psi[-k:, None])).sum(axis=1)
    f1, f2, j1, j2, j3, j4 = _assemble(t, a, v, (s1, s2, s3, s4), p_n - p_1, q_1 - q_n, o4, d4)
    return (f1, f2), (j1, j2, j3, j4)


Num = TypeVar("Num", float, Arr)


def _assemble(
    t: Num, a: Num, v: float, s: tuple[Num, Num, Num, Num], o2: Num, d2: Num, o4: Num, d4: Num
) -> tuple[Num, Num, Num, Num, Num, Num]:
    """The equations' values and Jacobian from the ψ and ψ₁ terms: ARX's products, rounded as it rounds
    them; the same operations on floats (one start) as on arrays (many), so the same bits."""
    s1, s2, s3, s4 = s
    a2 = a * a
    d1 = (s3 - s2) / a2
    d5 = (a * s1 + t * s2 - a * s4 - t * s3) / (a2 * a)
    d3 = (a2 * v - t * t * s2 + t * t * s3 - 2 * a * t * s1 + 2 * a * t * s4) / (a2 * a2)
    o1 = (s1 - s4) / a
    o3 = (-t * s1 + a * v + t * s4) / a2
    return o1 - o2, o3 - o4, d2 - d1, -d5, -d5, -d3 - d4


def _closed_one(
    t: float,
    a: float,
    u: float,
    n: float,
    big: Arr,
    big_counts: Arr,
    trigamma: Callable[[Arr], Arr] = trigamma,
) -> tuple[float, float, float, float, float, float]:
    """``_closed`` at one point, its arithmetic on floats (the same IEEE operations in the same order, so the
    same bits) and ψ, ψ₁ in one call each; off the usual domain (α near 0 or huge) ``_closed`` itself."""
    if not 1e-75 < abs(a) < 1e75:  # α⁴ neither 0 (a float division would raise) nor inf (_closed: NaN)
        with np.errstate(all="ignore"):
            (f1, f2), (j1, j2, j3, j4) = _closed(
                np.array([t]), np.array([a]), u, n, big, big_counts, trigamma
            )
        return float(f1[0]), float(f2[0]), float(j1[0]), float(j2[0]), float(j3[0]), float(j4[0])
    v = u - 1.0
    ta = t / a
    head = np.array([v + ta + 1, ta + 1, n + t, t + 1, 1 - a])
    rest = big - a
    psi = arx_digamma(np.concatenate([head, rest]))
    tri = trigamma(np.concatenate([np.array([(a + t + a * v) / a, ta + 1, t + 1, n + t, 1 - a]), rest]))
    s1, s4, p_n, p_1, p_a = psi[:5].tolist()
    s2, s3, q_1, q_n, q_a = tri[:5].tolist()
    with np.errstate(all="ignore"):  # as _step evaluates _closed: an overflow is an inf, the try then ends
        d4 = float((big_counts * (q_a - tri[5:])).sum())
        o4 = float((big_counts * (psi[5:] - p_a)).sum())
    return _assemble(t, a, v, (s1, s2, s3, s4), p_n - p_1, q_1 - q_n, o4, d4)


def _terms(t: Arr, a: Arr, u: float, n: float, big: Arr, big_counts: Arr, power: Arr) -> Fn:
    """The same equations and Jacobian term by term (ARX's ``getMasterFunctionIterative``): sums over the
    classes i < u, the records i < n and, per class of size s > 1, j < s."""
    from scipy.special import digamma  # heavy (SciPy's special functions): only the estimators need it

    o1, o3, d1, d5, d3 = term_sums(t, a, int(u) - 1, power)
    col = a[:, None]
    with np.errstate(all="ignore"):
        o2 = digamma(n + t) - digamma(t + 1)
        d2 = trigamma(t + 1) - trigamma(n + t)
        o4 = (big_counts * (digamma(big - col) - digamma(1 - col))).sum(axis=1)
        d4 = (big_counts * (trigamma(1 - col) - trigamma(big - col))).sum(axis=1)
    return (o1 - o2, o3 - o4), (d2 - d1, -d5, -d5, -d3 - d4)


def starts_of(sizes: np.ndarray, counts: np.ndarray, n: float) -> list[tuple[float, float]]:
    """ARX's starts: the moment-style initial guess of (θ, α), then its grid."""
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
    return [(theta0, alpha0), *GRID]


def pitman(
    sizes: np.ndarray,
    counts: np.ndarray,
    n: float,
    population: float,
    *,
    trigamma: Callable[[Arr], Arr] = trigamma,
) -> float:
    """Population uniques by Pitman's model (NaN: no estimate), ARX's control flow: closed form, then the
    term-by-term form when the closed form finds no root or its root fails the term-by-term equations.
    ``trigamma`` is the closed form's ψ₁: exact; a test passes ``arx_trigamma`` to reproduce ARX's path."""
    u = float(counts.sum())
    starts, positive = starts_of(sizes, counts, n), lambda t, a: t >= 0
    big, big_counts = sizes[sizes != 1].astype(np.float64), counts[sizes != 1].astype(np.float64)
    t, a = newton(
        lambda t, a: _closed(t, a, u, n, big, big_counts, trigamma),
        starts,
        positive,
        scalar=lambda t, a: _closed_one(t, a, u, n, big, big_counts, trigamma),
        scalar_constraint=positive,  # θ ≥ 0 reads the same on floats as on arrays
    )
    power = _power_sums(int(u) - 1)

    def terms(t: Arr, a: Arr) -> Fn:
        return _terms(t, a, u, n, big, big_counts, power)

    if math.isnan(t) or math.isnan(a):
        t, a = newton(terms, starts, positive)
    else:
        (f1, f2), _ = terms(np.array([t]), np.array([a]))
        residual = np.abs(np.array([f1[0], f2[0]]))
        if not (np.all(np.isfinite(residual)) and np.all(residual <= ACCURACY)):
            t, a = newton(terms, starts, positive)
    return _result(t, a, population)


def _result(t: float, a: float, population: float) -> float:
    """ARX's ``getResult``: Γ(θ+1)/Γ(θ+α)·N^α by log-gamma and by the gamma ratio, each kept only within
    0..N (ARX's log-gamma is NaN at or below 0), the larger of the two."""
    from scipy.special import gamma, gammaln  # heavy (SciPy's special functions): only the estimators need it

    if not (math.isfinite(t) and math.isfinite(a)) or a == 0:
        return math.nan
    values = []
    with np.errstate(all="ignore"):
        if t + 1 > 0 and t + a > 0:
            values.append(float(np.exp(gammaln(t + 1) - gammaln(t + a)) * np.float64(population) ** a))
        values.append(float(gamma(t + 1) / gamma(t + a) * np.float64(population) ** a))
    valid = [v for v in values if 0 <= v <= population]
    return max(valid) if valid else math.nan
