"""The Gaussian mechanism with analytic calibration, and the discrete Gaussian under zCDP.

* :class:`Gaussian`: (ε, δ)-DP for real-valued queries of L2 sensitivity Δ₂. σ is calibrated with the exact
  privacy curve of the Gaussian (Balle & Wang 2018, "analytic Gaussian mechanism", Theorem 8) rather than the
  classical ``sqrt(2 ln(1.25/δ))·Δ/ε`` bound, which is loose and invalid for ε > 1. As for Laplace, values are
  rounded to a public power-of-two grid and the noise is an exact discrete Gaussian on it (Canonne, Kamath,
  Steinke 2020); for one changed coordinate σ is then raised until the discrete mechanism's own exact
  privacy curve (CKS20, Theorem 7), bounded rigorously through Gaussian integrals, meets δ. For vectors
  where several coordinates change, the discrete multivariate curve has no closed form and σ is calibrated
  through zCDP instead (exact ρ, CKS20 Theorem 14; conversion in :mod:`privdb.accounting.zcdp`).
* :class:`DiscreteGaussian`: ρ-zCDP noise for integer queries, ``ρ = Δ²/(2σ²)`` (CKS20, Theorem 4).

Proofs and constants: docs/proofs/gaussian.md.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb import deadline
from privdb.accounting import zcdp
from privdb.errors import InvalidParameter
from privdb.mechanisms import _samplers, _validate
from privdb.mechanisms.base import AdditiveNoise, PrivacyCost, as_values, round_up
from privdb.mechanisms.laplace import GRID_MIN, grid_for
from privdb.mechanisms.randomness import RandomSource

__all__ = ["DiscreteGaussian", "Gaussian", "analytic_gaussian_sigma", "gaussian_delta"]


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """δ(σ) of the continuous Gaussian mechanism (Balle & Wang 2018, Theorem 8); 1 (the trivial bound)
    where float64 cannot evaluate it, which only makes a calibration choose more noise."""
    from scipy.special import log_ndtr, ndtr  # SciPy where σ is calibrated: its import is a start's largest

    if not sigma > 0.0:
        return 1.0
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    try:
        delta = float(ndtr(a - b) - math.exp(epsilon + float(log_ndtr(-a - b))))
    except OverflowError:
        return 1.0
    return delta if math.isfinite(delta) else 1.0


ROUNDS = 2200  # halvings or doublings that span every positive float64 (2^-1074 … 2^1024)
BISECTIONS = 200


class _Unrepresentable(Exception):
    """The search would leave ``(0, ceiling]``: the caller refuses with a message naming the parameters."""


def _bisect_sigma(too_small: Callable[[float], bool], start: float, ceiling: float) -> float:
    """Smallest σ in ``(0, ceiling]`` (to 1e-12 relative, rounded up) for which ``too_small(σ)`` is false.

    ``too_small`` must be monotone (true below the answer, false above). At most ``ROUNDS`` doublings,
    ``ROUNDS`` halvings and ``BISECTIONS`` bisection steps: bounded whatever the arguments; a start or a
    doubling beyond ``ceiling`` (or not finite) raises :class:`_Unrepresentable`.
    """
    if not (0.0 < start <= ceiling):
        raise _Unrepresentable
    hi = start
    for _ in range(ROUNDS):
        deadline.check()
        if not too_small(hi):
            break
        hi *= 2.0
        if not hi <= ceiling:
            raise _Unrepresentable
    else:
        raise _Unrepresentable
    lo = hi / 2.0
    for _ in range(ROUNDS):
        deadline.check()
        if too_small(lo) or lo <= 1e-300:
            break
        hi, lo = lo, lo / 2.0
    for _ in range(BISECTIONS):
        deadline.check()
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if too_small(mid):
            lo = mid
        else:
            hi = mid
    return round_up(hi)


def _refusal(epsilon: float, delta: float, sensitivity: float, why: str) -> InvalidParameter:
    return InvalidParameter(
        f"Gaussian noise for sensitivity {sensitivity:g} at epsilon {epsilon:g}, delta {delta:g} {why}; "
        "rescale the values (e.g. thousands instead of units), raise epsilon or delta, or use Laplace noise"
    )


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ with δ(σ) ≤ δ for the continuous Gaussian mechanism; refused (``invalid_parameter``)
    when that σ is not a finite float64 or exceeds ``Δ·2^31`` (noise no exact sampler can draw on a grid
    of Δ: docs/proofs/gaussian.md, "Every search ends")."""
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.probability("delta", delta, open_low=True, open_high=True)
    sensitivity = _validate.positive("sensitivity", sensitivity)
    ceiling = min(sensitivity * SIGMA_SPAN, sys.float_info.max)
    start = sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
    try:
        return _bisect_sigma(lambda s: gaussian_delta(s, epsilon, sensitivity) > delta, start, ceiling)
    except _Unrepresentable:
        raise _refusal(
            epsilon,
            delta,
            sensitivity,
            f"needs σ beyond {ceiling:g} (2^31 times the sensitivity, or float64's largest number), more "
            "than the exact samplers draw",
        ) from None


EXACT_SIGMA = 2.0**14  # DiscreteGaussian sums its exact variance and tails up to this σ (80σ terms)
STEPS_MAX = 2.0**42  # Δ/g above this: σ below Δ·2^-20, the grid of ε in the billions (refused)
SIGMA_SPAN = 2.0**31  # σ/Δ above this puts σ beyond SIGMA_MAX grid steps (the grid is at most Δ·2^-20)


def _discrete_delta_bound(sigma: float, epsilon: float, steps: int) -> float:
    """Rigorous upper bound on δ of ``x + N_Z(0, σ²)`` for integer sensitivity ``steps`` (CKS20 Thm 7).

    δ = P[Y > a] − e^ε·P[Y > b] with a = εσ²/Δ − Δ/2, b = εσ²/Δ + Δ/2; for a decreasing density the tail
    sum Σ_{y>a} lies between the integrals from ⌊a⌋+1 and from ⌊a⌋, and the normaliser is at least √(2π)σ.
    """
    from scipy.special import log_ndtr, ndtr  # SciPy where σ is calibrated (see gaussian_delta)

    a = epsilon * sigma * sigma / steps - steps / 2.0
    b = epsilon * sigma * sigma / steps + steps / 2.0
    if not (a >= 0 and math.isfinite(b)):
        return 1.0  # the trivial bound (also where float64 overflows: the search then takes more noise)
    upper = float(ndtr(-math.floor(a) / sigma))
    try:
        lower = math.exp(epsilon + float(log_ndtr(-(math.floor(b) + 1.0) / sigma)))
    except OverflowError:
        return 1.0
    return upper - lower


class Gaussian(AdditiveNoise):
    """(ε, δ)-DP noise for real-valued queries of L2 sensitivity ``sensitivity``."""

    name: ClassVar[str] = "gaussian"

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float,
        sensitivity: float,
        changed: int = 1,
        rho: float | None = None,
        rng: RandomSource | None = None,
    ) -> None:
        """Give ``epsilon`` (σ from the exact (ε, δ) curve) or ``rho`` (σ = Δ₂/√(2ρ) on the grid: ρ-zCDP,
        for answers accounted in zCDP; ε is then the conversion at ``delta``)."""
        super().__init__(rng=rng)
        if (rho is None) == (epsilon is None):
            raise InvalidParameter("give exactly one of rho= or epsilon= for the Gaussian mechanism")
        self._delta = _validate.probability("delta", delta, open_low=True, open_high=True)
        if rho is not None:
            rho = _validate.positive("rho", rho)
            epsilon = zcdp.epsilon_from_rho(rho, self._delta)
            if not 0.0 < epsilon < math.inf:
                raise InvalidParameter(
                    f"rho {rho:g} at delta {self._delta:g} converts to epsilon {epsilon:g}, which calibrates "
                    "no Gaussian noise; pass a rho between about 1e-300 and 1e300, or another delta"
                )
        assert epsilon is not None
        self._epsilon = _validate.positive("epsilon", epsilon)
        self.sensitivity = _validate.positive("sensitivity", sensitivity)
        if isinstance(changed, bool) or not isinstance(changed, int) or changed < 1:
            raise InvalidParameter(f"changed must be an integer >= 1, got {changed!r}")
        self.changed = changed
        sigma0 = analytic_gaussian_sigma(self._epsilon, self._delta, self.sensitivity)
        self.granularity = grid_for(self.sensitivity, sigma0, 1) / 2.0 ** math.ceil(math.log2(changed) / 2)
        if not self.granularity >= GRID_MIN:
            raise InvalidParameter(f"changed {changed} is too large for sensitivity {self.sensitivity:g}")
        if not self.sensitivity / self.granularity <= STEPS_MAX:  # σ below 2^-20·Δ: ε in the billions
            raise _refusal(
                self._epsilon, self._delta, self.sensitivity,
                "would be below a millionth of the sensitivity, finer than float64 calibrates",
            )  # fmt: skip
        # rounded neighbours differ by at most |d_i|/g + 1 grid steps in each changed coordinate, so by
        # at most Δ₂/g + √changed in L2 (Minkowski's inequality)
        steps = math.floor(self.sensitivity / self.granularity) + 1
        if rho is not None:
            l2_steps = self.sensitivity / self.granularity + math.sqrt(changed)
            self.sigma_steps = round_up(l2_steps / math.sqrt(2.0 * rho))
        elif changed == 1:
            start = sigma0 / self.granularity
            try:
                self.sigma_steps = _bisect_sigma(
                    lambda s: _discrete_delta_bound(s, self._epsilon, steps) > self._delta,
                    start,
                    _samplers.SIGMA_MAX,
                )
            except _Unrepresentable:
                raise self._too_noisy() from None
            l2_steps = float(steps)
        else:
            l2_steps = self.sensitivity / self.granularity + math.sqrt(changed)
            rho = zcdp.rho_from_epsilon(self._epsilon, self._delta)
            self.sigma_steps = round_up(l2_steps / math.sqrt(2.0 * rho))
        if not _samplers.SIGMA_MIN <= self.sigma_steps <= _samplers.SIGMA_MAX:
            raise self._too_noisy()
        self._rho = l2_steps**2 / (2.0 * self.sigma_steps**2)

    def _too_noisy(self) -> InvalidParameter:
        return _refusal(
            self._epsilon, self._delta, self.sensitivity,
            f"and {self.changed} changed coordinates would exceed 2^50 grid steps, more than the exact "
            "sampler draws",
        )  # fmt: skip

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self._epsilon, delta=self._delta, rho=self._rho)

    @property
    def scale(self) -> float:
        """σ in value units."""
        return self.sigma_steps * self.granularity

    def variance(self) -> float:
        """At most σ² (the discrete Gaussian's variance is below its parameter, CKS20 Prop. 19)."""
        return self.scale**2

    def half_width(self, beta: float) -> float:
        from scipy.special import ndtri  # SciPy where it is needed (see gaussian_delta)

        beta = _validate.probability("beta", beta, open_low=True, open_high=True)
        # the continuous quantile plus one grid step covers the discrete tail
        return float(self.scale * ndtri(1.0 - beta / 2.0)) + self.granularity

    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        x = as_values(values)
        steps = np.rint(np.clip(x / self.granularity, -(2.0**52), 2.0**52)).astype(np.int64)
        steps += _samplers.discrete_gaussian(self.sigma_steps, x.size, self._source)
        return steps.astype(np.float64) * self.granularity


class DiscreteGaussian(AdditiveNoise):
    """ρ-zCDP integer noise for integer queries of L2 sensitivity ``sensitivity`` (an integer).

    Give either ``rho`` or ``epsilon``; ``delta`` states the (ε, δ) the ledger is charged
    (ε is converted from ρ at that δ, or ρ chosen as the largest that meets ``epsilon`` at ``delta``).
    """

    name: ClassVar[str] = "discrete_gaussian"

    def __init__(
        self,
        *,
        delta: float,
        rho: float | None = None,
        epsilon: float | None = None,
        sensitivity: int = 1,
        rng: RandomSource | None = None,
    ) -> None:
        super().__init__(rng=rng)
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
            raise InvalidParameter(f"sensitivity must be an integer >= 1, got {sensitivity!r}")
        if (rho is None) == (epsilon is None):
            raise InvalidParameter("give exactly one of rho= or epsilon= for the discrete Gaussian")
        self._delta = _validate.probability("delta", delta, open_low=True, open_high=True)
        if rho is None:
            target = zcdp.rho_from_epsilon(_validate.positive("epsilon", epsilon), self._delta)
        else:
            target = _validate.positive("rho", rho)
        self.sensitivity = sensitivity
        try:
            self.sigma_steps = round_up(sensitivity / math.sqrt(2.0 * target))
        except (OverflowError, ZeroDivisionError):
            self.sigma_steps = math.inf
        if not _samplers.SIGMA_MIN <= self.sigma_steps <= _samplers.SIGMA_MAX:
            raise InvalidParameter(
                f"discrete Gaussian noise for sensitivity {sensitivity} at rho {target:g} would need σ "
                f"{self.sigma_steps:g}, outside what the exact sampler draws (2^-10 to 2^50); pass a rho "
                "or epsilon that gives σ in that range"
            )
        self._rho = sensitivity**2 / (2.0 * self.sigma_steps**2)
        self._epsilon = (
            float(epsilon) if epsilon is not None else zcdp.epsilon_from_rho(self._rho, self._delta)
        )

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self._epsilon, delta=self._delta, rho=self._rho)

    @property
    def rho(self) -> float:
        return self._rho

    @property
    def scale(self) -> float:
        return self.sigma_steps

    def variance(self) -> float:
        """Exact variance Σ y² p(y) (a little below σ² for small σ); σ² from ``EXACT_SIGMA`` on (an upper
        bound, CKS20 Proposition 19), so the sum stays small."""
        sigma = self.sigma_steps
        if sigma > EXACT_SIGMA:
            return sigma * sigma
        span = math.ceil(40.0 * sigma) + 1
        y = np.arange(-span, span + 1, dtype=np.float64)
        weights = np.exp(-(y**2) / (2.0 * sigma * sigma))
        return float((y**2 * weights).sum() / weights.sum())

    def half_width(self, beta: float) -> float:
        """Smallest integer ``k`` with ``P(|Y| > k) ≤ β``, from the exact probabilities."""
        beta = _validate.probability("beta", beta, open_low=True, open_high=True)
        sigma = self.sigma_steps
        if sigma > EXACT_SIGMA:  # σ²-sub-Gaussian: P(|Y| > k) ≤ 2·exp(−k²/2σ²) (CKS20, section 2)
            return float(math.ceil(sigma * math.sqrt(2.0 * math.log(2.0 / beta))))
        span = math.ceil(40.0 * sigma) + 1
        y = np.arange(0, span + 1, dtype=np.float64)
        weights = np.exp(-(y**2) / (2.0 * sigma * sigma))
        total = 2.0 * weights.sum() - weights[0]
        outside = 2.0 * (total / 2.0 + weights[0] / 2.0 - np.cumsum(weights)) / total  # P(|Y| > k)
        return float(np.argmax(outside <= beta))

    def release_int(self, values: ArrayLike) -> NDArray[np.int64]:
        x = as_values(values)
        if not np.all(x == np.rint(x)):
            raise InvalidParameter("the discrete Gaussian takes integers; use Gaussian for reals")
        ints = np.clip(x, -(2.0**62), 2.0**62).astype(np.int64)
        return ints + _samplers.discrete_gaussian(self.sigma_steps, ints.size, self._source)

    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        return self.release_int(values).astype(np.float64)
