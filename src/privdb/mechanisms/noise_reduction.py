"""Laplace noise reduction: a sequence of ever less noisy releases that costs only the last one released.

Ligett, Neel, Roth, Waggoner, Wu ("Accuracy first", NeurIPS 2017), after Koufogiannis, Han, Pappas (2015,
gradual release): for ``ε_1 < ε_2 < … < ε_T`` draw the *least* noisy release first, ``v_T = x + Z_T`` with
``Z_T`` Laplace at ``ε_T``, then each noisier one from the one after it, ``v_t = v_{t+1} + W_t``, with
``W_t`` independent of everything else. Then every ``v_t`` is exactly the ε_t-Laplace release of ``x`` and,
given ``v_k``, the earlier ``v_1 … v_{k−1}`` do not depend on ``x``: releasing ``v_1, …, v_k`` (stopping by
any rule that reads only them) has ex-post privacy loss ``ε_k`` (docs/proofs/accuracy-first.md).

privdb does this exactly on an integer grid (as :mod:`privdb.mechanisms.laplace`): one grid for every step
(the grid of ``ε_T``'s Laplace mechanism), ``Z_t`` discrete Laplace of rate ``λ_t`` (``λ_t`` the rate of
ε_t's mechanism on that grid). With ``a = e^(−λ_t) > b = e^(−λ_{t+1})`` the step is

    W_t = 0                              with probability p = b(1 − a)² / (a(1 − b)²),
    W_t = discrete Laplace of rate λ_t   otherwise,

because the generating function of the discrete Laplace of rate ``λ_t`` over that of ``λ_{t+1}`` is
``p + (1 − p)·φ_{λ_t}`` (derived in the proof). ``p`` is irrational: the Bernoulli draw is exact
(:func:`privdb.mechanisms._samplers.bernoulli` against mpmath interval bounds), as are the Laplace draws.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _exact, _samplers, _validate
from privdb.mechanisms.base import PrivacyCost, as_values
from privdb.mechanisms.laplace import _GRID_LIMIT, Geometric, Laplace
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = ["NoiseReduction", "keep_probability"]


def keep_probability(noisy_rate: float, sharp_rate: float) -> _exact.Bounds:
    """Rigorous bounds of ``P(W_t = 0) = b(1 − a)² / (a(1 − b)²)``, ``a = e^(−noisy_rate)``,
    ``b = e^(−sharp_rate)``: the chance that the noisier release equals the next one."""
    lam_a, lam_b = Fraction(noisy_rate), Fraction(sharp_rate)

    def compute() -> object:
        iv = _exact._iv()
        a = iv.exp(-_exact._iv_rational(lam_a))
        b = iv.exp(-_exact._iv_rational(lam_b))
        return b * (1 - a) ** 2 / (a * (1 - b) ** 2)

    return lambda prec: _exact._with_prec(prec, compute)


class _OnGrid(Laplace):
    """ε-DP Laplace noise on a given grid (every step of a noise reduction shares one)."""

    def __init__(self, *, epsilon: float, sensitivity: float, changed: int, granularity: float,
                 rng: RandomSource | None = None) -> None:  # fmt: skip
        self._grid = granularity
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, changed=changed, rng=rng)

    def _granularity(self) -> float:
        return self._grid


class NoiseReduction:
    """Correlated Laplace releases at ``epsilons`` (increasing): ``release`` returns all ``T`` steps at once;
    releasing the first ``k`` of them costs ex-post ``ε_k`` (:meth:`cost`).

    ``integer``: integer inputs (counts) on the grid 1, the geometric mechanism's; otherwise reals on the grid
    of the last step's Laplace mechanism. ``steps[t]`` is the mechanism of step ``t`` alone (its scale, its
    intervals): each ``v_t`` is distributed exactly as its release.
    """

    def __init__(
        self,
        *,
        epsilons: Sequence[float],
        sensitivity: float,
        changed: int = 1,
        integer: bool = False,
        rng: RandomSource | None = None,
    ) -> None:
        if not epsilons:
            raise InvalidParameter("a noise reduction needs at least one ε")
        eps = [_validate.positive("epsilon", e) for e in epsilons]
        if any(b <= a for a, b in itertools.pairwise(eps)):
            raise InvalidParameter(f"the ε of a noise reduction must increase step by step, got {eps}")
        self.epsilons = tuple(eps)
        self._source = rng if rng is not None else default_source()
        self.steps: tuple[Laplace, ...]
        if integer:
            self.steps = tuple(
                Geometric(epsilon=e, sensitivity=int(sensitivity), rng=self._source) for e in eps
            )
        else:
            last = Laplace(epsilon=eps[-1], sensitivity=sensitivity, changed=changed, rng=self._source)
            self.steps = tuple(
                _OnGrid(epsilon=e, sensitivity=sensitivity, changed=changed,
                        granularity=last.granularity, rng=self._source)
                for e in eps
            )  # fmt: skip
        self.granularity = self.steps[-1].granularity
        self.rates = tuple(s.rate for s in self.steps)
        if any(b <= a for a, b in itertools.pairwise(self.rates)):
            raise InvalidParameter("the ε of a noise reduction are too close together to tell apart")

    def cost(self, k: int) -> PrivacyCost:
        """The ex-post price of releasing steps ``1 … k`` (1-based): ``ε_k``."""
        if not 1 <= k <= len(self.epsilons):
            raise InvalidParameter(f"step must be in 1..{len(self.epsilons)}, got {k}")
        return PrivacyCost(epsilon=self.epsilons[k - 1])

    def noise(self, n: int) -> NDArray[np.int64]:
        """``(T, n)`` noise in grid steps: row ``t`` is discrete Laplace of rate ``λ_t``; drawn last first."""
        t_steps = len(self.rates)
        z = np.empty((t_steps, n), dtype=np.int64)
        z[-1] = _samplers.discrete_laplace(self.rates[-1], n, self._source)
        for t in range(t_steps - 2, -1, -1):
            keep = _samplers.bernoulli(keep_probability(self.rates[t], self.rates[t + 1]), n, self._source)
            jump = _samplers.discrete_laplace(self.rates[t], n, self._source)
            z[t] = z[t + 1] + np.where(keep, 0, jump)
        return z

    def release(self, values: ArrayLike) -> NDArray[np.float64]:
        """Every step's release of ``values`` (a vector query), shape ``(T, n)``: row ``t`` is ``v_{t+1}``."""
        x = as_values(values)
        g = self.granularity
        grid = np.rint(np.clip(x / g, -_GRID_LIMIT, _GRID_LIMIT)).astype(np.int64)
        out: NDArray[np.float64] = (grid[None, :] + self.noise(x.size)).astype(np.float64) * g
        return out
