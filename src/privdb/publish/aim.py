"""AIM (McKenna, Mullins, Sheldon & Miklau, VLDB 2022): an adaptive, iterative choice of marginals to measure.

The workload W is every 3-way marginal of the released columns (every k-way one when d < 3; a public,
fixed-seed sample of ``MAX_WORKLOAD`` of them when there are more), or every ``degree``-way one, or the
marginals of interest the owner lists (``--workload "a,b;c,d"``: public choices); the candidates are W's
downward closure, each weighted by w_r = Σ_{s ∈ W} |r ∩ s|. With T = 16d rounds planned and α = 0.9
(the paper's choices):

1. every 1-way marginal is measured with Gaussian noise σ₀ = √(T / (2αρ)) (times the sensitivity Δ);
2. each round t picks one candidate with the exponential mechanism at ε_t on the score
   w_r (‖M_r(x) − M_r(p̂)‖₁ − √(2/π) σ_t n_r) (sensitivity Δ max_r w_r; p̂ the current model, n_r the
   cells of r), among the candidates that keep the model under ``MAX_MODEL_MB`` × (share of ρ used so
   far), measures it with Gaussian noise σ_t, and re-fits the model (warm start);
3. annealing: when the chosen marginal moved by at most √(2/π) σ_t n_r, σ halves and ε doubles;
   when what is left of ρ would not pay two more rounds — or the next round is the ``MAX_ROUNDS``-th —
   the next round spends exactly what is left, and is the last.

Each round spends 1/(2σ_t²) + ε_t²/8 of ρ (zCDP). All noise and selections use privdb's exact samplers;
``mbi`` fits the model (post-processing); the model's marginals for scoring come from its junction tree
(model_marginals), since mbi's own out-of-model marginals compile a program per candidate and per model.
docs/proofs/synthetic.md, "AIM".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import DiscreteGaussian, RandomSource
from privdb.publish.l1 import l1_score, selector
from privdb.publish.mst import Measured, fit_model, marginal

__all__ = ["AimPlan", "aim", "aim_round", "plan", "score"]

ALPHA = 0.9  # the share of each round's ρ spent on the measurement (the rest on the selection)
ROUNDS_PER_COLUMN = 16  # T = 16 d: the initial per-round budget is ρ / T
MAX_ROUNDS = 24  # rounds after the 1-way measurements: each new clique is a new mbi model (jax compiles it)
MAX_MODEL_MB = 80.0  # the paper's cap on the junction tree's size
MAX_WORKLOAD = 128
ROUND_ITERATIONS = 100  # mirror-descent steps per round, warm-started from the previous round's model
_SLACK = 1.0 - 1e-9  # the rounds' float sums stay below ρ

Axes = tuple[int, ...]


@dataclass(frozen=True)
class AimPlan:
    """The public part of a run: the candidates with their weights, and the first round's parameters."""

    candidates: tuple[Axes, ...]
    weights: tuple[float, ...]
    sigma: float  # per unit of sensitivity
    epsilon: float


def plan(d: int, rho: float, workload: Sequence[Axes] | None = None, degree: int = 3) -> AimPlan:
    """Candidates and weights from the workload (module doc: every ``degree``-way marginal unless the owner
    names the marginals of interest), and σ₀, ε₀ (all public)."""
    if workload:
        chosen = sorted({tuple(sorted(set(s))) for s in workload})
    else:
        chosen = list(itertools.combinations(range(d), min(degree, d)))
        if len(chosen) > MAX_WORKLOAD:
            picks = np.random.default_rng(0).choice(len(chosen), MAX_WORKLOAD, replace=False)
            chosen = [chosen[i] for i in sorted(picks)]
    workload = chosen
    closure = sorted(
        {sub for s in workload for j in range(1, len(s) + 1) for sub in itertools.combinations(s, j)}
    )
    weights = tuple(float(sum(len(set(r) & set(s)) for s in workload)) for r in closure)
    rounds = ROUNDS_PER_COLUMN * d
    return AimPlan(
        tuple(closure),
        weights,
        math.sqrt(rounds / (2 * ALPHA * rho)),
        math.sqrt(8 * (1 - ALPHA) * rho / rounds),
    )


def score(exact: NDArray[np.float64], estimate: NDArray[np.float64], weight: float, std: float) -> float:
    """AIM's quality score of a candidate: its weighted L1 error under the model, less the noise's expected
    L1 error when measured at ``std`` (one unit moves it by at most ``weight`` × Δ). The difference is rounded
    once, then the product (publish/l1.py: the error bound the selection declares)."""
    return weight * l1_score(exact, estimate, math.sqrt(2 / math.pi) * std * exact.size)


def aim_round(
    exacts: Sequence[NDArray[np.float64]],
    estimates: Sequence[NDArray[np.float64]],
    weights: Sequence[float],
    sigma: float,
    epsilon: float,
    sensitivity: int,
    delta: float,
    rng: RandomSource,
) -> tuple[int, NDArray[np.float64], float]:
    """One round: the index of the candidate chosen by the exponential mechanism (ε, sensitivity Δ·max w),
    and its marginal measured with discrete Gaussian noise at ρ = 1/(2σ²) (std Δσ) with that std."""
    mech = DiscreteGaussian(rho=1 / (2 * sigma**2), delta=delta, sensitivity=sensitivity, rng=rng)
    std = float(mech.scale)
    scores = [score(x, e, w, std) for x, e, w in zip(exacts, estimates, weights, strict=True)]
    # a public clip (~±1.4e8·Δw) keeps Δ and the draw's float range on any data size; the scores' rounding
    # error is declared to the mechanism (publish/l1.py)
    em, lo, hi = selector(epsilon, sensitivity * max(weights), rng, weighted=True)
    pick = em.select(em.clamp(scores, lo, hi))
    exact = exacts[pick]
    return pick, mech.release(exact.reshape(-1)).reshape(exact.shape), std


def aim(
    mbi: Any, codes: NDArray[np.int64], names: Sequence[str], sizes: Sequence[int], rho: float,
    sensitivity: int, delta: float, rng: RandomSource, iterations: int,
    workload: Sequence[Axes] | None = None, degree: int = 3,
) -> tuple[list[Measured], Any, int]:  # fmt: skip
    """AIM's measurements of ``codes`` at total ``rho`` and the model fitted to them: (clique, noisy counts,
    noise std) each, the model, and the number of rounds after the 1-way measurements."""
    d = len(names)
    budget = rho * _SLACK
    setup = plan(d, budget, workload, degree)
    domain = mbi.Domain(tuple(names), tuple(sizes))
    sigma, epsilon = setup.sigma, setup.epsilon
    measured: list[Measured] = []
    for a in range(d):
        mech = DiscreteGaussian(rho=1 / (2 * sigma**2), delta=delta, sensitivity=sensitivity, rng=rng)
        exact = marginal(codes, sizes, (a,))
        measured.append(((names[a],), mech.release(exact), float(mech.scale)))
    used = d / (2 * sigma**2)
    model = fit_model(mbi, domain, measured, ROUND_ITERATIONS)
    # a marginal larger than the cap on its own can never be allowed: it is not even counted
    small = [i for i, r in enumerate(setup.candidates) if len(r) == 1 or _megabytes(sizes, r) <= MAX_MODEL_MB]
    exacts = {i: marginal(codes, sizes, setup.candidates[i]) for i in small}
    cliques = [c for c, _, _ in measured]
    rounds, last = 0, False
    while not last:
        rounds += 1
        used += 1 / (2 * sigma**2) + epsilon**2 / 8
        cap = MAX_MODEL_MB * used / budget
        allowed = [i for i in small if _fits(mbi, domain, cliques, setup.candidates[i], names, cap)]
        keys = [tuple(names[a] for a in setup.candidates[i]) for i in allowed]
        before = model_marginals(mbi, model, keys)
        pick, noisy, std = aim_round(
            [exacts[i] for i in allowed], before, [setup.weights[i] for i in allowed], sigma, epsilon,
            sensitivity, delta, rng,
        )  # fmt: skip
        measured.append((keys[pick], noisy, std))
        cliques.append(keys[pick])
        model = fit_model(mbi, domain, measured, ROUND_ITERATIONS, model)
        after = model_marginals(mbi, model, [keys[pick]])[0]
        if float(np.abs(after - before[pick]).sum()) <= math.sqrt(2 / math.pi) * std * after.size:
            sigma, epsilon = sigma / 2, epsilon * 2
        left = budget - used
        if left <= 0:
            break
        if left <= 2 * (1 / (2 * sigma**2) + epsilon**2 / 8) or rounds + 1 >= MAX_ROUNDS:
            sigma, epsilon, last = math.sqrt(1 / (2 * ALPHA * left)), math.sqrt(8 * (1 - ALPHA) * left), True
    if last:  # the final round, at what was left
        rounds += 1
        used += 1 / (2 * sigma**2) + epsilon**2 / 8
        allowed = [i for i in small if _fits(mbi, domain, cliques, setup.candidates[i], names, MAX_MODEL_MB)]
        keys = [tuple(names[a] for a in setup.candidates[i]) for i in allowed]
        pick, noisy, std = aim_round(
            [exacts[i] for i in allowed], model_marginals(mbi, model, keys),
            [setup.weights[i] for i in allowed], sigma, epsilon, sensitivity, delta, rng,
        )  # fmt: skip
        measured.append((keys[pick], noisy, std))
    return measured, fit_model(mbi, domain, measured, iterations, model), rounds


def _megabytes(sizes: Sequence[int], r: Axes) -> float:
    return math.prod(sizes[a] for a in r) * 8 / 2**20


def _fits(
    mbi: Any, domain: Any, cliques: list[tuple[str, ...]], r: Axes, names: Sequence[str], cap: float
) -> bool:
    clique = tuple(names[a] for a in r)
    if any(set(clique) <= set(c) for c in cliques):
        return True  # already inside the model: its size does not change
    return bool(mbi.junction_tree.hypothetical_model_size(domain, [*cliques, clique]) <= cap)


def model_marginals(mbi: Any, model: Any, cliques: Sequence[tuple[str, ...]]) -> list[NDArray[np.float64]]:
    """The model's marginal of each clique, exactly, from the marginals of its junction tree's cliques: a
    clique inside one of them is summed from it; any other from the smallest subtree joining cliques that
    cover it (p = Π μ_C / Π μ_S over a subtree, by the running-intersection property), by one NumPy
    contraction — mbi's variable elimination would compile a program per clique and per model."""
    tree, _ = mbi.junction_tree.make_junction_tree(model.domain, model.cliques)
    tops = list(tree.nodes)
    fitted = mbi.marginal_oracles.message_passing_stable(model.potentials.expand(tops), 1.0)
    tables = {c: np.asarray(fitted[c].datavector(flatten=False), dtype=np.float64) for c in tops}
    total = float(model.total)
    out = []
    for clique in cliques:
        nodes, edges = _subtree(tree, tops, clique)
        label = {a: i for i, a in enumerate(dict.fromkeys(a for c in nodes for a in c))}
        operands: list[Any] = []
        for c in nodes:
            operands += [tables[c], [label[a] for a in c]]
        for one, two in edges:
            shared = tuple(a for a in one if a in two)
            drop = tuple(i for i, a in enumerate(one) if a not in shared)
            sep = tables[one].sum(axis=drop)
            operands += [
                np.divide(1.0, sep, out=np.zeros_like(sep), where=sep > 0),
                [label[a] for a in shared],
            ]
        values = np.einsum(*operands, [label[a] for a in clique], optimize="greedy")
        out.append(np.asarray(values * total, dtype=np.float64))
    return out


def _subtree(
    tree: Any, tops: Sequence[tuple[str, ...]], clique: tuple[str, ...]
) -> tuple[list[Any], set[Any]]:
    """Junction-tree cliques covering ``clique`` and the edges joining them (a connected subtree in each
    component of the forest): an uncovered attribute joins by the shortest path to a clique holding it."""
    import networkx as nx  # type: ignore[import-untyped, unused-ignore]  # mbi's dependency: its junction tree

    nodes: list[Any] = []
    edges: set[Any] = set()
    for attribute in clique:
        if any(attribute in c for c in nodes):
            continue
        holders = [c for c in tops if attribute in c]
        paths = [nx.shortest_path(tree, s, h) for s in nodes for h in holders if nx.has_path(tree, s, h)]
        best = min(paths, key=len) if paths else [max(holders, key=lambda c: len(set(c) & set(clique)))]
        nodes += [c for c in best if c not in nodes]
        edges.update(itertools.pairwise(best))
    return nodes, edges
