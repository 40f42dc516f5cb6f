"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), array-based.

Each quasi-identifier becomes integer codes: numbers by rank of value, categories in leaf order of their
hierarchy (a depth-first order, so every subtree is a contiguous code range) or, without one, in sorted order.
All partitions of one round are split together: records are kept grouped by partition, per-partition
minima/maxima come from ``reduceat``, medians from a (partition × code) histogram (or a sort when codes are
too many), and the next round's grouping from counting, not sorting. The loop runs O(log(n/k)) rounds.

* Dimension: the widest normalised range (numbers (hi−lo)/(max−min), ordered categories (code span)/(m−1),
  tree categories the loss of the lowest common ancestor); if it admits no allowable cut, the next one.
* Strict: cut between distinct values, at the boundary nearest the median; both sides need ≥ k records.
  Relaxed: the lower ⌊|P|/2⌋ records by value go left, ties shared; needs |P| ≥ 2k. Tree categories split
  into the children of the common ancestor, each child needing ≥ k.
* l-diversity and t-closeness are extra conditions every child must meet (LeFevre et al. 2006 §5;
  Machanavajjhala et al. 2007; Li et al. 2007), and so is an optional ``allowed(rows) -> bool``.

Unlike the reference implementation (qiyuangong/Mondrian, issue #5, which keeps the parent's bounds on
dimensions that were not cut), every published range is recomputed from the partition's own records, so a
range covers exactly its records, and categories are ordered deterministically, not by first appearance.

Information loss (``ncp``, Ghinita et al. 2007's NCP/GCP): the mean over records and quasi-identifiers of
(hi−lo)/(max−min) for numbers, (values in the set − 1)/(m − 1) for ordered categories, and
(leaves under the label − 1)/(leaves − 1) for hierarchy labels (leaves counted in ``Hierarchy.table()``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.hierarchy import FlatHierarchy, Hierarchy, infer_kind, raw_strings
from privdb.anonymize.release import GeneralizedColumn
from privdb.errors import InvalidParameter

__all__ = ["Dimension", "SensitiveCondition", "encode", "generalize", "partition"]

IntArray = NDArray[np.int64]
Allowed = Callable[[NDArray[np.int64]], bool]
_EPS = 1e-12


@dataclass(frozen=True)
class SensitiveCondition:
    """l-diversity and/or t-closeness of one sensitive attribute, over per-record codes ``codes``."""

    codes: NDArray[np.int64]
    m: int
    prior: NDArray[np.float64]
    l: float | None = None  # noqa: E741 (the field's notation)
    diversity: str = "distinct"
    c: float = 1.0
    t: float | None = None
    ordered: bool = False

    @classmethod
    def build(
        cls,
        column: pd.Series,
        *,
        l: float | None = None,  # noqa: E741
        diversity: str = "distinct",
        c: float | None = None,
        t: float | None = None,
    ) -> SensitiveCondition:
        if diversity not in ("distinct", "entropy", "recursive"):
            raise InvalidParameter(
                f"unknown l-diversity '{diversity}': use distinct, entropy or recursive (with c)"
            )
        if l is not None and l < 1:
            raise InvalidParameter(f"l must be at least 1 (got {l:g})")
        if diversity == "recursive" and l is not None and (c is None or c <= 0):
            raise InvalidParameter("recursive (c, l)-diversity needs c > 0, e.g. c=3")
        if t is not None and not 0 <= t <= 1:
            raise InvalidParameter(f"t must lie in 0..1 (got {t:g})")
        if column.isna().any():
            raise InvalidParameter(
                f"sensitive attribute '{column.name}' has {int(column.isna().sum())} missing value(s): "
                "fill or drop them first"
            )
        ordered = bool(pd.api.types.is_numeric_dtype(column)) and not pd.api.types.is_bool_dtype(column)
        codes, uniq = pd.factorize(column, sort=True)
        m = max(len(uniq), 1)
        prior = np.bincount(codes, minlength=m) / max(len(codes), 1)
        return cls(codes.astype(np.int64), m, prior, l, diversity, float(c or 1.0), t, ordered)

    @property
    def monotone_with_suppression(self) -> bool:
        return self.t is None and (self.l is None or self.diversity == "distinct")

    def histogram(
        self, groups: NDArray[np.int64], n_groups: int, rows: NDArray[np.int64] | None = None
    ) -> NDArray[np.int64]:
        """Counts of sensitive values per group; ``groups[i]`` is the group of record ``rows[i]``."""
        s = self.codes if rows is None else self.codes[rows]
        flat = np.bincount(groups * self.m + s, minlength=n_groups * self.m)
        return flat.reshape(n_groups, self.m)

    def ok(self, hist: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which classes (rows of ``hist``) satisfy every condition."""
        good = np.ones(len(hist), dtype=bool)
        size = hist.sum(axis=1)
        if self.l is not None:
            if self.diversity == "distinct":
                good &= (hist > 0).sum(axis=1) >= self.l
            elif self.diversity == "entropy":
                q = hist / np.maximum(size, 1)[:, None]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ent = -np.where(q > 0, q * np.log(q), 0.0).sum(axis=1)
                good &= ent >= np.log(self.l) - _EPS
            else:
                li = int(self.l)
                r = -np.sort(-hist, axis=1)
                tail = r[:, li - 1 :].sum(axis=1) if li <= self.m else np.zeros(len(hist))
                good &= (r[:, 0] < self.c * tail) & ((hist > 0).sum(axis=1) >= li)
        if self.t is not None:
            good &= self.emd(hist) <= self.t + _EPS
        return good

    def emd(self, hist: NDArray[np.int64]) -> NDArray[np.float64]:
        """Earth Mover's Distance of each class's distribution to the table's."""
        q = hist / np.maximum(hist.sum(axis=1), 1)[:, None]
        diff = q - self.prior[None, :]
        if self.ordered and self.m > 1:
            return np.asarray(np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / (self.m - 1))
        return np.asarray(0.5 * np.abs(diff).sum(axis=1))


@dataclass
class Dimension:
    """One quasi-identifier as ordered integer codes (see the module docstring)."""

    name: str
    kind: str  # "num", "ord" or "tree"
    codes: NDArray[np.int32]
    texts: NDArray[np.object_]  # raw text of each code
    values: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))  # "num": value of each code
    anc: IntArray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))  # "tree": level × code
    node_labels: list[NDArray[np.object_]] = field(default_factory=list)
    node_loss: list[NDArray[np.float64]] = field(default_factory=list)

    @property
    def ncodes(self) -> int:
        return len(self.texts)

    def width(self, lo: IntArray, hi: IntArray) -> NDArray[np.float64]:
        """Normalised width of code ranges [lo, hi] (the split-dimension score)."""
        if self.kind == "num":
            span = self.values[-1] - self.values[0]
            return (self.values[hi] - self.values[lo]) / span if span > 0 else np.zeros(len(lo))
        if self.kind == "ord":
            return (hi - lo) / max(self.ncodes - 1, 1)
        lvl = self.lca_level(lo, hi)
        return np.asarray(self.node_loss_at(lvl, self.anc[lvl, lo]), dtype=np.float64)

    def lca_level(self, lo: IntArray, hi: IntArray) -> IntArray:
        return np.asarray((self.anc[:, lo] != self.anc[:, hi]).sum(axis=0), dtype=np.int64)

    def node_loss_at(self, lvl: IntArray, node: IntArray) -> NDArray[np.float64]:
        out = np.zeros(len(lvl))
        for level in np.unique(lvl):
            sel = lvl == level
            out[sel] = self.node_loss[level][node[sel]]
        return out


def encode(column: pd.Series, hierarchy: Hierarchy | None, categorical: str = "auto") -> Dimension:
    """Codes for one quasi-identifier: numbers by value, categories along ``hierarchy`` or sorted."""
    name = str(column.name)
    numeric = hierarchy.numeric if hierarchy is not None else infer_kind(column) == "numeric"
    if numeric and not pd.api.types.is_bool_dtype(column):
        xv = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        nan = np.isnan(xv)
        if nan.any():
            missing = int(column.isna().sum())
            if missing:
                raise InvalidParameter(
                    f"quasi-identifier '{name}' has {missing} missing value(s): fill or drop them"
                )
            raise InvalidParameter(
                f"quasi-identifier '{name}' is numeric but {int(nan.sum())} value(s) are not numbers: "
                "clean them, or give it a category hierarchy"
            )
        vals, inv = np.unique(xv, return_inverse=True)
        return Dimension(name, "num", inv.astype(np.int32), raw_strings(vals), values=vals)
    codes, uniq = pd.factorize(column, sort=True)
    if (codes < 0).any():
        raise InvalidParameter(
            f"quasi-identifier '{name}' has {int((codes < 0).sum())} missing value(s): fill or drop them"
        )
    uniq_arr = np.asarray(uniq, dtype=object)
    use_tree = categorical == "tree" or (
        categorical == "auto" and hierarchy is not None and not isinstance(hierarchy, FlatHierarchy)
    )
    if not use_tree or hierarchy is None:
        return Dimension(name, "ord", codes.astype(np.int32), raw_strings(uniq_arr))
    levels = [pd.factorize(hierarchy.labels(uniq_arr, lv), sort=True) for lv in range(hierarchy.height + 1)]
    order = np.lexsort([lc for lc, _ in levels])  # top level is the primary key: depth-first leaf order
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    table = hierarchy.table()
    dom = max(len(table) - 1, 1)
    anc = np.stack([lc[order] for lc, _ in levels]).astype(np.int64)
    node_labels, node_loss = [], []
    for lv, (_, labs) in enumerate(levels):
        labs_arr = np.asarray(labs, dtype=object)
        leaves = table[f"level{lv}"].value_counts()
        counts = leaves.reindex(labs_arr.astype(str)).fillna(1).to_numpy(dtype=np.float64)
        node_labels.append(labs_arr)
        node_loss.append(np.zeros(len(labs_arr)) if lv == 0 else (counts - 1) / dom)
    return Dimension(
        name,
        "tree",
        rank[codes].astype(np.int32),
        raw_strings(uniq_arr[order]),
        anc=anc,
        node_labels=node_labels,
        node_loss=node_loss,
    )


def _first_index(sorted_ids: IntArray, n_groups: int) -> IntArray:
    return np.asarray(np.searchsorted(sorted_ids, np.arange(n_groups)), dtype=np.int64)


def _excl_cumsum(x: IntArray) -> IntArray:
    out = np.zeros(len(x), dtype=np.int64)
    np.cumsum(x[:-1], out=out[1:])
    return out


def _binary_cut(
    c: IntArray, pl: IntArray, size: IntArray, ncodes: IntArray, relaxed: NDArray[np.bool_]
) -> tuple[IntArray, IntArray]:
    """Two-way cuts of many partitions at once (numbers and ordered categories).

    ``pl`` (non-decreasing) is each record's partition, ``c`` its code on that partition's dimension,
    ``ncodes`` the code count of each partition's dimension. Returns each record's side (0 left, 1 right)
    and the left count per partition. Strict cuts fall between distinct values, nearest the median;
    relaxed cuts put the lower half left, sharing the median's ties.
    """
    q = len(size)
    off = _excl_cumsum(ncodes)
    flat = off[pl] + c
    target = size // 2
    total = int(off[-1] + ncodes[-1])
    if total <= max(2 * len(c), 1 << 16):
        h = np.bincount(flat, minlength=total)
        cf = np.cumsum(h)
        seg = np.repeat(np.arange(q), ncodes)
        cum = cf - (cf[off] - h[off])[seg]
        sz = size[seg]
        score = np.abs(2 * cum - sz)
        score[(cum == 0) | (cum == sz)] = np.iinfo(np.int64).max
        hit = np.flatnonzero(score == np.minimum.reduceat(score, off)[seg])
        first = hit[np.searchsorted(seg[hit], np.arange(q))]
        thr, left = first - off, cum[first]
        v = np.add.reduceat((cum < target[seg]).astype(np.int64), off)
        below = np.where(v > 0, cum[off + np.maximum(v - 1, 0)], 0)
    else:
        ks = np.sort(flat)
        start = _excl_cumsum(size)
        med = ks[start + size // 2] - off
        lo = np.searchsorted(ks, off + med, "left") - start
        hi = np.searchsorted(ks, off + med, "right") - start
        use_hi = (lo == 0) | ((hi < size) & (np.abs(2 * hi - size) < np.abs(2 * lo - size)))
        thr, left = np.where(use_hi, med, med - 1), np.where(use_hi, hi, lo)
        v = ks[start + target - 1] - off
        below = np.searchsorted(ks, off + v, "left") - start
    side = c > thr[pl]
    if relaxed.any():
        tie = c == v[pl]
        ct = np.cumsum(tie)
        firstrec = _first_index(pl, q)
        rank = ct - (ct[firstrec] - tie[firstrec])[pl] - 1
        side_r = (c > v[pl]) | (tie & (rank >= (target - below)[pl]))
        side = np.where(relaxed[pl], side_r, side)
        left = np.where(relaxed, target, left)
    return side.astype(np.int64), np.asarray(left, dtype=np.int64)


def _tree_cut(
    dim: Dimension, c: IntArray, pl: IntArray, lo: IntArray, hi: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Children of each partition's lowest common ancestor: slot per record, slot counts, group sizes."""
    lvl = dim.lca_level(lo, hi)
    child = dim.anc[lvl[pl] - 1, c]
    width = int(dim.anc.max()) + 1
    groups, ginv = np.unique(pl * width + child, return_inverse=True)
    gpart = groups // width
    gfirst = _first_index(gpart, len(lo))
    slot = ginv - gfirst[pl]
    return slot, np.bincount(gpart, minlength=len(lo)), np.bincount(ginv)


def partition(
    dims: Sequence[Dimension],
    k: int,
    *,
    strict: bool = True,
    condition: SensitiveCondition | None = None,
    allowed: Allowed | None = None,
) -> tuple[IntArray, IntArray]:
    """Mondrian's partitions: record ids grouped by partition, and the partition sizes."""
    n, d = len(dims[0].codes), len(dims)
    xa = np.ascontiguousarray(np.stack([dm.codes for dm in dims], axis=1))
    ida = np.arange(n, dtype=np.int64)
    sizes = np.array([n], dtype=np.int64)
    out_ids: list[IntArray] = []
    out_sizes: list[IntArray] = []
    is_tree = np.array([dm.kind == "tree" for dm in dims])
    is_num = np.array([dm.kind == "num" for dm in dims])
    ncodes = np.array([dm.ncodes for dm in dims], dtype=np.int64)
    while len(sizes):
        p = len(sizes)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        pid = np.repeat(np.arange(p), sizes)
        mins = np.minimum.reduceat(xa, starts, axis=0).astype(np.int64)
        maxs = np.maximum.reduceat(xa, starts, axis=0).astype(np.int64)
        wid = np.stack([dm.width(mins[:, j], maxs[:, j]) for j, dm in enumerate(dims)], axis=1)
        wid[mins == maxs] = -1.0
        wid[sizes < 2 * k] = -1.0
        rank = np.argsort(-wid, axis=1, kind="stable")
        done = np.zeros(p, dtype=bool)
        slot = np.zeros(len(pid), dtype=np.int64)
        nslots = np.zeros(p, dtype=np.int64)
        for r in range(d):
            dimsel = rank[:, r]
            cand = ~done & (wid[np.arange(p), dimsel] > 0)
            if not cand.any():
                break
            tree = is_tree[dimsel]
            groups = [(-1, np.flatnonzero(cand & ~tree))]
            groups += [(int(j), np.flatnonzero(cand & (dimsel == j))) for j in np.unique(dimsel[cand & tree])]
            for j, qs in groups:
                if not len(qs):
                    continue
                local = np.full(p, -1, dtype=np.int64)
                local[qs] = np.arange(len(qs))
                recs = np.flatnonzero(local[pid] >= 0)
                pl = local[pid[recs]]
                dq = dimsel[qs]
                c = np.take(xa.ravel(), recs * d + dq[pl]).astype(np.int64)
                if j >= 0:
                    s, ns, gsize = _tree_cut(dims[j], c, pl, mins[qs, j], maxs[qs, j])
                    gfirst = _excl_cumsum(ns)
                    ok = np.minimum.reduceat(gsize, gfirst) >= k
                    gid = gfirst[pl] + s
                else:
                    relaxed = np.zeros(len(qs), dtype=bool) if strict else is_num[dq]
                    s, left = _binary_cut(c, pl, sizes[qs], ncodes[dq], relaxed)
                    ns = np.full(len(qs), 2, dtype=np.int64)
                    ok = (left >= k) & (sizes[qs] - left >= k)
                    gfirst = 2 * np.arange(len(qs))
                    gid = 2 * pl + s
                if condition is not None:
                    hist = condition.histogram(gid, int(ns.sum()), ida[recs])
                    ok &= np.minimum.reduceat(condition.ok(hist).astype(np.int64), gfirst) > 0
                if allowed is not None:
                    ok &= _call_allowed(allowed, ida[recs], gid, gfirst, ok)
                won = qs[ok]
                done[won] = True
                nslots[won] = ns[ok]
                take = ok[pl]
                slot[recs[take]] = s[take]
        fin = ~done[pid]
        out_ids.append(ida[fin])
        out_sizes.append(sizes[~done])
        alive = np.flatnonzero(~fin)
        xa = np.take(xa, alive, axis=0)
        ida, pid, slot = ida[alive], pid[alive], slot[alive]
        width = int(nslots.max()) if done.any() else 0
        if width == 0:
            break
        cnt = np.bincount(pid * width + slot, minlength=p * width)
        offset = _excl_cumsum(cnt)
        first = _first_index(pid, p)
        inv = np.empty(len(pid), dtype=np.int64)  # inv[new position] = old position
        for sv in range(width):
            m = slot == sv
            cs = np.concatenate([[0], np.cumsum(m)])
            idx = np.flatnonzero(m)
            pi = pid[idx]
            inv[offset[pi * width + sv] + cs[idx] - cs[first[pi]]] = idx
        xa = np.take(xa, inv, axis=0)
        ida, sizes = ida[inv], cnt[cnt > 0]
    return np.concatenate(out_ids), np.concatenate(out_sizes)


def _call_allowed(
    allowed: Allowed, rows: IntArray, gid: IntArray, gfirst: IntArray, ok: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """The user's ``allowed(rows)`` on every child of each still-allowed cut (a Python loop: slow path)."""
    order = np.argsort(gid, kind="stable")
    bounds = np.searchsorted(gid[order], np.arange(int(gid.max()) + 2))
    res = ok.copy()
    gend = np.append(gfirst[1:], bounds.size - 1)
    for qi in np.flatnonzero(ok):
        for g in range(int(gfirst[qi]), int(gend[qi])):
            if not allowed(rows[order[bounds[g] : bounds[g + 1]]]):
                res[qi] = False
                break
    return res


def _labels(
    dm: Dimension, lo: IntArray, hi: IntArray, xs: IntArray, starts: IntArray
) -> tuple[IntArray, NDArray[np.object_], NDArray[np.float64]]:
    """Per partition: a label code, the labels, and the loss of each partition's label."""
    if dm.kind == "num":
        pair, inv = np.unique(lo * dm.ncodes + hi, return_inverse=True)
        a, b = pair // dm.ncodes, pair % dm.ncodes
        labels = np.array(
            [dm.texts[x] if x == y else f"{dm.texts[x]}-{dm.texts[y]}" for x, y in zip(a, b, strict=True)],
            dtype=object,
        )
        span = dm.values[-1] - dm.values[0]
        loss = (dm.values[b] - dm.values[a]) / span if span > 0 else np.zeros(len(a))
        return inv, labels, loss
    if dm.kind == "tree":
        lvl = dm.lca_level(lo, hi)
        node = dm.anc[lvl, lo]
        top = int(dm.anc.max()) + 1
        pair, inv = np.unique(lvl * top + node, return_inverse=True)
        pl, pn = pair // top, pair % top
        labels = np.array([dm.node_labels[lv][n] for lv, n in zip(pl, pn, strict=True)], dtype=object)
        return inv, labels, dm.node_loss_at(pl, pn)
    # ordered categories: the set of values present, as a bit mask (or a tuple beyond 63 values)
    pid = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(xs))))
    if dm.ncodes <= 63:
        mask = np.bitwise_or.reduceat(np.left_shift(np.int64(1), xs), starts)
        uniq, inv = np.unique(mask, return_inverse=True)
        sets = [[i for i in range(dm.ncodes) if (int(u) >> i) & 1] for u in uniq]
    else:
        pairs = np.unique(pid * dm.ncodes + xs)
        bounds = np.searchsorted(pairs // dm.ncodes, np.arange(len(starts) + 1))
        keys = [tuple((pairs[bounds[i] : bounds[i + 1]] % dm.ncodes).tolist()) for i in range(len(starts))]
        codes_f, uniq_keys = pd.factorize(pd.Series(keys, dtype=object))
        inv = codes_f.astype(np.int64)
        sets = [list(key) for key in uniq_keys]
    labels = np.array(["|".join(dm.texts[s].tolist()) for s in sets], dtype=object)
    loss = np.array([(len(s) - 1) / max(dm.ncodes - 1, 1) for s in sets])
    return np.asarray(inv, dtype=np.int64), labels, loss


def generalize(
    dims: Sequence[Dimension], ids: IntArray, sizes: IntArray
) -> tuple[list[GeneralizedColumn], float]:
    """Released columns of the partitions (ranges from each partition's own records) and their NCP."""
    n = len(ids)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    part = np.empty(n, dtype=np.int64)
    part[ids] = np.repeat(np.arange(len(sizes)), sizes)
    cols: list[GeneralizedColumn] = []
    total = 0.0
    for dm in dims:
        xs = dm.codes[ids].astype(np.int64)
        lo = np.minimum.reduceat(xs, starts)
        hi = np.maximum.reduceat(xs, starts)
        inv, labels, loss = _labels(dm, lo, hi, xs, starts)
        total += float((loss[inv] * sizes).sum())
        cols.append(GeneralizedColumn(inv[part], labels))
    return cols, total / max(n * len(dims), 1)
