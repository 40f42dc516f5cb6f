"""MST (McKenna, Miklau & Sheldon 2021): DP synthetic data from 1-way marginals and a tree of 2-way ones.

ρ (zCDP) is split in three equal parts:

1. every 1-way marginal is measured with discrete Gaussian noise (ρ/3 shared evenly among the d columns);
2. d − 1 pairs of columns are chosen one at a time, Kruskal-style (only pairs that join two components of
   the tree built so far are candidates), each with the exponential mechanism on the L1 distance between the
   pair's true 2-way marginal and the one the 1-way model predicts (ρ/3 shared evenly: an ε₀-DP
   exponential mechanism is ε₀²/8-zCDP, Cesar & Rogers 2021);
3. the chosen pairs' 2-way marginals are measured with discrete Gaussian noise (ρ/3 shared evenly).

With compression (the default of ``privdb publish synthetic``, as in the paper), step 1's rare cells are
merged before steps 2 and 3 (``mst``).

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

from privdb.mechanisms import DiscreteGaussian, RandomSource
from privdb.publish.l1 import l1_score, selector

__all__ = ["compressed", "measure_marginal", "mst", "mst_measurements", "remap", "selection_epsilon"]

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
    rng: RandomSource, compress: bool = False,
) -> list[tuple[tuple[str, ...], NDArray[np.float64], float]]:  # fmt: skip
    """MST's measurements of ``codes`` (module doc) at total ``rho``: (clique, noisy counts, noise std) each
    (without compression: see ``mst`` for the compressed run)."""
    return mst(codes, names, sizes, rho, sensitivity, delta, rng, compress)[0]


def mst(
    codes: Codes, names: Sequence[str], sizes: Sequence[int], rho: float, sensitivity: int, delta: float,
    rng: RandomSource, compress: bool = True,
) -> tuple[list[Measured], list[list[list[int]]]]:  # fmt: skip
    """MST's measurements at total ``rho`` over the (``compress``: compressed) domains, and each column's
    groups (the original cells of each compressed cell).

    Compression (McKenna et al. 2021): the cells of a column whose noisy 1-way count is below 3σ (σ its
    noise's std, public) are merged into one cell — a function of the released 1-way counts — and that
    measurement is re-expressed on the merged cells (the merged cell's noisy count is the sum of its
    members', post-processing). The 2-way selection and measurements then run on the compressed codes.

    A pair is scored against the independence model of the noisy 1-way marginals (each clipped at 0 and
    scaled to their common noisy total): the model MST's inference finds from 1-way measurements alone."""
    d = len(names)
    out: list[Measured] = []
    groups: list[list[list[int]]] = []
    for a in range(d):
        noisy, std = measure_marginal(codes, sizes, (a,), rho / 3 / d, sensitivity, delta, rng)
        cells = compressed(noisy, std) if compress else [[c] for c in range(sizes[a])]
        groups.append(cells)
        out.append(((names[a],), np.array([noisy[g].sum() for g in cells], dtype=np.float64), std))
    if any(len(g) != s for g, s in zip(groups, sizes, strict=True)):
        codes = (
            np.stack([remap(g)[codes[:, a]] for a, g in enumerate(groups)], axis=1) if len(codes) else codes
        )
        sizes = [len(g) for g in groups]
    if d < 2:
        return out, groups
    ones = [np.maximum(noisy, 0.0) for _, noisy, _ in out]
    total = max(1.0, float(np.mean([o.sum() for o in ones])))
    probs = [o / o.sum() if o.sum() > 0 else np.full(o.shape, 1.0 / o.size) for o in ones]
    pairs = list(itertools.combinations(range(d), 2))
    errors = {
        (a, b): l1_score(marginal(codes, sizes, (a, b)), total * np.outer(probs[a], probs[b]))
        for a, b in pairs
    }
    for a, b in _spanning_tree(errors, d, rho / 3, sensitivity, rng):
        noisy, std = measure_marginal(codes, sizes, (a, b), rho / 3 / (d - 1), sensitivity, delta, rng)
        out.append(((names[a], names[b]), noisy, std))
    return out, groups


def compressed(noisy: NDArray[np.float64], std: float) -> list[list[int]]:
    """The cells kept alone (noisy count ≥ 3σ) in order, then, if two or more fell below, one merged cell
    of all of them (one below stays alone: merging it alone changes nothing)."""
    rare = [c for c in range(len(noisy)) if noisy[c] < 3 * std]
    if len(rare) < 2:
        return [[c] for c in range(len(noisy))]
    return [[c] for c in range(len(noisy)) if c not in set(rare)] + [rare]


def remap(groups: Sequence[Sequence[int]]) -> NDArray[np.int64]:
    """Original cell → compressed cell."""
    out = np.zeros(sum(len(g) for g in groups), dtype=np.int64)
    for k, members in enumerate(groups):
        out[list(members)] = k
    return out


def _spanning_tree(
    errors: dict[tuple[int, int], float], d: int, rho: float, sensitivity: int, rng: RandomSource
) -> list[tuple[int, int]]:
    """d − 1 edges, each chosen by the exponential mechanism (ε₀ from ρ/(d−1)) among the edges joining two
    components. One unit moves each score (an L1 distance to a public estimate) by at most ``sensitivity``;
    ``errors`` are :func:`privdb.publish.l1.l1_score` values (rounded once)."""
    component = list(range(d))

    def root(i: int) -> int:
        while component[i] != i:
            i = component[i]
        return i

    chosen: list[tuple[int, int]] = []
    # L1 errors grow with the rows: a public cap (~2.8e8·Δ) keeps Δ and the float range; the scores are
    # rounded once (l1_score), an error the mechanism is told of (publish/l1.py)
    em, lo, hi = selector(selection_epsilon(rho / (d - 1)), sensitivity, rng)
    for _ in range(d - 1):
        candidates = [e for e in sorted(errors) if root(e[0]) != root(e[1])]
        pick = candidates[em.select(em.clamp([errors[e] for e in candidates], lo, hi))]
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
