"""Mondrian's view of a quasi-identifier: ordered integer codes, and the width of a range of them.

Each quasi-identifier becomes integer codes: numbers by rank of value, categories in leaf order of their
hierarchy (a depth-first order, so every subtree is a contiguous code range) or, without one, in sorted order.
Categories are ordered deterministically, not by first appearance. Both the partitioning (``mondrian``) and
the published labels (``mondrian_labels``) work on these codes, so the type lives here, apart from both.

Width of a code range (the split-dimension score): numbers (hi−lo)/(max−min), ordered categories
(code span)/(m−1), tree categories the loss of the lowest common ancestor, (leaves under it − 1)/(leaves − 1)
with leaves counted in ``Hierarchy.table()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.hierarchy import FlatHierarchy, Hierarchy, infer_kind, raw_strings, refuse_missing
from privdb.errors import InvalidParameter

__all__ = ["Dimension", "IntArray", "encode"]

IntArray = NDArray[np.int64]


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


def _small_integers(column: pd.Series) -> tuple[NDArray[np.float64], NDArray[np.int32]] | None:
    """``np.unique(values, return_inverse=True)`` of a column of whole numbers spanning under 2²⁰ (an age, a
    year), by counting instead of sorting; None for other columns."""
    if not (isinstance(column.dtype, np.dtype) and column.dtype.kind in "iu") or len(column) == 0:
        return None
    x = column.to_numpy()
    lo, hi = int(x.min()), int(x.max())
    if hi - lo >= 1 << 20 or max(abs(lo), abs(hi)) >= 1 << 53:
        return None
    shifted = (x - lo).astype(np.int64)
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    rank = (np.cumsum(present) - 1).astype(np.int32)
    return (np.flatnonzero(present) + lo).astype(np.float64), rank[shifted]


def encode(column: pd.Series, hierarchy: Hierarchy | None, categorical: str = "auto") -> Dimension:
    """Codes for one quasi-identifier: numbers by value, categories along ``hierarchy`` or sorted."""
    name = str(column.name)
    numeric = hierarchy.numeric if hierarchy is not None else infer_kind(column) == "numeric"
    if numeric and not pd.api.types.is_bool_dtype(column):
        small = _small_integers(column)
        if small is not None:
            return Dimension(name, "num", small[1], raw_strings(small[0]), values=small[0])
        xv = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        nan = np.isnan(xv)
        if nan.any():
            refuse_missing(name, int(column.isna().sum()))
            raise InvalidParameter(
                f"quasi-identifier '{name}' is numeric but {int(nan.sum())} value(s) are not numbers: "
                "clean them, or give it a category hierarchy"
            )
        vals, inv = np.unique(xv, return_inverse=True)
        return Dimension(name, "num", inv.astype(np.int32), raw_strings(vals), values=vals)
    codes, uniq = pd.factorize(column, sort=True)
    refuse_missing(name, int((codes < 0).sum()))
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
