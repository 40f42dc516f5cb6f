"""Issue 31's models as criteria of a lattice node: what ``Lattice.evaluate`` checks besides k and the
per-class sensitive condition (``sensitive_condition``).

* Population-based, per class (ARX's class-based criteria): k-map against a population table (the class
  covers at least k population records) and δ-presence (δ_E = |sample ∩ E| / |population ∩ E| in
  [δmin, δmax]). The population's quasi-identifiers are generalised with the same hierarchies and joined
  to the node's classes; a failing class is suppressed. A population record left in no released class
  (its tuple holds no sample record, or its class is suppressed or generalised to ``*`` everywhere) has
  δ = 0, so with δmin > 0 such a record makes the node fail, as ``criteria.evaluate`` judges the release.
  (ARX lets suppressed classes' population records go unchecked; privdb does not, so with δmin > 0 a
  node may suppress only classes no population record shares.) ``Models.presence_coverage=False`` is
  ARX's rule (``HashGroupify.analyze``): δ of each class holding sample records, a failing one suppressed;
  a class of population records only has δ = 0 and, with δmin > 0, makes the node fail, since it holds
  nothing to suppress; but when k ≥ 2 or l-diversity is asked (``sized``: ARX's minimal class size) such a
  class fails that size first and is passed over.
* Table-level thresholds (ARX's risk-based, "sample-based" criteria): average re-identification risk
  (#classes / records), sample uniqueness (share of records alone in their class), population uniqueness
  (``uniqueness``'s estimate, π the kept records' share of the population N = n/π). Classes generalised to
  ``*`` everywhere are no class (the release shows them as suppressed). As in ARX
  (``RiskBasedCriterion.enforce``), when a threshold fails, the smallest classes (ties as ARX orders
  them, ``Lattice.class_order``) are suppressed, the number found by ARX's binary search, until it holds; the
  node is anonymous only if every threshold then holds and the suppression limit is kept.

Monotone with suppression (a failing node makes every specialisation fail, which prunes the lattice): k-map,
average risk and sample uniqueness (ARX's flags); δ-presence and population uniqueness are not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import combine_sized, dense_space
from privdb.anonymize.hierarchy import Hierarchy
from privdb.anonymize.model_spec import Models
from privdb.anonymize.population import population_text
from privdb.anonymize.uniqueness import estimate

__all__ = ["NodeCriteria", "thresholds_hold"]

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class LatticeView(Protocol):
    """What the criteria read from the lattice (``lattice.Lattice`` provides it)."""

    n: int
    level_labels: list[list[NDArray[np.object_]]]

    def group_codes(self, levels: Sequence[int]) -> list[IntArray]: ...

    def class_order(self, levels: Sequence[int], cls: IntArray, n_cls: int) -> IntArray: ...

    def star_classes(self, levels: Sequence[int], cls: IntArray, n_cls: int) -> BoolArray: ...


def thresholds_hold(models: Models, sizes: IntArray, n_total: int, sampling_fraction: float | None) -> bool:
    """Whether the kept classes of sizes ``sizes`` meet every risk threshold of ``models``."""
    kept = int(sizes.sum())
    if kept == 0:
        return True
    uniques = float(sizes[sizes == 1].sum()) / kept
    if models.average_risk is not None and len(sizes) / kept > models.average_risk:
        return False
    if models.sample_uniqueness is not None and uniques > models.sample_uniqueness:
        return False
    if models.population_uniqueness is not None and sampling_fraction is not None and uniques > 0:
        value = estimate(sizes, sampling_fraction * kept / n_total, models.estimator)
        return value is not None and 0 < value <= models.population_uniqueness
    return True


def _arx_binary(fulfilled: Callable[[int], bool], length: int) -> int:
    """How many of the ordered classes ARX's ``suppressWhileNotFulfilledBinary`` suppresses (Java's
    truncating division kept); the caller checks the result."""
    if length == 0:
        return 0
    low, high = 0, length - 1
    mid = (low + high) // 2
    while low <= high:
        if fulfilled(mid + 1):
            high = mid - 1
        else:
            low = mid + 1
        mid = int((low + high) / 2)
    m = mid + 1
    if not fulfilled(m) and m < length:
        m += 1
    return m


@dataclass
class _Population:
    """The population's distinct tuples: per QI and level, the sample's group code (-1: none)."""

    codes: list[list[IntArray]]
    weight: IntArray


class NodeCriteria:
    """The models of ``models`` that a node must meet beyond k and the per-class sensitive condition;
    ``sized``: k ≥ 2 or l-diversity is asked (see ARX's δ-presence rule in the module docstring)."""

    def __init__(
        self,
        models: Models,
        *,
        population: pd.DataFrame | None = None,
        sampling_fraction: float | None = None,
        sized: bool = False,
    ) -> None:
        self.models = models
        self.sized = sized
        self.population = population
        self.sampling_fraction = sampling_fraction
        self.k_map = models.k_map if population is not None else None
        self.presence = models.delta_presence
        thresholds = (models.average_risk, models.sample_uniqueness, models.population_uniqueness)
        self.risk = any(x is not None for x in thresholds)
        self._pop: _Population | None = None

    @property
    def active(self) -> bool:
        return self.k_map is not None or self.presence is not None or self.risk

    @property
    def monotone_with_suppression(self) -> bool:
        return self.presence is None and self.models.population_uniqueness is None

    def bind(self, lat: LatticeView, qi: Sequence[str], hierarchies: Mapping[str, Hierarchy]) -> None:
        """Encode the population's tuples with the lattice's hierarchy labels."""
        if self.population is None or (self.k_map is None and self.presence is None):
            return
        pop = population_text(self.population, qi)
        key = pd.MultiIndex.from_frame(pop[list(qi)].astype(object)) if len(qi) > 1 else pop[qi[0]]
        tup, uniq = pd.factorize(key)
        weight = np.bincount(tup).astype(np.int64)
        frame = pd.DataFrame(list(uniq), columns=list(qi)) if len(qi) > 1 else pd.DataFrame({qi[0]: uniq})
        codes = []
        for j, c in enumerate(qi):
            per_level = []
            for lv, labels in enumerate(lat.level_labels[j]):
                got = hierarchies[c].labels(frame[c].to_numpy(dtype=object), lv)
                index = pd.Index(labels)
                per_level.append(index.get_indexer(pd.Index(got)).astype(np.int64))
            codes.append(per_level)
        self._pop = _Population(codes, weight)

    def _pop_classes(self, lat: LatticeView, levels: Sequence[int], cls: IntArray, n_cls: int) -> IntArray:
        """The node's class of each distinct population tuple (-1: none)."""
        assert self._pop is not None
        pop = [self._pop.codes[j][int(lv)] for j, lv in enumerate(levels)]
        missing = np.zeros(len(self._pop.weight), dtype=bool)
        for g in pop:
            missing |= g < 0
        sample = lat.group_codes(levels)
        sizes = [len(lat.level_labels[j][int(lv)]) for j, lv in enumerate(levels)]
        # one key space for the sample's tuples and the population's (keys renumbered together if needed)
        joint = [np.concatenate([s, np.maximum(g, 0)]) for s, g in zip(sample, pop, strict=True)]
        both, space = combine_sized(joint, sizes)
        sample_keys, pop_keys = both[: len(sample[0])], both[len(sample[0]) :]
        if dense_space(space, len(both)):  # a lookup table, no hash index per node
            table = np.full(space, -1, dtype=np.int64)
            table[sample_keys] = cls
            out = table[pop_keys]
        else:
            class_key = np.empty(n_cls, dtype=np.int64)
            class_key[cls] = sample_keys
            out = pd.Index(class_key).get_indexer(pd.Index(pop_keys)).astype(np.int64)
        out[missing] = -1
        return out

    def apply(
        self,
        lat: LatticeView,
        levels: Sequence[int],
        cls: IntArray,
        sizes: IntArray,
        fail: BoolArray,
    ) -> tuple[BoolArray, bool]:
        """The classes to suppress (``fail`` widened) and whether the node can meet the models at all."""
        fail = fail.copy()
        n_cls = len(sizes)
        star = lat.star_classes(levels, cls, n_cls)
        pop_cls = None
        if self._pop is not None:
            pop_cls = self._pop_classes(lat, levels, cls, n_cls)
            hit = pop_cls >= 0
            counts = np.bincount(pop_cls[hit], weights=self._pop.weight[hit], minlength=n_cls)
            counts = np.maximum(counts, sizes)  # the population holds the sample
            if self.k_map is not None:
                fail |= (counts < self.k_map) & ~star
            if self.presence is not None:
                delta = sizes / counts
                fail |= ((delta < self.presence[0]) | (delta > self.presence[1])) & ~star
        ok = True
        if self.risk:
            out, ok = self._enforce(lat, levels, cls, sizes, fail | star)
            fail = np.where(star, fail, out)  # a class all '*' is no class: never suppressed for risk
        if pop_cls is not None and self.presence is not None and self.presence[0] > 0:
            if self.models.presence_coverage:
                released = ~fail & ~star
                covered = np.zeros(len(pop_cls), dtype=bool)
                covered[pop_cls >= 0] = released[pop_cls[pop_cls >= 0]]
                ok &= bool(covered.all())
            elif not self.sized:  # ARX: a class of population records only fails the node
                ok &= bool((pop_cls >= 0).all())
        return fail, ok

    def _enforce(
        self,
        lat: LatticeView,
        levels: Sequence[int],
        cls: IntArray,
        sizes: IntArray,
        out: BoolArray,
    ) -> tuple[BoolArray, bool]:
        """Suppress the smallest kept classes until the risk thresholds hold (``out``: classes already
        out: failing or ``*``); the flag says whether they hold in the end."""
        kept = np.flatnonzero(~out)
        order = kept[lat.class_order(levels, cls, len(sizes))[kept].argsort(kind="stable")]
        ordered = sizes[order]

        @functools.cache  # the binary search and the final check ask some m twice (an estimate each)
        def fulfilled(m: int) -> bool:
            return thresholds_hold(self.models, ordered[m:], lat.n, self.sampling_fraction)

        m = 0 if fulfilled(0) else _arx_binary(fulfilled, len(order))
        out = out.copy()
        out[order[:m]] = True
        return out, fulfilled(m)
