"""Interval-looking labels of a taxonomy, checked against the raw values under them.

A taxonomy's labels are published as they are, and readers (``privdb check``, an analyst) read a label
``lo-hi`` as the inclusive range it spells. ARX's shipped age hierarchy for Adult puts 5 under ``0-4``, 40
under ``35-39`` and 60 under ``40-59``: a release at those levels publishes ranges that exclude some of their
own records. So every ``lo-hi`` label above level 0 must hold the numbers under it; ``contradictions`` lists
the rows where one does not, and ``relabelled`` (``--fix-labels``) renames each such label to the span
``min-max`` of the values under it, keeping the tree as it is (labels that already hold their values stay).
Raw values that are not numbers are not judged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import FloatArray
from privdb.anonymize.cells import parse_intervals
from privdb.errors import InvalidParameter

__all__ = ["contradictions", "describe", "relabelled"]

ObjArray = NDArray[np.object_]
_SHOWN = 8


def _numbers(matrix: ObjArray) -> FloatArray:
    return np.asarray(pd.to_numeric(pd.Series(matrix[:, 0], dtype=object), errors="coerce"), dtype=np.float64)


def _excluded(matrix: ObjArray, level: int, x: FloatArray) -> NDArray[np.bool_]:
    lo, hi = parse_intervals(matrix[:, level])
    with np.errstate(invalid="ignore"):
        return np.asarray(~np.isnan(lo) & ~np.isnan(x) & ((x < lo) | (x > hi)), dtype=bool)


def contradictions(matrix: ObjArray) -> list[tuple[int, int]]:
    """(row, level) of each ``lo-hi`` label that excludes its row's raw value, by row."""
    x = _numbers(matrix)
    found = [
        (int(r), lv) for lv in range(1, matrix.shape[1]) for r in np.flatnonzero(_excluded(matrix, lv, x))
    ]
    return sorted(found)


def describe(name: str, matrix: ObjArray, bad: list[tuple[int, int]]) -> str:
    """The refusal: which rows, which labels, and the two ways out."""
    rows = sorted({r for r, _ in bad})
    shown = "; ".join(
        f"row {r + 1} ({';'.join(str(v) for v in matrix[r])}): "
        + ", ".join(f"{matrix[r, 0]} is not in '{matrix[r, lv]}'" for rr, lv in bad if rr == r)
        for r in rows[:_SHOWN]
    )
    more = f"; and {len(rows) - _SHOWN} more row(s)" if len(rows) > _SHOWN else ""
    return (
        f"hierarchy for '{name}' has interval labels that exclude their own values, so a release would "
        f"publish ranges that do not hold its records ({len(rows)} row(s)): {shown}{more}. Correct the "
        "labels in the file, or pass fix_labels=True (CLI: --fix-labels) to rename each such label to the "
        "span of the values under it"
    )


def relabelled(name: str, matrix: ObjArray) -> ObjArray:
    """``matrix`` with every contradicting ``lo-hi`` label renamed ``min-max`` of the values under it."""
    out = matrix.copy()
    x = _numbers(matrix)
    for level in range(1, matrix.shape[1]):
        col = matrix[:, level]
        for label in pd.unique(col[_excluded(matrix, level, x)]):
            under = col == label
            values = x[under]
            if np.isnan(values).any():
                raise InvalidParameter(
                    f"hierarchy for '{name}': label '{label}' (level {level}) holds values that are not "
                    "numbers, so no range can replace it; correct the file by hand"
                )
            span = "-".join(np.format_float_positional(v, trim="-") for v in (values.min(), values.max()))
            if span in set(col[~under]):
                raise InvalidParameter(
                    f"hierarchy for '{name}': renaming '{label}' (level {level}) to '{span}' would merge it "
                    "with another label of that level; correct the file by hand"
                )
            out[under, level] = span
    return out
