"""Mondrian's output: each partition's published label per quasi-identifier, and the information loss.

Unlike the reference implementation (qiyuangong/Mondrian, issue #5, which keeps the parent's bounds on
dimensions that were not cut), every published range is recomputed from the partition's own records, so a
range covers exactly its records: numbers as ``lo-hi`` (one value alone), tree categories as the label of
the lowest common ancestor, ordered categories as the set of values present joined by ``|``.

Information loss (``ncp``, Ghinita et al. 2007's NCP/GCP): the mean over records and quasi-identifiers of
(hi−lo)/(max−min) for numbers, (values in the set − 1)/(m − 1) for ordered categories, and
(leaves under the label − 1)/(leaves − 1) for hierarchy labels (leaves counted in ``Hierarchy.table()``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.mondrian_codes import Dimension, IntArray
from privdb.anonymize.release import GeneralizedColumn
from privdb.anonymize.side_by_side import each_column

__all__ = ["generalize"]


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
    # ordered categories: the set of values present, as a bit mask (several words beyond 63 values)
    if dm.ncodes <= 63:
        mask = np.bitwise_or.reduceat(np.left_shift(np.int64(1), xs), starts)
        uniq, inv = np.unique(mask, return_inverse=True)
        sets = [[i for i in range(dm.ncodes) if (int(u) >> i) & 1] for u in uniq]
        labels = np.array(["|".join(dm.texts[s].tolist()) for s in sets], dtype=object)
        loss = np.array([(len(s) - 1) / max(dm.ncodes - 1, 1) for s in sets])
        return np.asarray(inv, dtype=np.int64), labels, loss
    pid = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(xs))))
    if len(starts) * (dm.ncodes // 64 + 1) <= _MAX_WORDS:
        inv, row, code = _word_sets(xs, pid, len(starts), dm.ncodes)
    else:
        pairs = np.unique(pid * dm.ncodes + xs)
        bounds = np.searchsorted(pairs // dm.ncodes, np.arange(len(starts) + 1))
        keys = [tuple((pairs[bounds[i] : bounds[i + 1]] % dm.ncodes).tolist()) for i in range(len(starts))]
        codes_f, uniq_keys = pd.factorize(pd.Series(keys, dtype=object))
        inv = codes_f.astype(np.int64)
        row = np.repeat(np.arange(len(uniq_keys)), [len(key) for key in uniq_keys])
        code = np.fromiter((c for key in uniq_keys for c in key), np.int64, len(row))
    count = np.bincount(row, minlength=int(inv.max()) + 1 if len(inv) else 0)
    return inv, _joined(dm.texts, code, count), (count - 1) / max(dm.ncodes - 1, 1)


_MAX_WORDS = 1 << 23  # 64 MB of bit masks at most: (partitions × words per mask)
_MAX_BITS = 1 << 24  # bits unpacked at once when the masks are read back


def _word_sets(xs: IntArray, pid: IntArray, p: int, m: int) -> tuple[IntArray, IntArray, IntArray]:
    """Each partition's set of codes (``xs``, partition ``pid``, ``p`` partitions, codes below ``m``) as a
    row of 64-bit words: the sets numbered in order of first appearance, and the members (row, code) of
    each distinct set, codes ascending."""
    width = (m + 63) // 64
    words = np.zeros(p * width, dtype=np.uint64)
    np.bitwise_or.at(words, pid * width + xs // 64, np.left_shift(np.uint64(1), (xs % 64).astype(np.uint64)))
    grid = words.reshape(p, width)
    key = np.zeros(p, dtype=np.int64)
    for w in range(width):  # one key per distinct row, renumbered word by word (no overflow)
        col, ucol = pd.factorize(grid[:, w])
        key = pd.factorize(key * len(ucol) + col)[0].astype(np.int64)
    inv = key
    first = np.zeros(int(inv.max()) + 1, dtype=np.int64)
    first[inv[::-1]] = np.arange(p)[::-1]
    reps = grid[first]
    rows, codes = [], []
    step = max(1, _MAX_BITS // (64 * width))
    for lo in range(0, len(reps), step):
        chunk = reps[lo : lo + step].astype("<u8")  # bytes low to high on any machine
        bits = np.unpackbits(chunk.view(np.uint8), axis=1, bitorder="little")
        r, c = np.nonzero(bits)
        rows.append(r + lo)
        codes.append(c)
    return inv, np.concatenate(rows).astype(np.int64), np.concatenate(codes).astype(np.int64)


def _joined(texts: NDArray[np.object_], code: IntArray, count: IntArray) -> NDArray[np.object_]:
    """For each set, the texts of its ``count`` members (``code``, set by set) joined by ``|``: one join of
    every member, then one slice per set."""
    members = texts[code].tolist()
    size = np.fromiter(map(len, members), np.int64, len(members)) + 1
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    last = first + count - 1
    big = "|".join(members)
    out = np.empty(len(count), dtype=object)
    out[:] = [
        big[a:b] for a, b in zip(start[first].tolist(), (start[last] + size[last] - 1).tolist(), strict=True)
    ]
    return out


def generalize(
    dims: Sequence[Dimension], ids: IntArray, sizes: IntArray
) -> tuple[list[GeneralizedColumn], float]:
    """Released columns of the partitions (ranges from each partition's own records) and their NCP."""
    n = len(ids)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    part = np.empty(n, dtype=np.int64)
    part[ids] = np.repeat(np.arange(len(sizes)), sizes)

    def one(dm: Dimension) -> tuple[GeneralizedColumn, float]:
        xs = dm.codes[ids].astype(np.int64)
        lo = np.minimum.reduceat(xs, starts)
        hi = np.maximum.reduceat(xs, starts)
        inv, labels, loss = _labels(dm, lo, hi, xs, starts)
        return GeneralizedColumn(inv[part], labels), float((loss[inv] * sizes).sum())

    done = each_column(one, dims)
    total = 0.0
    for _, column_loss in done:  # added in the columns' order (not sum(): Python 3.12's compensates)
        total += column_loss
    return [column for column, _ in done], total / max(n * len(dims), 1)
