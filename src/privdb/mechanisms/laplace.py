"""The Laplace mechanism, made safe for floating point, and its integer twin the geometric mechanism.

Dwork, McSherry, Nissim, Smith (2006): adding Laplace noise of scale ``Δ₁/ε`` to a query of L1 sensitivity
``Δ₁`` is ε-DP. Textbook float sampling leaks the input through the low bits of the output (Mironov 2012),
so privdb never adds a float sample to a float value. Instead (the construction of Google's library and of
OpenDP, proof in docs/proofs/laplace.md):

1. pick a power-of-two granularity ``g`` from public values only (``≈ 2^-20·min(Δ₁, scale)``);
2. round each value to the grid, ``x̃ = g·rint(x/g)``: rounding moves a coordinate by at most ``g/2``, so two
   neighbours' rounded vectors differ by at most ``Δ₁ + c·g`` in L1 when at most ``c`` coordinates differ;
3. add ``g·Z`` with ``Z`` exact discrete Laplace of rate ``λ = ε·g/(Δ₁ + c·g)`` (rounded down).

The output lies on the grid and is a function of the integer ``x̃/g + Z`` alone, so its low bits carry
nothing; the rounding is paid for through ``Δ₁ + c·g``: the noise scale grows by a factor below ``1 + 2^-20``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _samplers, _validate
from privdb.mechanisms.base import AdditiveNoise, PrivacyCost, as_values, round_down
from privdb.mechanisms.randomness import RandomSource

__all__ = ["GRID_BITS", "GRID_MAX", "GRID_MIN", "Geometric", "Laplace", "grid_for"]

GRID_BITS = 20  # the noise scale spans at least 2**20 grid steps
_GRID_LIMIT = 2.0**52  # values beyond ±2^52 grid steps are clamped (a non-expansive map: DP is kept)


# The grid's range: every released value is (an int64 number of steps) × g, so g·2^63 must stay finite and
# g must not underflow to 0. Noise of Δ or a scale beyond about 2^980 (1e295), or below 2^-1054, is refused.
GRID_MIN = 2.0**-1074
GRID_MAX = 2.0**960


def grid_for(sensitivity: float, scale: float, changed: int) -> float:
    """The power of two at or below ``min(Δ, scale) / (changed · 2^GRID_BITS)``: a public choice.

    Relative to the scale it keeps rounding invisible in the noise; relative to Δ it keeps the rounding
    allowance ``c·g`` below ``2^-20·Δ``, so the noise grows by at most that factor. A grid outside
    ``[GRID_MIN, GRID_MAX]`` (a sensitivity or scale float64 cannot carry on an exact grid) is refused.
    """
    smallest = min(sensitivity, scale) / changed
    if not (math.isfinite(smallest) and smallest > 0):
        exponent = math.inf if smallest > 0 else -math.inf
    else:
        exponent = math.floor(math.log2(smallest)) - GRID_BITS
    if not math.log2(GRID_MIN) <= exponent <= math.log2(GRID_MAX):
        raise InvalidParameter(
            f"sensitivity {sensitivity:g} with noise scale {scale:g} is beyond what float64 carries on an "
            "exact grid (sensitivities and scales between about 1e-310 and 1e295 are supported); rescale "
            "the values (e.g. thousands instead of units, or the reverse) or change epsilon"
        )
    return math.ldexp(1.0, int(exponent))


class Laplace(AdditiveNoise):
    """ε-DP noise for real-valued queries of L1 sensitivity ``sensitivity``.

    ``changed`` bounds how many coordinates of a released vector one person can change (1 for a scalar or a
    histogram under add/remove, 2 under substitution); it only sizes the rounding allowance ``c·g``. Pass the
    true bound for other vectors (a person in ``k`` groups of a grouped sum: ``k``).
    """

    name: ClassVar[str] = "laplace"

    def __init__(
        self,
        *,
        epsilon: float,
        sensitivity: float,
        changed: int = 1,
        rng: RandomSource | None = None,
    ) -> None:
        super().__init__(rng=rng)
        self._epsilon = _validate.positive("epsilon", epsilon)
        self.sensitivity = _validate.positive("sensitivity", sensitivity)
        if isinstance(changed, bool) or not isinstance(changed, int) or changed < 1:
            raise InvalidParameter(f"changed must be an integer >= 1, got {changed!r}")
        self.changed = changed
        self.granularity = self._granularity()
        grid_sensitivity = (self.sensitivity + self.changed * self.granularity) / self.granularity
        self.rate = round_down(self._epsilon / grid_sensitivity)  # λ per grid step
        if not self.rate >= _samplers.LAMBDA_MIN:
            raise InvalidParameter(
                f"epsilon {self._epsilon:g} is too small for sensitivity {self.sensitivity:g} "
                f"and {self.changed} changed coordinates: the noise would exceed 2^50 grid steps"
            )

    def _granularity(self) -> float:
        return grid_for(self.sensitivity, self.sensitivity / self._epsilon, self.changed)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self._epsilon)

    @property
    def scale(self) -> float:
        """Laplace scale ``b`` in value units: ``g/λ`` (slightly above ``Δ₁/ε``: the rounding allowance)."""
        return self.granularity / self.rate

    def variance(self) -> float:
        q = math.exp(-self.rate)
        return 2.0 * q / (1.0 - q) ** 2 * self.granularity**2

    def half_width(self, beta: float) -> float:
        beta = _validate.probability("beta", beta, open_low=True, open_high=True)
        # discrete Laplace: P(|Z| > k) = 2 q^(k+1) / (1 + q), q = e^-λ
        q_log = -self.rate
        k = math.ceil((math.log(beta) + math.log1p(math.exp(q_log)) - math.log(2.0)) / q_log) - 1
        return max(k, 0) * self.granularity

    def noise(self, n: int) -> NDArray[np.int64]:
        """``n`` noise draws in grid steps."""
        return _samplers.discrete_laplace(self.rate, n, self._source)

    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        x = as_values(values)
        steps = np.rint(np.clip(x / self.granularity, -_GRID_LIMIT, _GRID_LIMIT)).astype(np.int64)
        steps += self.noise(x.size)
        return steps.astype(np.float64) * self.granularity


class Geometric(Laplace):
    """ε-DP noise for integer-valued queries (counts): the two-sided geometric (discrete Laplace) mechanism.

    Ghosh, Roughgarden, Sundararajan (2009). Integer inputs need no rounding: the grid is 1 and the rate
    is exactly ``ε/Δ`` (rounded down), so nothing is lost to rounding.
    """

    name: ClassVar[str] = "geometric"

    def __init__(
        self,
        *,
        epsilon: float,
        sensitivity: int = 1,
        rng: RandomSource | None = None,
    ) -> None:
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
            raise InvalidParameter(
                f"sensitivity of the geometric mechanism must be an integer >= 1, got {sensitivity!r}"
            )
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, changed=1, rng=rng)
        self.rate = round_down(self._epsilon / self.sensitivity)

    def _granularity(self) -> float:
        return 1.0

    def release_int(self, values: ArrayLike) -> NDArray[np.int64]:
        """Noisy integers for integer inputs."""
        arr = np.atleast_1d(np.asarray(values))
        if arr.size == 0:
            raise InvalidParameter("values is empty; pass at least one value")
        if not np.issubdtype(arr.dtype, np.integer):
            as_float = as_values(arr)
            if not np.all(as_float == np.rint(as_float)):
                raise InvalidParameter("the geometric mechanism takes integers; use Laplace for reals")
            arr = as_float
        ints = np.clip(arr, -(2**62), 2**62).astype(np.int64)
        noisy: NDArray[np.int64] = ints + self.noise(ints.size)
        return noisy

    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        return self.release_int(values).astype(np.float64)
