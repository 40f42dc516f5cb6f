"""t-closeness distances: the sensitive column encoded once, and each class's distance to the whole table.

Shared by the one-pass check (``models.check``) and (n, t)-closeness (``closeness``), so it imports neither.
A distance compares a class's sensitive distribution Q with the whole table's P (suppressed records
included: their sensitive values are published too) (Li, Li, Venkatasubramanian, ICDE 2007):

* Earth Mover's with equal ground distance, ½Σ|q−p| (equal to the variational distance of the course notes);
* ordered distance, (1/(m−1))Σᵢ|Σ_{j≤i}(q_j−p_j)| over the table's m sorted values (numbers by value,
  text in sorted order, as ARX orders a string attribute; ``auto`` chooses it for numbers only);
* hierarchical distance for a taxonomy: ground distance = height of the lowest common ancestor / H;
* the notes' Kullback–Leibler divergence D(Q‖P) = Σ q ln(q/p), which is not bounded by 1.

``class_distances`` works on the sparse class × value histogram only (a few ``bincount`` passes);
``row_distances`` on dense rows, for small domains and the regions of (n, t)-closeness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from privdb.anonymize._classes import (
    FloatArray,
    HierarchyLike,
    IntArray,
    Pairs,
    codes_of,
    hierarchy_frame,
    require_columns,
    text,
)
from privdb.errors import InvalidParameter

__all__ = ["DISTANCES", "Sensitive", "class_distances", "distance", "refuse_numbers_as_text", "row_distances"]

DISTANCES = ("auto", "equal", "variational", "ordered", "hierarchical", "kl")


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
        elif distance == "ordered":  # numbers by value, text in sorted order (as ARX orders strings)
            if not numeric:
                refuse_numbers_as_text(col, name)
            codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=False)
            m = len(uniques)
        else:
            codes, uniq = codes_of(col)
            m = len(uniq)
        codes = np.asarray(codes, dtype=np.int64)
        p = np.bincount(codes, minlength=m) / len(codes) if len(codes) else np.zeros(m)
        return cls(name, codes, m, p.astype(np.float64), distance, tree)


def refuse_numbers_as_text(col: pd.Series, name: str) -> None:
    """Refuse the ordered distance over text that is all numbers: sorted as text, '10' precedes '9'."""
    if len(col) and pd.to_numeric(col, errors="coerce").notna().all():
        raise InvalidParameter(
            f"'{name}' holds numbers read as text (not numeric), which the ordered distance would sort as "
            "text ('10' before '9'): convert the column to numbers first"
        )


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
    return float(row_distances(qq, pp, kind, tree)[0])


def row_distances(q: FloatArray, p: FloatArray, kind: str, tree: _Tree | None) -> FloatArray:
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


def class_distances(pairs: Pairs, sizes: FloatArray, sens: Sensitive) -> FloatArray:
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
