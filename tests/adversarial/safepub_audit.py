"""SafePub audited on two neighbours, written once for the tests that share it: the release (fixed-node and
searched; D = m records of one value and D' = D plus one more, the target), and the whole-lattice draw
(``--search lattice``) for each score it is audited with."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.stats import binom

from conftest import ALPHA, seeded
from privdb.anonymize import TaxonomyHierarchy
from privdb.anonymize.lattice import Lattice
from privdb.audit.auditor import clopper_pearson
from privdb.publish.parameters import SafePubParameters
from privdb.publish.safepub_search import whole_lattice_draw

QI = ["a", "b"]
# two quasi-identifiers of four leaves in two pairs: a 3 × 3 lattice the audits score node by node
HIER = {
    c: TaxonomyHierarchy(c, [[f"{c}1", f"{c}12", "*"], [f"{c}2", f"{c}12", "*"],
                             [f"{c}3", f"{c}34", "*"], [f"{c}4", f"{c}34", "*"]])
    for c in QI
}  # fmt: skip
NODES = list(itertools.product(range(3), range(3)))


def audit_neighbours(
    released: Callable[[pd.DataFrame], bool],
    m: int,
    trials: int,
    p: SafePubParameters,
    *,
    epsilon: float,
    delta: float,
) -> None:
    """Run ``released`` (was the value published?) ``trials`` times on D, then on D'; assert each frequency's
    Clopper–Pearson interval holds the exact tail P(Bin(n, β) ≥ k), and that the (ε, δ) lower bound from the
    two intervals stays within (``epsilon``, ``delta``) both ways. Each interval misses its probability with
    chance ≤ ALPHA."""
    frames = [pd.DataFrame({"x": ["a"] * rows}) for rows in (m, m + 1)]
    hits = [sum(released(frame) for _ in range(trials)) for frame in frames]
    lo0, hi0 = clopper_pearson(hits[0], trials, ALPHA)
    lo1, hi1 = clopper_pearson(hits[1], trials, ALPHA)
    assert lo0 <= binom.sf(p.k - 1, m, p.beta) <= hi0
    assert lo1 <= binom.sf(p.k - 1, m + 1, p.beta) <= hi1
    assert lo1 - delta <= math.exp(epsilon) * hi0
    assert (1 - hi0) - delta <= math.exp(epsilon) * (1 - lo1)


def em_probabilities(u: NDArray[np.float64], epsilon: float) -> NDArray[np.float64]:
    """The exact exponential-mechanism distribution ∝ exp(ε·u/2) (Δ = 1) over scores ``u``."""
    w = np.exp(epsilon * (u - u.max()) / 2)
    return np.asarray(w / w.sum(), dtype=np.float64)


def lattice_draw_counts(
    lat: Lattice,
    value: Callable[[tuple[int, ...]], float],
    epsilon: float,
    nodes: Sequence[tuple[int, ...]],
    trials: int,
    seed: int,
) -> NDArray[np.int64]:
    """How often each of ``nodes`` is drawn in ``trials`` runs of ``whole_lattice_draw`` (seeded each)."""
    counts = np.zeros(len(nodes), dtype=np.int64)
    for i in range(trials):
        counts[nodes.index(whole_lattice_draw(lat, value, epsilon, seeded(seed + i)))] += 1
    return counts


def inside_intervals(
    counts: NDArray[np.int64], exact: NDArray[np.float64], trials: int, alpha: float
) -> bool:
    """Whether every node's exact probability lies in the Clopper–Pearson interval of its count."""
    intervals = [clopper_pearson(int(c), trials, alpha) for c in counts]
    return all(lo <= e <= hi for (lo, hi), e in zip(intervals, exact, strict=True))


def assert_lattice_draw_audited(
    counts: Sequence[NDArray[np.int64]],
    exact: Sequence[NDArray[np.float64]],
    trials: int,
    nodes: Sequence[tuple[int, ...]],
    bound: float,
) -> None:
    """The lattice-draw audit on D and D′: each node's frequency on each neighbour lies in its
    Clopper–Pearson interval around the exact probability, and the intervals keep P_D ≤ ``bound``·P_D′
    both ways. 2·|nodes| intervals, each missing with chance ≤ ALPHA/(2·|nodes|): false failure ≤ ALPHA."""
    alpha = ALPHA / (2 * len(nodes))
    for j, node in enumerate(nodes):
        (lo, hi), (lo2, hi2) = (clopper_pearson(int(c[j]), trials, alpha) for c in counts)
        drawn, probs = (int(c[j]) for c in counts), (f"{e[j]:.4f}" for e in exact)
        seen = f"node {node}: drawn {', '.join(map(str, drawn))} of {trials}; exact {', '.join(probs)}"
        assert lo <= exact[0][j] <= hi and lo2 <= exact[1][j] <= hi2, seen
        assert lo <= bound * hi2 and lo2 <= bound * hi, seen
