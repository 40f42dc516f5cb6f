"""SafePub's search of the node to release (``privdb.publish.safepub``), and the lattice it reads.

From the top of the lattice, each step adds the pivot's direct predecessors to the candidates, removes the
pivot, and picks the next pivot with the exponential mechanism on scores pre-divided by their sensitivity
(``scores``). Two choices differ from ARX, for a clean proof (docs/proofs/safepub.md): the search scores the
whole input table with its own randomness, independent of the sample, at the threshold ⌈k/β⌉ (a class's
expected sampled size reaches k there); and the node returned is picked among the visited pivots by one more
exponential-mechanism draw, not by their exact best score. The search's ε_search is split evenly over the
steps and that final draw.

``search="lattice"`` replaces the walk by that final draw alone, over every node of the lattice, with all of
ε_search (the lattice's shape is public). It is the default (``"auto"``) for the classification score when
the lattice has at most ``LATTICE_NODES`` nodes: that score is flat near the top of the lattice, where the
walk's small per-step shares leave it, and one sharp draw finds the nodes that predict the target
(docs/publish.md, "Which search"). It costs one score per node (about 10 s for Adult's 6,480).

The lattice is over ``PublicHierarchy``'s: values a hierarchy does not list, and missing values (NULL, NaN),
are generalised to ``*`` at every level, so the map stays a fixed public function.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize.hierarchy import STAR, Hierarchy, ObjArray, lattice_size
from privdb.anonymize.lattice import Lattice
from privdb.mechanisms.exponential import ExponentialMechanism
from privdb.mechanisms.randomness import RandomSource
from privdb.publish.expected import CALIBRATED, QTable, calibrated_score, q_table
from privdb.publish.parameters import SafePubParameters
from privdb.publish.scores import SCORE_ERROR, ClassTarget, class_target, score

__all__ = [
    "LATTICE_MAX",
    "LATTICE_NODES",
    "SEARCHES",
    "SENSITIVITY",
    "PublicHierarchy",
    "search_kind",
    "search_lattice",
    "search_scorer",
    "walk",
    "whole_lattice_draw",
]

SEARCHES = ("auto", "walk", "lattice")
LATTICE_NODES = 10_000  # "auto" scores every node of a lattice up to this size (a public count)
LATTICE_MAX = 100_000  # an explicit "lattice" search's cap: about 1.5 ms a node on Adult, 2.5 minutes here
SENSITIVITY = 1.0  # every score is pre-divided by its sensitivity bound (scores, expected): the draws' Δ;
# each is computed within scores.SCORE_ERROR of its real value, the draws' utility_error


class PublicHierarchy(Hierarchy):
    """A public hierarchy that sends values it does not list to ``*`` at every level."""

    def __init__(self, base: Hierarchy) -> None:
        super().__init__(base.name, base.height)
        self.base = base
        self.numeric = base.numeric
        self.domain = base.domain

    def labels(self, values: Any, level: int) -> ObjArray:
        out = np.asarray(self.base.labels(values, level), dtype=object)
        out[pd.isna(out)] = STAR
        return out


def search_kind(search: str, metric: str, steps: int | None, heights: Sequence[int]) -> str:
    """``"walk"`` or ``"lattice"`` for ``search`` (module doc); from public inputs only: the score's name,
    the steps asked for and the hierarchies' heights."""
    if search != "auto":
        return search
    small = lattice_size(heights) <= LATTICE_NODES
    return "lattice" if metric == "classification" and steps is None and small else "walk"


def _share(total: float, parts: int) -> float:
    """``total / parts`` rounded down so that ``parts`` shares never add up to more than ``total``."""
    share = total / parts
    while share * parts > total:
        share = math.nextafter(share, 0.0)
    return share


def _scorer(
    lat: Lattice, metric: str, threshold: int, target: ClassTarget | None, table: QTable | None
) -> Callable[[tuple[int, ...]], float]:
    """A node's score (memoised); with a ``table`` the calibrated score (``expected``) replaces the threshold
    one."""
    cache: dict[tuple[int, ...], float] = {}

    def value(node: tuple[int, ...]) -> float:
        if node not in cache:
            cache[node] = (
                score(metric, lat, node, threshold, target)
                if table is None
                else calibrated_score(metric, lat, node, table, target)
            )
        return cache[node]

    return value


def search_lattice(
    df: pd.DataFrame, qi: Sequence[str], hierarchies: Mapping[str, Hierarchy], params: SafePubParameters
) -> Lattice:
    """The lattice of ``qi``'s public hierarchy levels over ``df`` (values a hierarchy does not list, and
    missing values, go to ``*`` at every level), as the search and the release read it. Its nodes are not
    enumerated (the search draws its own), so no size limit of the optimal search applies."""
    hier = {c: h if isinstance(h, PublicHierarchy) else PublicHierarchy(h) for c, h in hierarchies.items()}
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty table: the lattice's loss bound is 0/0
        return Lattice(
            df, qi, {c: hier[c] for c in qi}, params.k, suppression_limit=1.0, enumerate_nodes=False,
            missing_as_star=True,
        )  # fmt: skip


def search_scorer(
    lat: Lattice,
    df: pd.DataFrame,
    params: SafePubParameters,
    metric: str,
    target: str | None,
    calibrated: bool,
) -> Callable[[tuple[int, ...]], float]:
    """The search's node score (sensitivity 1): ``metric`` on ``df``, calibrated when ``calibrated`` and the
    metric has a calibrated form (``expected``), else at the threshold ⌈k/β⌉."""
    goal = class_target(lat, target, df[target].tolist()) if target is not None else None
    table = q_table(params.k, params.beta) if calibrated and metric in CALIBRATED else None
    return _scorer(lat, metric, math.ceil(params.k / params.beta), goal, table)


def walk(
    lat: Lattice, value: Callable[[tuple[int, ...]], float], steps: int, epsilon: float, rng: RandomSource
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """SafePub's walk down the lattice (module doc), ``epsilon`` split evenly over the ``steps`` and the
    final draw; returns the released node and the pivots."""
    mechanism = ExponentialMechanism(
        epsilon=_share(epsilon, steps + 1), sensitivity=SENSITIVITY, utility_error=SCORE_ERROR, rng=rng
    )
    pivot = tuple(int(h) for h in lat.heights)
    pivots = [pivot]
    candidates: dict[tuple[int, ...], float] = {pivot: value(pivot)}
    for _ in range(steps):
        for j, lv in enumerate(pivot):
            if lv > 0:
                below = (*pivot[:j], lv - 1, *pivot[j + 1 :])
                if below not in candidates:
                    candidates[below] = value(below)
        candidates.pop(pivot, None)
        if not candidates:
            break
        nodes = list(candidates)
        pivot = nodes[mechanism.select(np.array([candidates[n] for n in nodes]))]
        pivots.append(pivot)
    distinct = list(dict.fromkeys(pivots))
    chosen = distinct[mechanism.select(np.array([value(n) for n in distinct]))]
    return chosen, pivots


def whole_lattice_draw(
    lat: Lattice, value: Callable[[tuple[int, ...]], float], epsilon: float, rng: RandomSource
) -> tuple[int, ...]:
    """One exponential-mechanism draw over every node of the lattice, with all of ε_search."""
    nodes = list(itertools.product(*(range(int(h) + 1) for h in lat.heights)))
    mechanism = ExponentialMechanism(
        epsilon=epsilon, sensitivity=SENSITIVITY, utility_error=SCORE_ERROR, rng=rng
    )
    return nodes[mechanism.select(np.array([value(n) for n in nodes]))]
