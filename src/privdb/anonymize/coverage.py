"""Coverage of a release: does every generalised value still cover its record's original value?

Not a privacy model but a correctness check of any anonymiser's output (privdb's or another's), run by the
anonymisation report beside the model checks: a ``lo-hi`` range that misses its number, or a label whose
leaves do not hold the value, publishes a wrong record. The label parsing it relies on is in ``_classes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import BoolArray, HierarchyLike, IntArray, hierarchy_frame, require_release_of
from privdb.anonymize.cells import CellPairs, covered

__all__ = ["Coverage", "covers"]


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
    *,
    pairs: Mapping[str, CellPairs] | None = None,
) -> Coverage:
    """Check that every generalised value covers its record (same row order in both tables).

    A ``lo-hi`` range must include the number, a ``|`` set or hierarchy label must contain the value, a
    masked code must share its prefix; ``*`` covers everything. Counts violating cells per column and
    lists the violating rows (positions, never values). ``pairs``: ``cell_pairs`` of some columns, made
    already.
    """
    require_release_of(original, released, qi)
    hierarchies = hierarchies or {}
    bad = np.zeros(len(original), dtype=bool)
    by_column: dict[str, int] = {}
    for c in qi:
        h = hierarchy_frame(hierarchies[c], c) if c in hierarchies else None
        miss: BoolArray = ~covered(original[c], released[c], h, (pairs or {}).get(c))
        by_column[c] = int(miss.sum())
        bad |= miss
    return Coverage(int(sum(by_column.values())), by_column, np.flatnonzero(bad).astype(np.int64))
