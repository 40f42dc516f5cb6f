"""Optimal full-domain generalisation: the best node of the lattice of hierarchy levels.

A node fixes one level per quasi-identifier (Samarati 2001; Sweeney 2002). It is *anonymous* when the records
in classes smaller than k (or failing the sensitive-value condition, or the population models of
``node_criteria``) number at most the suppression limit and the risk thresholds of ``node_criteria`` hold;
those records are suppressed. Among anonymous nodes the search returns one minimising the chosen metric:

* ``loss`` (default): ARX's loss (Iyengar 2002): the mean over quasi-identifiers and records of
  (leaves under the generalised value − 1) / (leaves − 1), leaves counted in ``Hierarchy.table()``,
  and 1 for every cell of a suppressed record. The same number ARX reports as its information loss/NCP.
* ``discernibility`` (Bayardo, Agrawal 2005): Σ |E|² over kept classes plus n for each suppressed record.
* ``aecs``: average equivalence-class size n / #classes, the suppressed records counting as one class.
* ARX's other metrics (``geometric-loss``, ``entropy``, ``monotonic-entropy``, ``dm-star``) and the
  generalisation/suppression factor: ``lattice_metrics``.

Pruning (Kohlmayer et al., "Flash", PASSAT 2012; El Emam et al., "OLA", JAMIA 2009):

* k-anonymity with suppression is monotone: if a node fails, so does every specialisation (predictive
  tagging). Distinct l-diversity keeps that property; entropy/recursive l and t-closeness do not under
  suppression (merging a passing class into a failing one suppresses it), so for them only the k part tags.
* Each metric has a lower bound that ignores suppression and grows with generalisation: for ``loss`` it is
  known for every node before any counting (per-QI, per-level sums), for the others it is the value without
  suppression of an evaluated specialisation. Nodes are visited in order of bound and the search stops when
  the bound reaches the best value found, which makes the result optimal.

Counting is vectorised: distinct raw tuples are counted once; a node maps each tuple's per-QI value codes to
level codes (``lattice_levels``), combines them into one int64 key (``_classes.combine_sized``, renumbered
before it could wrap) and counts with ``bincount`` (or ``factorize`` when the key space is large).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import combine_sized, dense_space
from privdb.anonymize.hierarchy import Hierarchy, lattice_size
from privdb.anonymize.lattice_levels import QiLevels
from privdb.anonymize.lattice_metrics import (
    CELL_METRICS,
    METRICS,
    aggregate,
    check_metric,
    factors,
    suppression_terms,
    tuple_costs,
)
from privdb.anonymize.node_criteria import NodeCriteria
from privdb.anonymize.release import GeneralizedColumn
from privdb.anonymize.sensitive_condition import SensitiveCondition
from privdb.errors import InvalidParameter

__all__ = ["MAX_NODES", "METRICS", "Lattice", "NodeResult", "search", "weight_scale"]

MAX_NODES = 2_000_000
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class NodeResult:
    """One evaluated node: levels, whether anonymous, the metric, and which records it suppresses."""

    levels: tuple[int, ...]
    anonymous: bool
    value: float
    bound: float
    n_suppressed: int
    suppressed_tuples: NDArray[np.bool_]


def weight_scale(weights: Sequence[float] | None, d: int) -> NDArray[np.float64]:
    """Per-QI factors of the loss: the weights scaled to mean 1 (ARX's weighted loss is Σ wⱼ·lossⱼ / Σ wⱼ)."""
    if weights is None:
        return np.ones(d)
    w = np.asarray(weights, dtype=np.float64)
    if len(w) != d or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise InvalidParameter("weights are one finite number >= 0 per quasi-identifier, not all 0")
    return np.asarray(w * d / w.sum(), dtype=np.float64)


class Lattice:
    """The generalisation lattice of a table: evaluate nodes, search the optimum."""

    def __init__(
        self,
        df: pd.DataFrame,
        qi: Sequence[str],
        hierarchies: Mapping[str, Hierarchy],
        k: int,
        *,
        condition: SensitiveCondition | None = None,
        suppression_limit: float = 0.05,
        metric: str = "loss",
        weights: Sequence[float] | None = None,
        enumerate_nodes: bool = True,
        criteria: NodeCriteria | None = None,
        missing_as_star: bool = False,
        gs_factor: float = 0.5,
    ) -> None:
        check_metric(metric, gs_factor)
        if not 0 <= suppression_limit <= 1:
            raise InvalidParameter(
                f"suppression_limit is a fraction of records in 0..1 (got {suppression_limit})"
            )
        self.qi = list(qi)
        self.qis = [QiLevels(df[c], hierarchies[c], missing_as_star) for c in qi]
        self.k = k
        self.n = len(df)
        self.metric = metric
        self.condition = condition
        self.max_suppressed = int(np.floor(suppression_limit * self.n + 1e-9))
        self.heights = np.array([q.height for q in self.qis], dtype=np.int64)
        self.size = lattice_size(self.heights)
        if enumerate_nodes and self.size > MAX_NODES:
            raise InvalidParameter(
                f"the lattice has {self.size} nodes (more than {MAX_NODES}): use search='lightning' or "
                "'genetic' (CLI: --search), fewer levels or quasi-identifiers, or algorithm='mondrian'"
            )
        # loss weight per quasi-identifier, normalised to mean 1 (all 1: ARX's unweighted loss)
        self.scale = weight_scale(weights, len(self.qis))
        # distinct raw tuples, counted once
        key = np.zeros(self.n, dtype=np.int64)
        for q in self.qis:
            key = pd.factorize(key * (int(q.codes.max(initial=0)) + 1) + q.codes)[0].astype(np.int64)
        self.tuple_of_record = key
        first = np.unique(key, return_index=True)[1]
        self.first_record = first.astype(np.int64)
        self.tup = [q.codes[first] for q in self.qis]
        self.weight = np.bincount(key).astype(np.int64)
        self.cells = metric in CELL_METRICS
        self.g, self.s = factors(gs_factor)
        # per QI and level the cell cost of each tuple (weighted), and the a-priori bound: their sum
        self._tcost = [
            [f * c for c in per_level]
            for per_level, f in zip(
                tuple_costs(metric, self.qis, self.tup, self.weight), self.scale, strict=True
            )
        ]
        self._norm = 1.0 if metric in ("entropy", "monotonic-entropy") else float(self.n)
        self.level_cost = [
            self.g * np.array([float((c * self.weight).sum()) for c in per_level])
            for per_level in self._tcost
        ]
        self.evaluations = 0
        self._cache: dict[int, NodeResult] = {}
        self._kfail: dict[int, bool] = {}
        self._tg = [
            [q.groups[lv][t] for lv in range(q.height + 1)] for q, t in zip(self.qis, self.tup, strict=True)
        ]
        self.level_labels = [q.labels for q in self.qis]
        # records per group at each level: the entropy metric's suppressed counts, by complement
        self._group_totals: list[list[NDArray[np.float64]]] | None = None
        if metric == "entropy":
            self._group_totals = [
                [np.bincount(g, weights=self.weight).astype(np.float64) for g in per] for per in self._tg
            ]
        self._star = [[np.asarray(lab == "*") for lab in q.labels] for q in self.qis]
        self.criteria = criteria if criteria is not None and criteria.active else None
        if self.criteria is not None:
            self.criteria.bind(self, self.qi, hierarchies)
        if enumerate_nodes:
            self._enumerate()

    def _enumerate(self) -> None:
        """Every node, its a-priori loss bound and the masks of down-sets (for the optimal search)."""
        grids = np.meshgrid(*[np.arange(h + 1) for h in self.heights], indexing="ij")
        self.nodes = np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)
        self.strides = np.cumprod(np.append(self.heights[1:] + 1, 1)[::-1])[::-1].astype(np.int64)
        self._bound_loss = self._loss_bound()
        # _le[j][v]: nodes whose level j is <= v; a down-set is the AND over the quasi-identifiers
        self._le = [[self.nodes[:, j] <= v for v in range(h + 1)] for j, h in enumerate(self.heights)]

    @cached_property
    def _records_by_tuple(self) -> IntArray:
        """Record indices grouped by distinct tuple (for the l/t condition's histograms; built on first use,
        so a k-only search never sorts the records)."""
        return np.argsort(self.tuple_of_record, kind="stable").astype(np.int64)

    @cached_property
    def _tuple_rep(self) -> IntArray:
        """The tuple of each entry of ``_records_by_tuple`` (built on first use, like it)."""
        return np.repeat(np.arange(len(self.weight)), self.weight)

    def _loss_bound(self) -> NDArray[np.float64]:
        cols = np.stack([lc[self.nodes[:, j]] for j, lc in enumerate(self.level_cost)], axis=1)
        return aggregate(cols / self._norm, self.metric)

    def loss_bound(self, levels: Sequence[int]) -> float:
        """A cell metric's value at ``levels`` without suppression: a lower bound on it and on every node
        above it."""
        cols = np.array([float(lc[int(lv)]) for lc, lv in zip(self.level_cost, levels, strict=True)])
        return float(aggregate(cols / self._norm, self.metric))

    def group_codes(self, levels: Sequence[int]) -> list[IntArray]:
        """Per quasi-identifier, the group code of each distinct tuple at ``levels``."""
        return [tg[lv] for tg, lv in zip(self._tg, levels, strict=True)]

    def _keys(self, levels: Sequence[int]) -> tuple[IntArray, int]:
        """One key per distinct tuple at ``levels`` (its group codes in mixed radix, last QI fastest), and
        the size of the key space."""
        sizes = [len(q.labels[lv]) for q, lv in zip(self.qis, levels, strict=True)]
        return combine_sized(self.group_codes(levels)[::-1], sizes[::-1])

    def star_classes(self, levels: Sequence[int], cls: IntArray, n_cls: int) -> NDArray[np.bool_]:
        """Classes whose every value is ``*`` (the release shows them as suppressed records)."""
        star = np.ones(len(self.weight), dtype=bool)
        for st, tg, lv in zip(self._star, self._tg, levels, strict=True):
            star &= st[lv][tg[lv]]
        out = np.zeros(n_cls, dtype=bool)
        out[cls[star]] = True
        return out

    def class_order(self, levels: Sequence[int], cls: IntArray, n_cls: int) -> IntArray:
        """Rank of each class in ARX's suppression order (``HashGroupifyDistribution``): size, then, for
        the loss metrics, ARX's class-based loss (its values' domain shares s = leaves / domain, aggregated
        as the metric aggregates columns: Σ s, or Π (1 + |E|·s) for the geometric loss), then its first
        record; the other metrics have no class-based loss in ARX."""
        size = np.bincount(cls, weights=self.weight, minlength=n_cls)
        geometric = self.metric == "geometric-loss"
        cost = np.full(len(self.weight), 1.0 if geometric else 0.0)
        if self.metric in ("loss", "geometric-loss"):
            for q, tg, lv, f in zip(self.qis, self._tg, levels, self.scale, strict=True):
                share = (q.cost[lv][tg[lv]] * (q.leaves - 1) + 1) / q.leaves
                cost = cost * (1 + size[cls] * share) if geometric else cost + f * share
        loss = np.zeros(n_cls)
        loss[cls] = cost
        first = np.full(n_cls, self.n, dtype=np.int64)
        np.minimum.at(first, cls, self.first_record)
        rank = np.empty(n_cls, dtype=np.int64)
        rank[np.lexsort((first, loss, size))] = np.arange(n_cls)
        return rank

    def classes(self, levels: Sequence[int]) -> tuple[IntArray, IntArray]:
        """Class id of every distinct tuple at ``levels`` and the class sizes (in records)."""
        key, space = self._keys(levels)
        if dense_space(space, len(key)):
            sizes = np.bincount(key, weights=self.weight, minlength=space).astype(np.int64)
            present = np.flatnonzero(sizes)
            remap = np.zeros(space, dtype=np.int64)
            remap[present] = np.arange(len(present))
            return remap[key], sizes[present]
        cls = pd.factorize(key)[0].astype(np.int64)
        return cls, np.bincount(cls, weights=self.weight).astype(np.int64)

    def evaluate(self, levels: Sequence[int]) -> tuple[NodeResult, bool]:
        """Evaluate a node; the flag says whether the k part alone already exceeds the limit."""
        self.evaluations += 1
        cls, sizes = self.classes(levels)
        fail_cls = sizes < self.k
        k_fail = int(sizes[fail_cls].sum()) > self.max_suppressed
        if self.condition is not None:
            hist = self.condition.histogram(cls[self._tuple_rep], len(sizes), self._records_by_tuple)
            fail_cls |= ~self.condition.ok(hist)
        holds = True
        if self.criteria is not None:
            fail_cls, holds = self.criteria.apply(self, levels, cls, sizes, fail_cls)
        supp = fail_cls[cls]
        n_supp = int(self.weight[supp].sum())
        kept = sizes[~fail_cls]
        if self.cells:
            bound = self.loss_bound(levels)
            base = np.array([float(lc[int(lv)]) for lc, lv in zip(self.level_cost, levels, strict=True)])
            costs = [c[int(lv)] for c, lv in zip(self._tcost, levels, strict=True)]
            totals = None
            if self._group_totals is not None:
                totals = [t[int(lv)] for t, lv in zip(self._group_totals, levels, strict=True)]
            extra = suppression_terms(
                self.metric, self.group_codes(levels), costs, self.weight, supp, self.g, self.s, totals
            )
            value = float(aggregate((base + extra) / self._norm, self.metric))
        elif self.metric in ("discernibility", "dm-star"):
            bound = float((sizes.astype(np.float64) ** 2).sum())
            value = float((kept.astype(np.float64) ** 2).sum()) + float(n_supp) * self.n
            value = bound if self.metric == "dm-star" else value
        else:
            bound = self.n / len(sizes)
            value = self.n / (len(kept) + (1 if n_supp else 0))
        anonymous = holds and n_supp <= self.max_suppressed
        return NodeResult(tuple(int(x) for x in levels), anonymous, value, bound, n_supp, supp), k_fail

    def _fails(self, idx: int) -> bool:
        """Evaluate node ``idx`` (cached) and say whether it fails in the monotone sense: its k part
        exceeds the limit, or (for monotone models) the whole model does."""
        res = self._cache.get(idx)
        if res is None:
            res, k_fail = self.evaluate(self.nodes[idx])
            self._cache[idx] = res
            self._kfail[idx] = k_fail
        monotone = self.condition is None or self.condition.monotone_with_suppression
        monotone &= self.criteria is None or self.criteria.monotone_with_suppression
        return bool(self._kfail[idx]) or (monotone and not res.anonymous)

    def _below(self, idx: int) -> NDArray[np.bool_]:
        """Mask of the nodes at or below node ``idx`` (its specialisations)."""
        mask = np.ones(len(self.nodes), dtype=bool)
        for j, v in enumerate(self.nodes[idx]):
            if v < self.heights[j]:
                mask &= self._le[j][int(v)]
        return mask

    def _path_up(self, idx: int) -> list[int]:
        """A chain from node ``idx`` to the top, raising the relatively lowest quasi-identifier each step."""
        levels = self.nodes[idx].copy()
        path = [idx]
        while (levels < self.heights).any():
            rel = np.where(levels < self.heights, levels / self.heights, np.inf)
            levels[int(rel.argmin())] += 1
            path.append(int((levels * self.strides).sum()))
        return path

    def search(self) -> NodeResult:
        """The optimal anonymous node (ties: the first in visiting order).

        Nodes are visited by bound. An unresolved node is resolved by binary search along a chain to the
        top (Flash's idea): the highest failing node found tags its whole down-set as failing, so most
        failing nodes are never counted.
        """
        nodes = self.nodes
        failed = np.zeros(len(nodes), dtype=bool)
        is_loss = self.cells
        bound = self._loss_bound() if is_loss else np.full(len(nodes), -np.inf)
        height = nodes.sum(axis=1)
        order = np.lexsort((height, bound)) if is_loss else np.argsort(height, kind="stable")
        best: NodeResult | None = None

        def consider(i: int) -> None:
            nonlocal best
            res = self._cache[i]
            if not is_loss:
                above = (nodes >= nodes[i]).all(axis=1)
                bound[above] = np.maximum(bound[above], res.bound)
            if res.anonymous and (best is None or res.value < best.value):
                best = res

        for idx in order:
            idx = int(idx)
            if failed[idx]:
                continue
            if best is not None and bound[idx] >= best.value:
                if is_loss:
                    break  # bounds only grow along the order: nothing better remains
                continue
            if idx not in self._cache:
                path = self._path_up(idx)
                lo, hi = 0, len(path) - 1  # invariant: path[hi] passes or is the top
                while lo < hi:
                    mid = (lo + hi) // 2
                    if self._fails(path[mid]):
                        failed |= self._below(path[mid])
                        consider(path[mid])
                        lo = mid + 1
                    else:
                        consider(path[mid])
                        hi = mid
                if failed[idx]:
                    continue
            if self._fails(idx):
                failed |= self._below(idx)
            consider(idx)
        if best is None:
            raise InvalidParameter(
                "no generalisation satisfies the privacy model within the suppression limit, not even '*' "
                "everywhere: relax the privacy model (lower k or l, raise t, β, δ or the risk thresholds) "
                "or raise suppression_limit"
            )
        return best

    def release(self, node: NodeResult) -> tuple[list[GeneralizedColumn], NDArray[np.bool_]]:
        """Released columns at ``node`` and the per-record suppression mask."""
        cols = [
            GeneralizedColumn(q.groups[lv][q.codes], q.labels[lv])
            for q, lv in zip(self.qis, node.levels, strict=True)
        ]
        return cols, node.suppressed_tuples[self.tuple_of_record]


def search(
    df: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    k: int,
    *,
    condition: SensitiveCondition | None = None,
    suppression_limit: float = 0.05,
    metric: str = "loss",
) -> tuple[Lattice, NodeResult]:
    """Build the lattice and return it with its optimal node."""
    lat = Lattice(
        df, qi, hierarchies, k, condition=condition, suppression_limit=suppression_limit, metric=metric
    )
    return lat, lat.search()
