"""What every mechanism knows: its privacy cost, and for additive noise its scale and accuracy."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _validate
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = ["AdditiveNoise", "Mechanism", "PrivacyCost", "as_values"]


@dataclass(frozen=True)
class PrivacyCost:
    """The price of one release: (ε, δ)-DP, and ρ-zCDP where the mechanism has a tighter zCDP account."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None


class Mechanism(ABC):
    """A randomised algorithm with a known privacy cost. Parameters are keyword-only and validated."""

    name: ClassVar[str]

    def __init__(self, *, rng: RandomSource | None = None) -> None:
        self._source = rng if rng is not None else default_source()

    @property
    @abstractmethod
    def cost(self) -> PrivacyCost:
        """The (ε, δ) (and ρ) this mechanism spends per call to ``release``."""

    @property
    def epsilon(self) -> float:
        return self.cost.epsilon

    @property
    def delta(self) -> float:
        return self.cost.delta


def as_values(values: ArrayLike, *, name: str = "values") -> NDArray[np.float64]:
    """A 1-d float array of finite values, or an ``invalid_parameter`` error naming the problem."""
    arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if arr.ndim != 1:
        raise InvalidParameter(f"{name} must be a scalar or a 1-d array, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidParameter(f"{name} is empty; pass at least one value")
    bad = ~np.isfinite(arr)
    if bad.any():
        kind = "NaN" if np.isnan(arr).any() else "infinite"
        raise InvalidParameter(f"{name} contains {kind} entries ({int(bad.sum())}); pass finite numbers")
    return arr


class AdditiveNoise(Mechanism):
    """Output = value + noise, for noise symmetric about 0: unbiased, with a known spread."""

    @property
    @abstractmethod
    def scale(self) -> float:
        """The noise's scale parameter (Laplace b, Gaussian σ), in the values' units."""

    @abstractmethod
    def variance(self) -> float:
        """Variance of the noise."""

    def bias(self) -> float:
        """Noise is symmetric about zero: every release is unbiased."""
        return 0.0

    @abstractmethod
    def half_width(self, beta: float) -> float:
        """Smallest ``w`` with ``P(|noise| > w) ≤ β``: the release is within ``w`` of the truth w.p. 1 − β."""

    @abstractmethod
    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        """Add noise to every entry of ``values`` (one vector query) in one call."""

    def interval(self, value: float, confidence: float = 0.95) -> tuple[float, float]:
        """An interval that covers the true value with probability ``confidence`` (before seeing it)."""
        beta = 1.0 - _validate.probability("confidence", confidence, open_low=True, open_high=True)
        w = self.half_width(beta)
        return (value - w, value + w)

    def ci95(self, value: float) -> tuple[float, float]:
        """The 95% interval of DESIGN.md's result JSON."""
        return self.interval(value, 0.95)


def round_down(x: float) -> float:
    """The float just below ``x``'s rounding error: used where a privacy rate must not round up."""
    return math.nextafter(math.nextafter(x, 0.0), 0.0)


def round_up(x: float) -> float:
    """The float just above ``x``'s rounding error: used where a noise scale must not round down."""
    return math.nextafter(math.nextafter(x, math.inf), math.inf)
