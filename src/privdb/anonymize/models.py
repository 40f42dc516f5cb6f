"""Privacy-model checks on any table: k-anonymity, l-diversity, t-closeness, (n, t)-closeness, coverage.

The table may be privdb's release or anyone else's: equivalence classes are rows with equal
quasi-identifier tuples, suppressed records (``*`` in every quasi-identifier) form no class and are counted
apart. The records are grouped once (``_classes.group``) and a sparse class × sensitive-value histogram
feeds every measure, so each check is a few ``bincount`` passes.

* k-anonymity (Samarati and Sweeney 1998; Sweeney 2002): achieved k is the smallest class.
* l-diversity (Machanavajjhala et al., ICDE 2006 / TKDD 2007): distinct (values per class), entropy
  (achieved l = exp of the smallest class entropy), recursive (c, l): with the class's counts sorted
  descending r₁ ≥ r₂ ≥ … ≥ r_m, r₁ < c·(r_l + … + r_m). Achieved c for an l is the smallest integer c.
* t-closeness (Li, Li, Venkatasubramanian, ICDE 2007): achieved t is the largest distance between a class's
  sensitive distribution Q and the whole table's P. The whole table includes suppressed records: their
  sensitive values are published too. Distances: Earth Mover's with equal ground distance (½Σ|q−p|, equal
  to the variational distance of the course notes), with ordered distance for numbers
  ((1/(m−1))Σᵢ|Σ_{j≤i}(q_j−p_j)| over the table's m sorted values), with hierarchical distance for a taxonomy
  (ground distance = height of the lowest common ancestor / H); and the notes' Kullback–Leibler divergence
  D(Q‖P) = Σ q ln(q/p), which is not bounded by 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from privdb.anonymize._classes import (
    BoolArray,
    Classes,
    FloatArray,
    HierarchyLike,
    IntArray,
    Pairs,
    codes_of,
    combine,
    covered,
    group,
    hierarchy_frame,
    histogram,
    require_columns,
    require_rows,
    text,
)
from privdb.errors import InvalidParameter

__all__ = [
    "DISTANCES",
    "CheckResult",
    "Coverage",
    "Sensitive",
    "check",
    "covers",
    "distance",
    "is_nt_close",
    "is_recursive_diverse",
    "k_anonymity",
    "l_diversity",
    "nt_closeness",
    "recursive_c",
    "recursive_l",
    "t_closeness",
]

DISTANCES = ("auto", "equal", "variational", "ordered", "hierarchical", "kl")
_CHUNK = 1 << 22  # cells per dense block


@dataclass(frozen=True)
class _Tree:
    """A taxonomy over the sensitive domain: ``lev[h][leaf]`` is the leaf's ancestor at level h (local index),
    ``up[h][node]`` the parent at level h of a level h−1 node."""

    lev: list[IntArray]
    up: list[IntArray]
    sizes: list[int]

    @property
    def height(self) -> int:
        return len(self.lev) - 1


@dataclass(frozen=True)
class Sensitive:
    """A sensitive column encoded for the distances: value codes in domain order, and the table's P."""

    name: str
    codes: IntArray
    m: int
    p: FloatArray
    distance: str
    tree: _Tree | None = None

    @classmethod
    def encode(
        cls, table: pd.DataFrame, name: str, distance: str = "auto", hierarchy: HierarchyLike | None = None
    ) -> Sensitive:
        require_columns(table, [name])
        if distance not in DISTANCES:
            raise InvalidParameter(f"unknown distance '{distance}': use one of {', '.join(DISTANCES)}")
        col = table[name]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        if distance == "auto":
            distance = "hierarchical" if hierarchy is not None else "ordered" if numeric else "equal"
        tree = None
        if distance == "hierarchical":
            if hierarchy is None:
                raise InvalidParameter(
                    f"the hierarchical distance needs a hierarchy for '{name}': pass hierarchy=<table in ARX "
                    "layout> or choose distance='equal'"
                )
            tree, leaves = _tree(hierarchy_frame(hierarchy, name), name)
            codes = leaves.get_indexer(pd.Index(text(col.to_numpy())))
            if (codes < 0).any():
                raise InvalidParameter(
                    f"{int((codes < 0).sum())} value(s) of '{name}' are missing from its hierarchy: add a "
                    "row for each value"
                )
            m = len(leaves)
        elif distance == "ordered":
            if not numeric:
                raise InvalidParameter(
                    f"the ordered distance needs a numeric sensitive attribute and '{name}' is not numeric: "
                    "use distance='equal', or 'hierarchical' with a hierarchy"
                )
            codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=False)
            m = len(uniques)
        else:
            codes, uniq = codes_of(col)
            m = len(uniq)
        codes = np.asarray(codes, dtype=np.int64)
        p = np.bincount(codes, minlength=m) / len(codes) if len(codes) else np.zeros(m)
        return cls(name, codes, m, p.astype(np.float64), distance, tree)


def _tree(frame: pd.DataFrame, name: str) -> tuple[_Tree, pd.Index]:
    leaves = pd.Index(frame[0])
    if leaves.has_duplicates:
        raise InvalidParameter(f"hierarchy for '{name}' lists a value twice: keep one row per value")
    lev: list[IntArray] = []
    sizes: list[int] = []
    up: list[IntArray] = [np.zeros(0, dtype=np.int64)]
    for h in range(frame.shape[1]):
        codes, uniq = pd.factorize(frame[h])
        lev.append(codes.astype(np.int64))
        sizes.append(len(uniq))
        if h:
            parent = np.full(sizes[-2], -1, dtype=np.int64)
            parent[lev[-2]] = lev[-1]
            if np.any(parent[lev[-2]] != lev[-1]):
                raise InvalidParameter(
                    f"hierarchy for '{name}' is not a tree: a level-{h - 1} label has two parents at level "
                    f"{h}; give each label one parent"
                )
            up.append(parent)
    return _Tree(lev, up, sizes), leaves


# ---------------------------------------------------------------------------------------------- distances


def distance(
    q: ArrayLike, p: ArrayLike, kind: str = "equal", hierarchy: HierarchyLike | None = None
) -> float:
    """Distance between two distributions over the same ordered domain (dense; for tests and small use).

    ``kind`` is one of equal, variational, ordered, kl, or hierarchical with ``hierarchy`` an ARX-layout
    table whose rows follow the domain order.
    """
    tree = None
    if kind == "hierarchical":
        if hierarchy is None:
            raise InvalidParameter("the hierarchical distance needs hierarchy=<table in ARX layout>")
        tree = _tree(hierarchy_frame(hierarchy, "sensitive"), "sensitive")[0]
    qq = np.asarray(q, dtype=np.float64)[None, :]
    pp = np.asarray(p, dtype=np.float64)[None, :]
    return float(_dense(qq, pp, kind, tree)[0])


def _dense(q: FloatArray, p: FloatArray, kind: str, tree: _Tree | None) -> FloatArray:
    """Row-wise distance between distributions ``q`` and ``p`` (rows × m)."""
    m = q.shape[1]
    if kind in ("equal", "variational"):
        return np.asarray(0.5 * np.abs(q - p).sum(axis=1))
    if kind == "ordered":
        if m < 2:
            return np.zeros(len(q))
        return np.asarray(np.abs(np.cumsum(q - p, axis=1)).sum(axis=1) / (m - 1))
    if kind == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(q > 0, q * np.log(q / p), 0.0)
        return np.asarray(terms.sum(axis=1))
    if kind == "hierarchical" and tree is not None:
        child = np.zeros((len(q), tree.sizes[0]))
        child[:, tree.lev[0]] = p - q  # extra of each leaf
        cost = np.zeros(len(q))
        for h in range(1, tree.height + 1):
            onto = np.zeros((tree.sizes[h - 1], tree.sizes[h]))
            onto[np.arange(tree.sizes[h - 1]), tree.up[h]] = 1.0
            pos = np.maximum(child, 0.0) @ onto
            neg = np.maximum(-child, 0.0) @ onto
            cost += h / tree.height * np.minimum(pos, neg).sum(axis=1)
            child = child @ onto
        return cost
    raise InvalidParameter(f"unknown distance '{kind}': use one of {', '.join(DISTANCES[1:])}")


def _sparse(pairs: Pairs, sizes: FloatArray, sens: Sensitive) -> FloatArray:
    """Distance of each class's distribution to the table's P, from the sparse histogram only."""
    n_cls = len(sizes)
    cls, val = pairs.cls, pairs.val
    q = pairs.cnt / sizes[cls]
    p = sens.p
    kind = sens.distance
    if kind in ("equal", "variational"):
        inside = np.bincount(cls, np.abs(q - p[val]), n_cls) - np.bincount(cls, p[val], n_cls)
        return np.asarray(0.5 * (inside + 1.0))
    if kind == "kl":
        return np.asarray(np.bincount(cls, q * np.log(q / p[val]), n_cls))
    if kind == "ordered":
        return _sparse_ordered(cls, val, q, p, n_cls)
    assert sens.tree is not None
    return _sparse_hierarchical(cls, val, q, p, n_cls, sens.tree)


def _sparse_ordered(cls: IntArray, val: IntArray, q: FloatArray, p: FloatArray, n_cls: int) -> FloatArray:
    # Σᵢ|F_q(i) − F_p(i)|: F_q is a step function between a class's present values, F_p is nondecreasing,
    # so each step's sum is two prefix sums split where F_p crosses the step's level.
    m = len(p)
    if m < 2:
        return np.zeros(n_cls)
    fp = np.cumsum(p)
    s = np.concatenate([[0.0], np.cumsum(fp)])
    cum = np.cumsum(q)
    start = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
    base = np.repeat(cum[start] - q[start], np.diff(np.r_[start, len(cls)]))
    fq = cum - base  # F_q at each present value, within its class
    last = np.r_[cls[1:] != cls[:-1], True]
    end = np.where(last, m, np.r_[val[1:], m])
    a, b = val, end
    cut = np.clip(np.searchsorted(fp, fq, side="left"), a, b)
    seg = (fq * (cut - a) - (s[cut] - s[a])) + ((s[b] - s[cut]) - fq * (b - cut))
    total = np.bincount(cls, seg, n_cls)
    total[cls[start]] += s[val[start]]  # before a class's first value F_q = 0
    # prefix-sum differences can round a zero distance to -1e-16: a distance is never below 0
    return np.asarray(np.maximum(total, 0.0) / (m - 1))


def _sparse_hierarchical(
    cls: IntArray, val: IntArray, q: FloatArray, p: FloatArray, n_cls: int, tree: _Tree
) -> FloatArray:
    # extra(N) = P(N) − Q(N); neg(N) = Σ_children max(Q−P, 0) is nonzero only where the class has mass, and
    # pos(N) = neg(N) + extra(N); cost(N) = height(N)/H · min(pos, neg) (Li et al. 2007, Section 4.2).
    cost = np.zeros(n_cls)
    node = val
    for h in range(1, tree.height + 1):
        child = tree.lev[h - 1][val] if h == 1 else node
        p_child = np.bincount(tree.lev[h - 1], p, tree.sizes[h - 1])
        p_par = np.bincount(tree.lev[h], p, tree.sizes[h])
        key, uniq = pd.factorize(cls * tree.sizes[h - 1] + child)
        qc = np.bincount(key, q, len(uniq))
        c_cls, c_node = uniq // tree.sizes[h - 1], uniq % tree.sizes[h - 1]
        neg_c = np.maximum(qc - p_child[c_node], 0.0)
        parent = tree.up[h][c_node]
        key2, uniq2 = pd.factorize(c_cls * tree.sizes[h] + parent)
        neg = np.bincount(key2, neg_c, len(uniq2))
        q_par = np.bincount(key2, qc, len(uniq2))
        g_cls, g_node = uniq2 // tree.sizes[h], uniq2 % tree.sizes[h]
        extra = p_par[g_node] - q_par
        cost += np.bincount(g_cls, h / tree.height * np.minimum(neg, neg + extra), n_cls)
        cls, node = g_cls.astype(np.int64), g_node.astype(np.int64)
        q = np.asarray(q_par, dtype=np.float64)
    return cost


def _rows(pairs: Pairs, sizes: FloatArray, ids: IntArray) -> FloatArray:
    """Dense distributions (len(ids) × m) of the given groups of a sparse histogram."""
    start = np.searchsorted(pairs.cls, ids, side="left")
    lens = np.searchsorted(pairs.cls, ids, side="right") - start
    row = np.repeat(np.arange(len(ids)), lens)
    idx = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(start, lens)
    out = np.zeros((len(ids), pairs.m))
    out[row, pairs.val[idx]] = pairs.cnt[idx] / sizes[ids][row]
    return out


# ------------------------------------------------------------------------------------------------- checks


def _check_l(l: float, integer: bool = False) -> None:  # noqa: E741 (the field's notation)
    bad = isinstance(l, bool) or not isinstance(l, (int, float, np.integer, np.floating)) or not l >= 1
    if bad or (integer and float(l) != int(l)):
        kind = "a whole number" if integer else "a number"
        raise InvalidParameter(f"l must be {kind} of at least 1 (got {l!r}): e.g. l=2")


def _check_t(t: float, kind: str) -> None:
    top = math.inf if kind == "kl" else 1.0
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not 0 <= t <= top:
        rng = "at least 0 (KL divergence is unbounded)" if kind == "kl" else "between 0 and 1"
        raise InvalidParameter(f"t must be {rng} (got {t!r}): e.g. t=0.2")


@dataclass(frozen=True)
class _Diversity:
    distinct: IntArray
    entropy: FloatArray
    r1: IntArray
    rank: IntArray  # pairs sorted by (class, count descending): rank within the class
    cnt: IntArray  # counts in that order
    cls: IntArray

    @classmethod
    def of(cls, pairs: Pairs, sizes: IntArray) -> _Diversity:
        n_cls = len(sizes)
        q = pairs.cnt / sizes[pairs.cls]
        entropy = -np.asarray(np.bincount(pairs.cls, q * np.log(q), n_cls), dtype=np.float64)
        order = np.lexsort((-pairs.cnt, pairs.cls))
        c, cnt = pairs.cls[order], pairs.cnt[order].astype(np.int64)
        distinct = np.bincount(c, minlength=n_cls).astype(np.int64)
        start = np.cumsum(distinct) - distinct
        rank = np.arange(len(c)) - start[c]
        return cls(distinct, entropy, cnt[start], rank, cnt, c)

    def c_for(self, l: int) -> FloatArray:  # noqa: E741
        """Per class, the smallest integer c with r₁ < c·(r_l + … + r_m); inf with fewer than l values."""
        tail = np.bincount(self.cls, np.where(self.rank >= l - 1, self.cnt, 0), len(self.r1))
        tail = tail.astype(np.int64)
        safe = np.maximum(tail, 1)
        return np.where(tail > 0, (self.r1 // safe + 1).astype(np.float64), math.inf)

    def l_for(self, c: float) -> IntArray:
        """Per class, the largest l with r₁ < c·(r_l + … + r_m) (0 if none): tails shrink with l, so the
        condition holds for a prefix of ranks and l is the length of that prefix."""
        csum = np.cumsum(self.cnt)
        start = np.cumsum(self.distinct) - self.distinct
        total = np.bincount(self.cls, self.cnt, len(self.r1)).astype(np.int64)
        before = csum - self.cnt - (csum[start] - self.cnt[start])[self.cls]  # r_1 + … + r_{rank}
        ok = self.r1[self.cls] < c * (total[self.cls] - before)
        return np.bincount(self.cls, ok, len(self.r1)).astype(np.int64)


def _finite(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class CheckResult:
    """What a table achieves. Per-class arrays (``class_sizes``, ``distinct``, ``entropy``, ``class_c``,
    ``class_t``) follow the class numbering of ``classes.ids``."""

    classes: Classes
    sensitive: str | None = None
    distinct: IntArray | None = None
    entropy: FloatArray | None = None
    recursive_l: int | None = None
    class_c: FloatArray | None = None
    class_t: FloatArray | None = None
    distance: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return self.classes.k

    @property
    def class_sizes(self) -> IntArray:
        return self.classes.sizes

    @property
    def l(self) -> int | None:  # noqa: E743 (the field's notation)
        """Achieved distinct l."""
        return int(self.distinct.min()) if self.distinct is not None and len(self.distinct) else None

    @property
    def l_entropy(self) -> float | None:
        """Achieved entropy l: exp of the smallest class entropy."""
        return float(np.exp(self.entropy.min())) if self.entropy is not None and len(self.entropy) else None

    @property
    def recursive_c(self) -> float | None:
        """Smallest integer c making the table recursive (c, ``recursive_l``)-diverse (inf: no c does)."""
        return float(self.class_c.max()) if self.class_c is not None and len(self.class_c) else None

    @property
    def t(self) -> float | None:
        return float(self.class_t.max()) if self.class_t is not None and len(self.class_t) else None

    def to_dict(self) -> dict[str, Any]:
        """DESIGN.md's ``achieved`` block (l is distinct l) plus the details."""
        c = self.recursive_c
        return {
            "achieved": {"k": self.k, "l": self.l, "t": self.t},
            "l_entropy": self.l_entropy,
            "recursive": {"l": self.recursive_l, "c": None if c is None else _finite(c)},
            "distance": self.distance,
            "sensitive": self.sensitive,
            "records": self.classes.n,
            "classes": self.classes.n_classes,
            "suppressed": self.classes.n_suppressed,
            **self.extra,
        }


def check(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str | None = None,
    *,
    distance: str = "auto",
    hierarchy: HierarchyLike | None = None,
    recursive_l: int | None = None,
) -> CheckResult:
    """k, distinct / entropy / recursive l and t of ``table``, from one grouping of its records.

    ``distance`` (auto: hierarchical with a ``hierarchy`` of the sensitive attribute, ordered for numbers,
    else equal) chooses the t-closeness distance. ``recursive_l`` (default: the achieved distinct l) is the l
    for which the smallest c of recursive (c, l)-diversity is reported.
    """
    classes = group(table, qi)
    if sensitive is None:
        return CheckResult(classes)
    if sensitive in qi:
        raise InvalidParameter(f"'{sensitive}' is both sensitive and a quasi-identifier: choose one role")
    sens = Sensitive.encode(table, sensitive, distance, hierarchy)
    pairs = histogram(classes.ids, sens.codes, classes.n_classes, sens.m)
    div = _Diversity.of(pairs, classes.sizes)
    rl = recursive_l if recursive_l is not None else max(int(div.distinct.min()), 1) if len(div.r1) else 1
    _check_l(rl, integer=True)
    return CheckResult(
        classes,
        sensitive,
        div.distinct,
        div.entropy,
        int(rl),
        div.c_for(int(rl)),
        _sparse(pairs, classes.sizes.astype(np.float64), sens),
        sens.distance,
    )


def k_anonymity(table: pd.DataFrame, qi: Sequence[str]) -> int:
    """Achieved k: the size of the smallest equivalence class (suppressed records excluded)."""
    return group(table, qi).k


def l_diversity(table: pd.DataFrame, qi: Sequence[str], sensitive: str, kind: str = "distinct") -> float:
    """Achieved l: ``distinct`` (fewest values in a class) or ``entropy`` (exp of the smallest entropy)."""
    if kind not in ("distinct", "entropy"):
        raise InvalidParameter(f"unknown l-diversity '{kind}': use distinct or entropy (or recursive_c)")
    res = check(table, qi, sensitive, distance="equal")
    value = res.l if kind == "distinct" else res.l_entropy
    return float(value) if value is not None else 0.0


def recursive_c(table: pd.DataFrame, qi: Sequence[str], sensitive: str, l: int) -> float:  # noqa: E741
    """Smallest integer c such that the table is recursive (c, l)-diverse (inf if a class has < l values)."""
    _check_l(l, integer=True)
    c = check(table, qi, sensitive, distance="equal", recursive_l=int(l)).recursive_c
    return c if c is not None else 1.0


def recursive_l(table: pd.DataFrame, qi: Sequence[str], sensitive: str, c: float) -> int:
    """Largest l such that the table is recursive (c, l)-diverse (0 if none)."""
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
        raise InvalidParameter(f"c must be a positive number (got {c!r}): e.g. c=3")
    classes = group(table, qi)
    sens = Sensitive.encode(table, sensitive, "equal")
    div = _Diversity.of(histogram(classes.ids, sens.codes, classes.n_classes, sens.m), classes.sizes)
    return int(div.l_for(float(c)).min()) if len(div.r1) else 0


def is_recursive_diverse(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    c: float,
    l: int,  # noqa: E741
) -> bool:
    """Whether every class has r₁ < c·(r_l + … + r_m) (Machanavajjhala et al. 2007, Definition 4.1)."""
    _check_l(l, integer=True)
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
        raise InvalidParameter(f"c must be a positive number (got {c!r}): e.g. c=3")
    return recursive_l(table, qi, sensitive, c) >= l


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
    best = np.minimum(best, _sparse(pairs, sizes, sens))  # E2 = T, |T| ≥ n
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
            dist = _dense(
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


# ----------------------------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class Coverage:
    """Released values that do not cover their record's original value: counts per column and the rows."""

    violations: int
    by_column: dict[str, int]
    rows: IntArray

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "violations": self.violations, "by_column": dict(self.by_column)}


def covers(
    original: pd.DataFrame,
    released: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, HierarchyLike] | None = None,
) -> Coverage:
    """Check that every generalised value covers its record (same row order in both tables).

    A ``lo-hi`` range must include the number, a ``|`` set or hierarchy label must contain the value, a
    masked code must share its prefix; ``*`` covers everything. Counts violating cells per column and
    lists the violating rows (positions, never values).
    """
    require_columns(original, qi, "original table")
    require_columns(released, qi, "released table")
    require_rows(original, "original table")
    if len(original) != len(released):
        raise InvalidParameter(
            f"the release has {len(released)} records and the original {len(original)}: give both in the "
            "same order, one released record per original record"
        )
    hierarchies = hierarchies or {}
    bad = np.zeros(len(original), dtype=bool)
    by_column: dict[str, int] = {}
    for c in qi:
        h = hierarchy_frame(hierarchies[c], c) if c in hierarchies else None
        miss: BoolArray = ~covered(original[c], released[c], h)
        by_column[c] = int(miss.sum())
        bad |= miss
    return Coverage(int(sum(by_column.values())), by_column, np.flatnonzero(bad).astype(np.int64))
