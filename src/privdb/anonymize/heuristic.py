"""Heuristic full-domain search for lattices too large to search optimally, under a time budget.

Both walk the same nodes as ``lattice.Lattice`` (one level per quasi-identifier) and score them with its
``evaluate`` (the chosen metric, suppressed records included), without enumerating the lattice:

* ``lightning`` (Prasser, Bild, Eicher, Kohlmayer, Kuhn, "Lightning: Utility-Driven Anonymization of
  High-Dimensional Data", Transactions on Data Privacy 9(2), 2016): best-first search upwards from the
  bottom node, a priority queue ordered by the metric; every ``Σ heights``-th step is instead a greedy
  depth-first climb without backtracking (always to the best successor), which reaches anonymous nodes
  early. A node whose lower bound (its loss without suppression, which only grows upwards) is no better
  than the best anonymous node found is not expanded. When the queue empties the result is optimal.
* ``lightning-top-down`` (ARX's "best-effort top-down", ``BEST_EFFORT_TOP_DOWN``): best-first search down
  from the top node by the metric, each popped node's predecessors evaluated and queued, no bound pruning
  and no depth-first climbs; it stops when the budget is spent or the queue is empty (then optimal).
* ``genetic`` (ARX 3.9's genetic algorithm, after Wirth et al.): two sub-populations of ``d + size``
  nodes, the first seeded with the "triangle" (the first i quasi-identifiers at the top, the rest at the
  bottom), the rest at random; each generation keeps an elite, breeds children by uniform crossover of
  parents drawn in proportion to their fitness (1 − the loss scaled to the population's range), and fills
  the rest with mutants (up to ⌈p·d⌉ levels redrawn); every ``interval`` generations the fittest move
  between the sub-populations. Seeded: the same seed and budget give the same node.

The time limit is checked after every evaluation. If it runs out before any anonymous node was found, the
search finishes with one greedy climb from the best node seen (at most Σ heights evaluations), so a result
is always returned (the top node, ``*`` everywhere, is anonymous whenever any node is).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np

from privdb.anonymize.lattice import Lattice, NodeResult
from privdb.errors import InvalidParameter

__all__ = ["SEARCHES", "Budget", "Walk", "genetic", "lightning", "lightning_top_down"]

SEARCHES = ("optimal", "lightning", "lightning-top-down", "genetic")
Levels = tuple[int, ...]


@dataclass
class Budget:
    """When a heuristic search must stop: seconds of wall-clock time and/or a number of evaluations."""

    seconds: float | None = 10.0
    evaluations: int | None = None
    started: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        if self.seconds is not None and not (math.isfinite(self.seconds) and self.seconds > 0):
            raise InvalidParameter(f"time_limit is a number of seconds above 0 (got {self.seconds!r})")
        if self.evaluations is not None and self.evaluations < 1:
            raise InvalidParameter(f"max_evaluations is at least 1 (got {self.evaluations!r})")


class Walk:
    """Evaluated nodes of a lattice (memoised by levels), the best anonymous one, and the budget."""

    def __init__(self, lattice: Lattice, budget: Budget) -> None:
        self.lat = lattice
        self.budget = budget
        self.seen: dict[Levels, NodeResult] = {}
        self.best: NodeResult | None = None
        self.top = tuple(int(h) for h in lattice.heights)

    def node(self, levels: Levels) -> NodeResult:
        res = self.seen.get(levels)
        if res is None:
            res = self.lat.evaluate(levels)[0]
            self.seen[levels] = res
            if res.anonymous and (self.best is None or res.value < self.best.value):
                self.best = res
        return res

    def spent(self) -> bool:
        b = self.budget
        over_time = b.seconds is not None and time.perf_counter() - b.started >= b.seconds
        return over_time or (b.evaluations is not None and len(self.seen) >= b.evaluations)

    def successors(self, levels: Levels) -> list[Levels]:
        return [(*levels[:j], v + 1, *levels[j + 1 :]) for j, v in enumerate(levels) if v < self.top[j]]

    def predecessors(self, levels: Levels) -> list[Levels]:
        return [(*levels[:j], v - 1, *levels[j + 1 :]) for j, v in enumerate(levels) if v > 0]

    def worse_than_best(self, res: NodeResult) -> bool:
        """Whether nothing at or above ``res`` can beat the best anonymous node (the bound only grows)."""
        return self.best is not None and res.levels != self.best.levels and res.bound >= self.best.value

    def climb(self, levels: Levels) -> Levels | None:
        """Greedy steps up, each to the best successor, until an anonymous node (ignores the budget)."""
        while not self.node(levels).anonymous:
            ups = self.successors(levels)
            if not ups:
                return None
            levels = min(ups, key=lambda s: self.node(s).value)
        return levels

    def result(self) -> NodeResult:
        """The best anonymous node, after a last climb if the budget ran out before one was found."""
        if self.best is None and self.seen:
            start = min(self.seen.values(), key=lambda r: r.value).levels
            self.climb(start)
        if self.best is None:
            raise InvalidParameter(
                "no generalisation satisfies the privacy model within the suppression limit, not even '*' "
                "everywhere: relax the privacy model (lower k or l, raise t, β, δ or the risk thresholds) "
                "or raise suppression_limit"
            )
        return self.best


def lightning(lattice: Lattice, budget: Budget) -> tuple[NodeResult, bool]:
    """Lightning's node and whether the search finished (then the node is optimal)."""
    walk = Walk(lattice, budget)
    bottom: Levels = tuple(0 for _ in walk.top)
    stepping = max(sum(walk.top), 1)
    expanded: set[Levels] = set()
    queue: list[tuple[float, int, Levels]] = []
    tick = 0

    def push(levels: Levels) -> None:
        nonlocal tick
        heapq.heappush(queue, (walk.node(levels).value, tick, levels))
        tick += 1

    def expand(levels: Levels) -> Levels | None:
        """Evaluate and queue the successors; return the best of them (None if the budget ran out)."""
        chosen: Levels | None = None
        for up in walk.successors(levels):
            if up in expanded:
                continue
            push(up)
            if chosen is None or walk.node(up).value < walk.node(chosen).value:
                chosen = up
            if walk.spent():
                return None
        expanded.add(levels)
        return chosen

    push(bottom)
    step = 0
    while queue and not walk.spent():
        levels = heapq.heappop(queue)[2]
        if levels in expanded or walk.worse_than_best(walk.node(levels)):
            continue
        step += 1
        if step % stepping:
            expand(levels)
            continue
        nxt: Levels | None = levels  # depth-first: climb to the best successor until none is left
        while nxt is not None and not walk.spent():
            nxt = expand(nxt)
    finished = not queue
    return walk.result(), finished


def lightning_top_down(lattice: Lattice, budget: Budget) -> tuple[NodeResult, bool]:
    """The top-down search's node and whether it finished (then the node is optimal)."""
    walk = Walk(lattice, budget)
    expanded: set[Levels] = set()
    queue: list[tuple[float, int, Levels]] = [(walk.node(walk.top).value, 0, walk.top)]
    tick = 1
    while queue and not walk.spent():
        levels = heapq.heappop(queue)[2]
        if levels in expanded:
            continue
        for down in walk.predecessors(levels):
            if down not in expanded:
                heapq.heappush(queue, (walk.node(down).value, tick, down))
                tick += 1
            if walk.spent():
                break
        else:
            expanded.add(levels)
    return walk.result(), not queue


def genetic(
    lattice: Lattice,
    budget: Budget,
    *,
    seed: int = 0,
    size: int = 100,
    generations: int = 50,
    elite: float = 0.2,
    crossover: float = 0.2,
    production: float = 0.2,
    mutation: float = 0.2,
    immigration: float = 0.2,
    interval: int = 10,
) -> NodeResult:
    """The genetic search's best anonymous node (ARX's defaults; ``seed`` makes it reproducible)."""
    walk = Walk(lattice, budget)
    rng = np.random.default_rng(seed)
    d = len(walk.top)
    top = np.array(walk.top, dtype=np.int64)
    pop_size = d + size

    def random_levels() -> Levels:
        return tuple(int(x) for x in np.rint(rng.random(d) * top))

    triangle = [tuple(int(top[j]) if j <= i else 0 for j in range(d)) for i in range(d)]
    pops: list[list[Levels]] = [
        triangle + [random_levels() for _ in range(size)],
        [random_levels() for _ in range(pop_size)],
    ]
    for pop in pops:
        for ind in pop:
            walk.node(ind)
            if walk.spent():
                return walk.result()

    def ranked(pop: list[Levels]) -> list[Levels]:
        return sorted(pop, key=lambda s: walk.node(s).value)

    def parents(pop: list[Levels], count: int, among: int) -> list[Levels]:
        pool = pop[:among]
        loss = np.array([walk.node(s).value for s in pool])
        spread = loss.max() - loss.min()
        fit = 1.0 - (loss - loss.min()) / spread if spread > 0 else np.ones(len(pool))
        p = fit / fit.sum() if fit.sum() > 0 else np.full(len(pool), 1 / len(pool))
        return [pool[int(i)] for i in rng.choice(len(pool), size=count, p=p)]

    n_cross = math.ceil(crossover * pop_size)
    n_elite = math.ceil(elite * pop_size)
    n_prod = max(math.ceil(production * pop_size), 1)
    n_move = int(immigration * pop_size)
    max_mut = math.ceil(mutation * d)
    for gen in range(generations):
        pops = [ranked(p) for p in pops]
        if gen % interval == 0 and n_move:
            a, b = pops
            pops = [ranked(a[: pop_size - n_move] + b[:n_move]), ranked(b[: pop_size - n_move] + a[:n_move])]
        for i, old in enumerate(pops):
            new = list(old)
            mums, dads = parents(old, n_cross, n_prod), parents(old, n_cross, n_prod)
            for c, (mum, dad) in enumerate(zip(mums, dads, strict=True)):
                pick = rng.random(d) < 0.5
                child = tuple(mum[j] if pick[j] else dad[j] for j in range(d))
                walk.node(child)
                new[pop_size - c - 1] = child
                if walk.spent():
                    return walk.result()
            for m in range(n_elite, pop_size - n_cross):
                mutant = list(old[int(rng.integers(pop_size))])
                for j in rng.permutation(d)[: int(rng.integers(max_mut + 1))]:
                    mutant[int(j)] = int(np.rint(rng.random() * top[j]))
                new[m] = tuple(mutant)
                walk.node(new[m])
                if walk.spent():
                    return walk.result()
            pops[i] = new
    return walk.result()
