"""One quasi-identifier as the generalisation lattice reads it (``privdb.anonymize.lattice``).

Each distinct value gets a code; per hierarchy level, each code a group (the level's label) and each group
its cost in ARX's loss, (leaves under the label − 1) / (leaves − 1), leaves counted in ``Hierarchy.table()``
(0 at level 0). The lattice keys a node's classes by the groups of its levels, read through the value codes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.hierarchy import STAR, Hierarchy, refuse_missing

__all__ = ["QiLevels"]

IntArray = NDArray[np.int64]


class QiLevels:
    """One quasi-identifier encoded for the lattice: value codes and, per level, group codes and costs.
    A missing value is refused, or with ``missing_as_star`` (SafePub's public hierarchies) is ``*`` at
    every level, like a value the hierarchy does not list: no refusal depends on the private rows."""

    def __init__(self, column: pd.Series, hierarchy: Hierarchy, missing_as_star: bool = False) -> None:
        codes, uniq = pd.factorize(column)
        absent = int((codes < 0).sum())
        if not missing_as_star:  # code -1 would read the last value's groups: a made-up value
            refuse_missing(column.name, absent)
        self.codes = np.where(codes < 0, len(uniq), codes).astype(np.int64)  # missing: one more code, * below
        uniq_arr = np.asarray(uniq, dtype=object)
        table = hierarchy.table()
        dom = max(len(table) - 1, 1)
        self.leaves = max(len(table), 1)  # ARX's domain share of a label: its leaves / this (cost·dom + 1)
        self.height = hierarchy.height
        self.groups: list[IntArray] = []
        self.labels: list[NDArray[np.object_]] = []
        self.cost: list[NDArray[np.float64]] = []
        for lv in range(hierarchy.height + 1):
            lab = hierarchy.labels(uniq_arr, lv)
            lab = np.append(np.asarray(lab, dtype=object), STAR) if absent else lab
            g, glab = pd.factorize(lab)
            leaves = table[f"level{lv}"].value_counts()
            cnt = leaves.reindex(np.asarray(glab, dtype=object).astype(str)).fillna(1).to_numpy(np.float64)
            self.groups.append(g.astype(np.int64))
            self.labels.append(np.asarray(glab, dtype=object))
            self.cost.append(np.zeros(len(glab)) if lv == 0 else (cnt - 1) / dom)
