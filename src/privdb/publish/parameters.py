"""SafePub's sampling probability β and uniqueness threshold k from (ε_anon, δ) (Bild et al., PoPETs 2018).

Random sampling with probability β = 1 − e^(−ε_anon) followed by a data-independent generalisation that
suppresses every class with fewer than k sampled records is (ε_anon, δ(k))-DP (Li, Qardaji, Su, ASIACCS 2012),
where, with γ = (e^ε_anon − 1 + β) / e^ε_anon,

    δ(k) = max over n ≥ ⌈k/γ − 1⌉ of  Σ_{j > ⌊nγ⌋} Bin(j; n, β).

The maximum is found by walking n upwards until the Chernoff bound e^(−n(γ ln(γ/β) − (γ − β))), which bounds
every later tail, falls to the running maximum (as ARX does). k is the smallest integer with δ(k) < δ; like
ARX (whose ``ParameterCalculation`` loop returns one more) privdb uses that k plus one, which only adds
protection and matches ARX's published values: (1.0, 1e-5) → k 62, (0.5, 1e-5) → 52, (2.0, 1e-5) → 114,
(1.0, 1e-6) → 75.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from scipy.stats import binom

from privdb.errors import InvalidParameter

__all__ = ["SafePubParameters", "delta_of_k", "parameters"]

MAX_K = 100_000
MAX_WALK = 20_000  # sample sizes one δ(k) examines at most (ln(1/δ)/rate of them, refused beyond)


@dataclass(frozen=True)
class SafePubParameters:
    """β (sampling probability), γ, and the class-size threshold k for (ε_anon, δ)."""

    epsilon_anon: float
    delta: float
    beta: float
    gamma: float
    k: int


def _beta_gamma(epsilon_anon: float) -> tuple[float, float]:
    beta = -math.expm1(-epsilon_anon)
    # (e^ε − 1 + β)/e^ε = 1 − (1 − β)·e^−ε = 1 − e^−2ε: no e^ε to overflow
    return beta, -math.expm1(-2.0 * epsilon_anon)


@lru_cache(maxsize=65536)
def _tail(n: int, epsilon_anon: float) -> float:
    """P(Bin(n, β) > ⌊nγ⌋), cached: consecutive k revisit the same n."""
    beta, gamma = _beta_gamma(epsilon_anon)
    return float(binom.sf(math.floor(n * gamma), n, beta))


def delta_of_k(k: int, epsilon_anon: float) -> float:
    """δ(k): the largest binomial tail over the sample sizes n ≥ ⌈k/γ − 1⌉ (module doc)."""
    beta, gamma = _beta_gamma(epsilon_anon)
    rate = gamma * math.log(gamma / beta) - (gamma - beta)  # Chernoff exponent per record, > 0
    n = max(math.ceil(k / gamma - 1.0), 1)
    worst = -math.inf
    for _ in range(MAX_WALK):
        worst = max(worst, _tail(n, epsilon_anon))
        if worst >= math.exp(-n * rate):
            return worst
        n += 1
    raise InvalidParameter(
        f"ε for anonymisation {epsilon_anon:g} is too small to bound δ(k) within {MAX_WALK} sample sizes; "
        "raise ε (SafePub is stated for ε from about 0.01)"
    )


@lru_cache(maxsize=256)
def parameters(epsilon_anon: float, delta: float) -> SafePubParameters:
    """β, γ and k (ARX's convention: the smallest k with δ(k) < δ, plus one)."""
    if not (math.isfinite(epsilon_anon) and epsilon_anon > 0):
        raise InvalidParameter(f"ε for anonymisation must be a positive number, got {epsilon_anon!r}")
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise InvalidParameter(f"δ must be in (0, 1), e.g. 1e-5, got {delta!r}")
    beta, gamma = _beta_gamma(epsilon_anon)
    rate = gamma * math.log(gamma / beta) - (gamma - beta)
    if not -math.log(delta) <= MAX_WALK * rate:  # the walk of delta_of_k, while δ(k) ≥ δ, is this long
        raise InvalidParameter(
            f"ε for anonymisation {epsilon_anon:g} with δ = {delta:g} needs more than {MAX_WALK} sample "
            "sizes to bound δ(k) (ε near 0, or so large that β rounds to 1); use an ε between about 0.01 "
            "and 10, or a larger δ"
        )
    # δ(k) is a maximum over n ≥ ⌈k/γ − 1⌉, a set that shrinks as k grows: non-increasing in k, so the
    # smallest k with δ(k) < δ is found by doubling and bisection (≤ 2·17 evaluations up to MAX_K)
    hi = 1
    while delta_of_k(hi, epsilon_anon) >= delta:
        if hi >= MAX_K:
            raise InvalidParameter(
                f"δ = {delta:g} needs classes of more than {MAX_K} records at ε = {epsilon_anon:g}: "
                "raise δ or ε"
            )
        hi = min(2 * hi, MAX_K + 1) if hi < MAX_K else MAX_K + 1
    lo = hi // 2  # δ(lo) ≥ δ (or lo = 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if delta_of_k(mid, epsilon_anon) >= delta:
            lo = mid
        else:
            hi = mid
    return SafePubParameters(epsilon_anon, delta, beta, gamma, hi + 1)
