"""Noisy marginals over public domains, made consistent and non-negative by least squares (post-processing).

A *measurement* is a linear query of the data's contingency table x (one cell per combination of the public
domains of the columns released): a marginal over a subset of columns (x summed over the others), or a level
of a hierarchy over one numeric column (blocks of adjacent bins summed: Hay et al. 2010). Each is released
once with integer noise (geometric, or discrete Gaussian), which is all the privacy cost; everything after is
post-processing of the released values and the public domains.

**Consistency.** The released answers are marginals of one non-negative table x⁺ ≥ 0 chosen to minimise
Σ_j w_j ‖A_j x − y_j‖² (w_j = 1/variance of measurement j's noise) by accelerated projected gradient (FISTA).
Whatever the number of iterations, the answers are then exactly consistent (every shared sub-marginal agrees:
they are sums of one table) and non-negative; the iterations only bring them closer to the least-squares fit.

**Intervals.** The unconstrained weighted least-squares estimate P·y of each measurement is linear in y, and
P·A x = A x (P projects onto the consistent marginals), so its error P·noise does not depend on the data: its
distribution is simulated from the public noise laws, and each cell's 95% interval is that estimate ± the
95th percentile of |error| pooled over the measurement's cells (all cells of one measurement have the same
error law by the symmetry of the domain), clipped at 0. It covers the true count with probability ≥ 95% per
cell (docs/proofs/histograms.md); the point estimate is the non-negative consistent one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from privdb.accounting import zcdp
from privdb.errors import InvalidParameter
from privdb.mechanisms import DiscreteGaussian, Geometric, RandomSource
from privdb.mechanisms.base import AdditiveNoise

__all__ = ["MAX_CELLS", "Measured", "Measurement", "consistent", "measure"]

F = NDArray[np.float64]
MAX_CELLS = 2_000_000  # cells of the table the measurements are marginals of
_ITERATIONS = 400
_SIMULATIONS = 200


@dataclass(frozen=True)
class Measurement:
    """A linear query of the contingency table: summed over every axis not in ``axes`` (sorted); with
    ``block`` > 1 (one axis only) adjacent bins are summed in blocks of that size (a hierarchy level). Every
    method takes ``nb`` leading batch axes (simulations) before the table's."""

    axes: tuple[int, ...]
    block: int = 1

    def apply(self, x: F, nb: int = 0) -> F:
        other = tuple(nb + i for i in range(x.ndim - nb) if i not in self.axes)
        y = x.sum(axis=other) if other else x
        if self.block > 1:
            y = y.reshape(*y.shape[:-1], y.shape[-1] // self.block, self.block).sum(axis=-1)
        return np.asarray(y, dtype=np.float64)

    def adjoint(self, y: F, shape: tuple[int, ...], nb: int = 0) -> F:
        """Aᵀy: each measured cell's value spread back over the table cells it sums."""
        if self.block > 1:
            y = np.repeat(y, self.block, axis=-1)
        view = list(y.shape[:nb]) + [1] * len(shape)
        for k, a in enumerate(self.axes):
            view[nb + a] = y.shape[nb + k]
        return np.broadcast_to(y.reshape(view), (*y.shape[:nb], *shape)).astype(np.float64)

    def fan_in(self, shape: tuple[int, ...]) -> int:
        """How many table cells one measured cell sums (the operator's squared norm per cell)."""
        return math.prod(s for i, s in enumerate(shape) if i not in self.axes) * self.block


@dataclass(frozen=True)
class Measured:
    """What was released of one measurement, and its noise (a public law)."""

    measurement: Measurement
    noisy: F
    mechanism: AdditiveNoise


def mechanisms(
    count: int, epsilon: float, delta: float, sensitivity: int, noise: str, rng: RandomSource | None
) -> list[AdditiveNoise]:
    """One mechanism per measurement: ε split evenly (geometric: each measurement changes by at most
    ``sensitivity`` in L1 when one unit comes or goes), or for ``gaussian`` ρ from (ε, δ) split evenly (each
    measurement's L2 sensitivity is at most its L1 one)."""
    if noise == "laplace":
        return [Geometric(epsilon=epsilon / count, sensitivity=sensitivity, rng=rng) for _ in range(count)]
    if noise == "gaussian":
        if not 0 < delta < 1:
            raise InvalidParameter("gaussian noise needs --delta in (0, 1), e.g. --delta 1e-6")
        rho = zcdp.rho_from_epsilon(epsilon, delta) / count
        return [
            DiscreteGaussian(rho=rho, delta=delta, sensitivity=sensitivity, rng=rng) for _ in range(count)
        ]
    raise InvalidParameter(f"noise must be laplace or gaussian, not {noise!r}")


def measure(table: F, measurements: Sequence[Measurement], mechs: Sequence[AdditiveNoise]) -> list[Measured]:
    """Release every measurement of the (private) ``table`` once, with its mechanism."""
    out = []
    for m, mech in zip(measurements, mechs, strict=True):
        exact = m.apply(table)
        out.append(Measured(m, mech.release(exact.reshape(-1)).reshape(exact.shape), mech))
    return out


def _weights(measured: Sequence[Measured]) -> list[float]:
    return [1.0 / max(m.mechanism.variance(), 1e-12) for m in measured]


def _normal(measured: Sequence[Measured], x: F, shape: tuple[int, ...], nb: int) -> F:
    """Σ_j w_j A_jᵀ A_j x."""
    out = np.zeros_like(x)
    for w, m in zip(_weights(measured), measured, strict=True):
        out += w * m.measurement.adjoint(m.measurement.apply(x, nb), shape, nb)
    return out


def _least_squares(measured: Sequence[Measured], ys: Sequence[F], shape: tuple[int, ...], nb: int) -> F:
    """The minimum-norm x of argmin Σ w_j ‖A_j x − y_j‖², by conjugate gradients on the normal equations
    from x = 0 (which stays in the row space). Marginal operators have few distinct eigenvalues (one per
    subset of the columns, or per hierarchy level), so CG reaches the exact solution in that many steps;
    it stops when the residual is 1e-12 of the right-hand side's."""
    axes = tuple(range(nb, nb + len(shape)))
    b = np.zeros((*ys[0].shape[:nb], *shape))
    for w, m, y in zip(_weights(measured), measured, ys, strict=True):
        b += w * m.measurement.adjoint(y, shape, nb)
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = np.sum(r * r, axis=axes, keepdims=True)
    stop = 1e-24 * np.maximum(rr, 1e-300)
    for _ in range(1_000):
        if np.all(rr <= stop):
            break
        q = _normal(measured, p, shape, nb)
        pq = np.sum(p * q, axis=axes, keepdims=True)
        alpha = np.where(pq > 0, rr / np.where(pq > 0, pq, 1.0), 0.0)
        x += alpha * p
        r -= alpha * q
        rr_next = np.sum(r * r, axis=axes, keepdims=True)
        p = r + np.where(rr > 0, rr_next / np.where(rr > 0, rr, 1.0), 0.0) * p
        rr = rr_next
    return x


def _non_negative(
    measured: Sequence[Measured], ys: Sequence[F], start: F, shape: tuple[int, ...], nb: int = 0
) -> F:
    """argmin Σ w_j ‖A_j x − y_j‖² over x ≥ 0, approximately: accelerated projected gradient (FISTA) from
    ``start`` clipped at 0, a fixed number of steps. Its marginals are consistent and non-negative at any
    step; the steps bring them closer to the fit."""
    weights = _weights(measured)
    lipschitz = sum(w * m.measurement.fan_in(shape) for w, m in zip(weights, measured, strict=True))
    b = np.zeros((*ys[0].shape[:nb], *shape))
    for w, m, y in zip(weights, measured, ys, strict=True):
        b += w * m.measurement.adjoint(y, shape, nb)
    x = np.maximum(start, 0.0)
    z, t = x.copy(), 1.0
    for _ in range(_ITERATIONS):
        new = np.maximum(z - (_normal(measured, z, shape, nb) - b) / lipschitz, 0.0)
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        z = new + ((t - 1) / t_next) * (new - x)
        x, t = new, t_next
    return x


def estimate(measured: Sequence[Measured], ys: Sequence[F], shape: tuple[int, ...], nb: int = 0) -> F:
    """The released table: the least-squares fit, then the non-negative one from it (``nb`` batch axes)."""
    return _non_negative(measured, ys, _least_squares(measured, ys, shape, nb), shape, nb)


def consistent(
    measured: Sequence[Measured], shape: tuple[int, ...], rng: np.random.Generator | None = None
) -> list[tuple[F, F, F]]:
    """Per measurement: (consistent non-negative counts, 95% interval low, high) — module doc."""
    if math.prod(shape) > MAX_CELLS:
        raise InvalidParameter(
            f"these columns' domains make {math.prod(shape):,} cells (at most {MAX_CELLS:,}); release fewer "
            "or smaller columns together, or coarser bins"
        )
    ys = [m.noisy for m in measured]
    linear = _least_squares(measured, ys, shape, 0)
    table = _non_negative(measured, ys, linear, shape)
    draws = rng or np.random.default_rng()  # simulates public noise laws: no secret is involved
    sims = [_simulate(m.mechanism, (_SIMULATIONS, *m.noisy.shape), draws) for m in measured]
    errors = _least_squares(measured, sims, shape, 1)
    out = []
    for m in measured:
        center = m.measurement.apply(linear)
        err = m.measurement.apply(errors, 1)
        half = float(np.quantile(np.abs(err), 0.95)) if err.size else 0.0
        out.append(
            (m.measurement.apply(table), np.maximum(center - half, 0.0), np.maximum(center + half, 0.0))
        )
    return out


def _simulate(mech: AdditiveNoise, shape: tuple[int, ...], draws: np.random.Generator) -> F:
    """Draws of ``mech``'s noise law: the geometric as a difference of geometrics, the discrete Gaussian by
    its normal approximation (for the interval widths only; the release itself is exact)."""
    if isinstance(mech, Geometric):
        p = 1.0 - math.exp(-mech.rate)
        return (draws.geometric(p, shape) - draws.geometric(p, shape)).astype(np.float64)
    return draws.normal(0.0, mech.scale, shape)
