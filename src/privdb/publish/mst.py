"""MST (McKenna, Miklau & Sheldon 2021): DP synthetic data from 1-way marginals and a tree of 2-way ones.

ρ (zCDP) is split in three equal parts:

1. every 1-way marginal is measured with discrete Gaussian noise (ρ/3 shared evenly among the d columns);
2. d − 1 pairs of columns are chosen one at a time, Kruskal-style (only pairs that join two components of
   the tree built so far are candidates), each with the exponential mechanism on the L1 distance between the
   pair's true 2-way marginal and the one the 1-way model predicts (ρ/3 shared evenly: an ε₀-DP
   exponential mechanism is ε₀²/8-zCDP, Cesar & Rogers 2021);
3. the chosen pairs' 2-way marginals are measured with discrete Gaussian noise (ρ/3 shared evenly).

The graphical model that best fits all the noisy measurements (``mbi``'s mirror descent) is post-processing,
as is sampling rows from it. docs/proofs/synthetic.md.

All noise and selections use privdb's exact samplers; ``mbi`` only estimates the model.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import DiscreteGaussian, ExponentialMechanism, RandomSource

__all__ = ["measure_marginal", "mst_measurements", "selection_epsilon"]

Codes = NDArray[np.int64]
Measured = tuple[tuple[str, ...], NDArray[np.float64], float]  # (clique, noisy counts, noise std)


def marginal(codes: Codes, sizes: Sequence[int], axes: Sequence[int]) -> NDArray[np.float64]:
    """The exact count of every cell of the marginal on ``axes`` (codes: one row per unit, in-domain)."""
    shape = tuple(sizes[a] for a in axes)
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in axes), shape) if len(codes) else np.zeros(0, int)
    return np.bincount(flat, minlength=math.prod(shape)).astype(np.float64).reshape(shape)


def measure_marginal(
    codes: Codes, sizes: Sequence[int], axes: Sequence[int], rho: float, sensitivity: int,
    delta: float, rng: RandomSource,
) -> tuple[NDArray[np.float64], float]:  # fmt: skip
    """One marginal released with discrete Gaussian noise at ``rho`` (its L2 sensitivity ≤ ``sensitivity``):
    the noisy counts and the noise's standard deviation."""
    mech = DiscreteGaussian(rho=rho, delta=delta, sensitivity=sensitivity, rng=rng)
    exact = marginal(codes, sizes, axes)
    return mech.release(exact.reshape(-1)).reshape(exact.shape), float(mech.scale)


def selection_epsilon(rho: float) -> float:
    """The ε₀ of an exponential mechanism that is ``rho``-zCDP (ε₀²/8 = ρ)."""
    return math.sqrt(8.0 * rho)


def mst_measurements(
    codes: Codes, names: Sequence[str], sizes: Sequence[int], rho: float, sensitivity: int, delta: float,
    rng: RandomSource,
) -> list[tuple[tuple[str, ...], NDArray[np.float64], float]]:  # fmt: skip
    """MST's measurements of ``codes`` (module doc) at total ``rho``: (clique, noisy counts, noise std) each.

    A pair is scored against the independence model of the noisy 1-way marginals (each clipped at 0 and
    scaled to their common noisy total): the model MST's inference finds from 1-way measurements alone."""
    d = len(names)
    out: list[tuple[tuple[str, ...], NDArray[np.float64], float]] = []
    for a in range(d):
        noisy, std = measure_marginal(codes, sizes, (a,), rho / 3 / d, sensitivity, delta, rng)
        out.append(((names[a],), noisy, std))
    if d < 2:
        return out
    ones = [np.maximum(noisy, 0.0) for _, noisy, _ in out]
    total = max(1.0, float(np.mean([o.sum() for o in ones])))
    probs = [o / o.sum() if o.sum() > 0 else np.full(o.shape, 1.0 / o.size) for o in ones]
    pairs = list(itertools.combinations(range(d), 2))
    errors = {
        (a, b): float(np.abs(marginal(codes, sizes, (a, b)) - total * np.outer(probs[a], probs[b])).sum())
        for a, b in pairs
    }
    for a, b in _spanning_tree(errors, d, rho / 3, sensitivity, rng):
        noisy, std = measure_marginal(codes, sizes, (a, b), rho / 3 / (d - 1), sensitivity, delta, rng)
        out.append(((names[a], names[b]), noisy, std))
    return out


def _spanning_tree(
    errors: dict[tuple[int, int], float], d: int, rho: float, sensitivity: int, rng: RandomSource
) -> list[tuple[int, int]]:
    """d − 1 edges, each chosen by the exponential mechanism (ε₀ from ρ/(d−1)) among the edges joining two
    components. One unit moves each score (an L1 distance to a public estimate) by at most ``sensitivity``."""
    component = list(range(d))

    def root(i: int) -> int:
        while component[i] != i:
            i = component[i]
        return i

    chosen: list[tuple[int, int]] = []
    em = ExponentialMechanism(epsilon=selection_epsilon(rho / (d - 1)), sensitivity=sensitivity, rng=rng)
    for _ in range(d - 1):
        candidates = [e for e in sorted(errors) if root(e[0]) != root(e[1])]
        pick = candidates[em.select([errors[e] for e in candidates])]
        chosen.append(pick)
        component[root(pick[0])] = root(pick[1])
    return chosen


def fit_model(mbi: Any, domain: Any, measured: Sequence[Measured], iterations: int, start: Any = None) -> Any:
    """The graphical model that best fits the noisy marginals (mbi's mirror descent with its numerically
    stable message passing, which compiles faster than its default here; warm-started from ``start``, an
    earlier model, as AIM's rounds are; post-processing). Used by MST and AIM alike."""
    measurements = [
        mbi.LinearMeasurement(np.asarray(noisy, dtype=np.float64).reshape(-1), clique, stddev=std)
        for clique, noisy, std in measured
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_stable)
        return estimator.estimate(domain, measurements, iters=iterations, warm_start=start)
