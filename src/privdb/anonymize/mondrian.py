"""Mondrian multidimensional k-anonymity (LeFevre, DeWitt, Ramakrishnan, ICDE 2006): the partitioning.

Works on the quasi-identifiers' integer codes (``mondrian_codes``); the partitions' published labels and
their loss are ``mondrian_labels``'s. All partitions of one round are split together: records are kept
grouped by partition, per-partition minima/maxima come from ``reduceat``, medians from a (partition × code)
histogram (or a sort when codes are too many), and the next round's grouping from counting, not sorting.
The loop runs O(log(n/k)) rounds.

* Dimension: the widest normalised range (``Dimension.width``); if it admits no allowable cut, the next one.
* Strict: cut between distinct values, at the boundary nearest the median; both sides need ≥ k records.
  Relaxed: the lower ⌊|P|/2⌋ records by value go left, ties shared; needs |P| ≥ 2k. Tree categories split
  into the children of the common ancestor, each child needing ≥ k.
* l-diversity and t-closeness are extra conditions every child must meet (LeFevre et al. 2006 §5;
  Machanavajjhala et al. 2007; Li et al. 2007; ``sensitive_condition``), and so is an optional
  ``allowed(rows) -> bool``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from privdb.anonymize.mondrian_codes import Dimension, IntArray
from privdb.anonymize.sensitive_condition import SensitiveCondition

__all__ = ["partition"]

Allowed = Callable[[NDArray[np.int64]], bool]


def _first_index(sorted_ids: IntArray, n_groups: int) -> IntArray:
    return np.asarray(np.searchsorted(sorted_ids, np.arange(n_groups)), dtype=np.int64)


def _excl_cumsum(x: IntArray) -> IntArray:
    out = np.zeros(len(x), dtype=np.int64)
    np.cumsum(x[:-1], out=out[1:])
    return out


def _binary_cut(
    c: IntArray, pl: IntArray, size: IntArray, lo: IntArray, hi: IntArray, relaxed: NDArray[np.bool_]
) -> tuple[IntArray, IntArray]:
    """Two-way cuts of many partitions at once (numbers and ordered categories).

    ``pl`` (non-decreasing) is each record's partition, ``c`` its code on that partition's dimension,
    ``lo``/``hi`` the least and greatest such code in each partition. Returns each record's side (0 left,
    1 right) and the left count per partition. Strict cuts fall between distinct values, nearest the
    median; relaxed cuts put the lower half left, sharing the median's ties. The medians come from one
    histogram over every partition's own code range [lo, hi] (codes are ranks, so a counting pass), or from
    one sort when those ranges together are much longer than the records.
    """
    q = len(size)
    span = hi - lo + 1
    off = _excl_cumsum(span)
    flat = (off - lo)[pl] + c  # the bin of the record's code in its partition's range
    target = size // 2
    total = int(off[-1] + span[-1])
    if total <= max(4 * len(c), 1 << 16):
        h = np.bincount(flat, minlength=total)
        cf = np.cumsum(h)
        seg = np.repeat(np.arange(q), span)
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
        ks = np.sort(flat.astype(np.int32) if total < 1 << 31 else flat)
        start = _excl_cumsum(size)
        med = ks[start + size // 2] - off
        lo_n = np.searchsorted(ks, off + med, "left") - start
        hi_n = np.searchsorted(ks, off + med, "right") - start
        use_hi = (lo_n == 0) | ((hi_n < size) & (np.abs(2 * hi_n - size) < np.abs(2 * lo_n - size)))
        thr, left = np.where(use_hi, med, med - 1), np.where(use_hi, hi_n, lo_n)
        v = ks[start + target - 1] - off
        below = np.searchsorted(ks, off + v, "left") - start
    thr, v = thr + lo, v + lo  # back from positions in the range to codes
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
    xa = _stacked(dims)
    ida = np.arange(n, dtype=np.int64)
    sizes = np.array([n], dtype=np.int64)
    out_ids: list[IntArray] = []
    out_sizes: list[IntArray] = []
    is_tree = np.array([dm.kind == "tree" for dm in dims])
    is_num = np.array([dm.kind == "num" for dm in dims])
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
        won_counts: list[tuple[IntArray, IntArray, IntArray]] = []  # the cuts made: partitions, slots, counts
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
                if len(qs) == p:  # every partition: all records, no selection to make
                    recs, pl = np.arange(len(pid)), pid
                else:
                    local = np.full(p, -1, dtype=np.int64)
                    local[qs] = np.arange(len(qs))
                    recs = np.flatnonzero(local[pid] >= 0)
                    pl = local[pid[recs]]
                dq = dimsel[qs]
                c = np.take(xa.ravel(), recs * d + dq[pl])  # narrow codes: comparisons and sums widen
                if j >= 0:
                    s, ns, gsize = _tree_cut(dims[j], c, pl, mins[qs, j], maxs[qs, j])
                    gfirst = _excl_cumsum(ns)
                    ok = np.minimum.reduceat(gsize, gfirst) >= k
                else:
                    relaxed = np.zeros(len(qs), dtype=bool) if strict else is_num[dq]
                    s, left = _binary_cut(c, pl, sizes[qs], mins[qs, dq], maxs[qs, dq], relaxed)
                    ns = np.full(len(qs), 2, dtype=np.int64)
                    ok = (left >= k) & (sizes[qs] - left >= k)
                    gfirst = 2 * np.arange(len(qs))
                    gsize = np.stack([left, sizes[qs] - left], axis=1).ravel()
                if condition is not None or allowed is not None:
                    gid = gfirst[pl] + s  # each record's child, numbered across the group
                    if condition is not None:
                        hist = condition.histogram(gid, int(ns.sum()), ida[recs])
                        ok &= np.minimum.reduceat(condition.ok(hist).astype(np.int64), gfirst) > 0
                    if allowed is not None:
                        ok &= _call_allowed(allowed, ida[recs], gid, gfirst, ok)
                won = qs[ok]
                done[won] = True
                nslots[won] = ns[ok]
                won_counts.append(_slot_counts(won, ns[ok], gsize, gfirst[ok]))
                if ok.all():
                    slot[recs] = s
                else:
                    take = ok[pl]
                    slot[recs[take]] = s[take]
        fin = ~done[pid]
        out_ids.append(ida[fin])
        out_sizes.append(sizes[~done])
        width = int(nslots.max()) if done.any() else 0
        if width == 0:
            break
        alive = np.flatnonzero(~fin)
        cnt = np.zeros(p * width, dtype=np.int64)
        for won, sv, counts in won_counts:
            cnt[won * width + sv] = counts
        order = _regroup(slot[alive], width, cnt)
        order = alive[order]
        xa, ida, sizes = _take_rows(xa, order), ida[order], cnt[cnt > 0]
    return np.concatenate(out_ids), np.concatenate(out_sizes)


def _stacked(dims: Sequence[Dimension]) -> NDArray[np.unsignedinteger]:
    """The codes as one record-per-row array of the narrowest unsigned type that holds them: every round
    gathers and reduces these rows, so fewer bytes per row is less memory traffic."""
    top = max(dm.ncodes for dm in dims)
    kind = np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.uint32
    xa = np.empty((len(dims[0].codes), len(dims)), dtype=kind)
    for j, dm in enumerate(dims):
        xa[:, j] = dm.codes
    return xa


def _take_rows(xa: NDArray[np.unsignedinteger], rows: IntArray) -> NDArray[np.unsignedinteger]:
    """``xa[rows]``, each row moved as one opaque item (one copy per row, not one per cell)."""
    whole = np.dtype((np.void, xa.shape[1] * xa.dtype.itemsize))
    return np.take(xa.view(whole).ravel(), rows).view(xa.dtype).reshape(len(rows), xa.shape[1])


def _slot_counts(
    won: IntArray, ns: IntArray, gsize: IntArray, gfirst: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Per child of the partitions ``won`` (``ns`` children each, their sizes at ``gsize[gfirst:]``): its
    partition, its slot and its size, so the regrouping need not count the records again."""
    part = np.repeat(won, ns)
    sv = np.arange(len(part)) - np.repeat(_excl_cumsum(ns), ns)
    return part, sv, gsize[np.repeat(gfirst, ns) + sv]


def _regroup(slot: IntArray, width: int, cnt: IntArray) -> IntArray:
    """The stable order of records by (partition, slot), given the count of each (partition, slot) pair.

    The records come grouped by partition, so those of one slot value, in their order, are too: the j-th
    of them goes to j plus the records of the other slots placed before its partition's
    block of this slot (a counting sort, no per-partition loop, no per-record lookup of its partition).
    """
    offset = _excl_cumsum(cnt).reshape(-1, width)
    per_slot = cnt.reshape(-1, width)
    order = np.empty(len(slot), dtype=np.int64)
    for sv in range(width):
        idx = np.flatnonzero(slot == sv)  # grouped by partition, per_slot[:, sv] records each
        shift = offset[:, sv] - _excl_cumsum(per_slot[:, sv])
        order[np.arange(len(idx)) + np.repeat(shift, per_slot[:, sv])] = idx
    return order


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
