"""t-closeness and (n, t)-closeness of any table: how far a class's sensitive values stray from the whole's.

t-closeness (Li, Li, Venkatasubramanian, ICDE 2007): achieved t is the largest distance between a class's
sensitive distribution Q and the whole table's P (distances in ``distances``; the value comes from the
one-pass ``models.check``). (n, t)-closeness (the same authors, TKDE 2010) compares each class with the
natural supersets of at least n records instead of the whole table: its region search lives here, apart
from the k/l checks, because it regroups the records once per region of the quasi-identifier space.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from privdb.anonymize._classes import (
    FloatArray,
    HierarchyLike,
    IntArray,
    Pairs,
    codes_of,
    combine,
    group,
    histogram,
    require_rows,
)
from privdb.anonymize.distances import Sensitive, class_distances, row_distances
from privdb.anonymize.models import check
from privdb.errors import InvalidParameter

__all__ = ["is_nt_close", "nt_closeness", "t_closeness"]

_CHUNK = 1 << 22  # cells per dense block


def _rows(pairs: Pairs, sizes: FloatArray, ids: IntArray) -> FloatArray:
    """Dense distributions (len(ids) × m) of the given groups of a sparse histogram."""
    start = np.searchsorted(pairs.cls, ids, side="left")
    lens = np.searchsorted(pairs.cls, ids, side="right") - start
    row = np.repeat(np.arange(len(ids)), lens)
    idx = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(start, lens)
    out = np.zeros((len(ids), pairs.m))
    out[row, pairs.val[idx]] = pairs.cnt[idx] / sizes[ids][row]
    return out


def _check_t(t: float, kind: str) -> None:
    top = math.inf if kind == "kl" else 1.0
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not 0 <= t <= top:
        rng = "at least 0 (KL divergence is unbounded)" if kind == "kl" else "between 0 and 1"
        raise InvalidParameter(f"t must be {rng} (got {t!r}): e.g. t=0.2")


def t_closeness(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    distance: str = "auto",
    hierarchy: HierarchyLike | None = None,
) -> float:
    """Achieved t: the largest distance of a class's sensitive distribution to the whole table's."""
    t = check(table, qi, sensitive, distance=distance, hierarchy=hierarchy).t
    return t if t is not None else 0.0


def nt_closeness(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    n: int,
    *,
    distance: str = "auto",
    hierarchy: HierarchyLike | None = None,
    regions: str = "auto",
) -> float:
    """Achieved t of (n, t)-closeness (Li, Li, Venkatasubramanian, TKDE 22(7), 2010: the (n, t) principle).

    Reading of the definition: a class E1 has (n, t)-closeness if some natural superset E2 of E1 holds at
    least n records and D(Q_E1, Q_E2) ≤ t; a natural superset is the set of all records falling in a region
    of the quasi-identifier space that contains E1's region. The achieved t is therefore
    max over E1 of (min over E2 with |E2| ≥ n of D). n = |T| leaves the whole table as the only candidate:
    t-closeness.

    Regions considered (the parent-region choice): E1's own generalised values on a subset of the
    quasi-identifiers and ``*`` on the others; E2 is the union of the classes whose values equal E1's on the
    kept ones (for releases where values of a column never overlap partly, e.g. full-domain or hierarchy
    releases, exactly the records inside the region; for overlapping ranges a union of classes inside it).
    Releasing every column gives the whole table, suppressed records included. ``regions`` = ``subsets``
    tries all 2^d subsets, ``chain`` releases columns from the last listed to the first (d + 1 regions),
    ``auto`` is subsets up to 10 columns. (Li et al. check a class against its parent partitions in their
    Mondrian variant; on an arbitrary release no partition tree is known, hence these regions.)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidParameter(f"n must be a whole number of at least 1 (got {n!r}): e.g. n=1000")
    require_rows(table)
    if n > len(table):
        raise InvalidParameter(f"n = {n} is larger than the table ({len(table)} records): lower n")
    if regions not in ("auto", "subsets", "chain"):
        raise InvalidParameter(f"unknown regions '{regions}': use auto, subsets or chain")
    classes = group(table, qi)
    sens = Sensitive.encode(table, sensitive, distance, hierarchy)
    if classes.n_classes == 0:
        return 0.0
    sizes = classes.sizes.astype(np.float64)
    pairs = histogram(classes.ids, sens.codes, classes.n_classes, sens.m)
    d = len(qi)
    if regions == "auto":
        regions = "subsets" if d <= 10 else "chain"
    kept_sets: list[tuple[int, ...]] = (
        [s for r in range(d + 1) for s in itertools.combinations(range(d), r)]
        if regions == "subsets"
        else [tuple(range(j)) for j in range(d + 1)]
    )
    at_class = [codes_of(table[c]) for c in qi]
    best = np.full(classes.n_classes, math.inf)
    best[classes.sizes >= n] = 0.0  # E2 = E1
    best = np.minimum(best, class_distances(pairs, sizes, sens))  # E2 = T, |T| ≥ n
    for kept in kept_sets:
        if len(kept) in (0, d):
            continue
        key = combine([at_class[j][0][classes.first] for j in kept], [len(at_class[j][1]) for j in kept])
        region, _ = pd.factorize(key)
        region = region.astype(np.int64)
        r_sizes = np.bincount(region, classes.sizes).astype(np.float64)
        todo = np.flatnonzero((r_sizes[region] >= n) & (best > 0))
        if not len(todo):
            continue
        of_record = np.where(classes.ids >= 0, region[classes.ids], -1)  # suppressed: no region
        r_pairs = histogram(of_record, sens.codes, len(r_sizes), sens.m)
        step = max(1, _CHUNK // max(sens.m, 1))
        for a in range(0, len(todo), step):
            ids = todo[a : a + step]
            dist = row_distances(
                _rows(pairs, sizes, ids), _rows(r_pairs, r_sizes, region[ids]), sens.distance, sens.tree
            )
            best[ids] = np.minimum(best[ids], dist)
    return float(best.max())


def is_nt_close(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    n: int,
    t: float,
    *,
    distance: str = "auto",
    hierarchy: HierarchyLike | None = None,
    regions: str = "auto",
) -> bool:
    """Whether every class has (n, t)-closeness (see ``nt_closeness`` for the regions tried)."""
    _check_t(t, distance)
    return nt_closeness(table, qi, sensitive, n, distance=distance, hierarchy=hierarchy, regions=regions) <= t
