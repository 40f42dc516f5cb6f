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
