"""Choosing one hierarchy per quasi-identifier: the given ones validated, the rest automatic.

``automatic`` picks intervals for numbers, masking for digit codes and flat for the rest. ``validated`` names
the values a given hierarchy misses, or (with ``fallback=True``) gives each of them its own branch: the raw
value up to level H−1 and ``*`` at H, which keeps the tree property and never merges it with a foreign label.
``load_hierarchies`` reads a directory of ARX files (``<column>.csv``), checking their interval labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize.hierarchy import (
    STAR,
    DateHierarchy,
    FlatHierarchy,
    Hierarchy,
    IntervalHierarchy,
    MaskHierarchy,
    ObjArray,
    TaxonomyHierarchy,
    infer_kind,
    numbers_of,
    raw_strings,
)
from privdb.errors import InvalidParameter, UnknownColumn

__all__ = ["FallbackHierarchy", "automatic", "load_hierarchies", "resolve", "validated"]


def automatic(column: pd.Series, kind: str | None = None) -> Hierarchy:
    """The hierarchy privdb builds when none is given: intervals, masking, dates or flat."""
    name = str(column.name)
    kind = kind or infer_kind(column)
    values = column.dropna().to_numpy()
    if kind in ("numeric", "intervals"):
        return IntervalHierarchy.derived(name, values)
    if kind in ("code", "mask"):
        return MaskHierarchy.derived(name, values)
    if kind == "date":
        return DateHierarchy(name, pd.unique(values))
    if kind in ("category", "flat"):
        return FlatHierarchy(name, pd.unique(values))
    raise InvalidParameter(
        f"unknown hierarchy kind '{kind}' for '{name}': use intervals, mask, date or flat, or a Hierarchy"
    )


def validated(hierarchy: Hierarchy, column: pd.Series, *, fallback: bool = False) -> Hierarchy:
    """``hierarchy`` if it labels every value of ``column``; else a clear error, or with ``fallback`` a
    taxonomy extended by one branch per missing value."""
    miss = hierarchy.missing(column.dropna().to_numpy())
    if len(miss) == 0:
        return hierarchy
    names = sorted(raw_strings(miss).tolist())
    if fallback and isinstance(hierarchy, TaxonomyHierarchy):
        return hierarchy.with_branches(names)
    if fallback:
        return FallbackHierarchy(hierarchy, names)
    shown = ", ".join(repr(v) for v in names[:5]) + (" …" if len(names) > 5 else "")
    known = len(np.asarray(hierarchy.domain))
    raise InvalidParameter(
        f"hierarchy for '{hierarchy.name}' ({known} value(s), {hierarchy.height} level(s)) misses "
        f"{len(names)} value(s) of the column: {shown}. Add a row for each to the hierarchy file, or pass "
        "fallback=True (CLI: --hierarchy-fallback) to give them automatic levels"
    )


class FallbackHierarchy(Hierarchy):
    """A hierarchy plus own branches (raw value up to level H−1, ``*`` at H) for values it misses."""

    def __init__(self, base: Hierarchy, extra: Sequence[str]) -> None:
        super().__init__(base.name, base.height)
        self.base = base
        self.numeric = base.numeric
        self.domain = np.concatenate([raw_strings(np.asarray(base.domain)), np.asarray(extra, dtype=object)])

    def labels(self, values: Any, level: int) -> ObjArray:
        out = self.base.labels(values, level)
        miss = pd.isna(out)
        if miss.any():
            raw = raw_strings(np.asarray(values)[miss])
            out[miss] = raw if level < self.height else STAR
        return out


def load_hierarchies(
    directory: str | Path, columns: Sequence[str], *, fix_labels: bool = False
) -> dict[str, Hierarchy]:
    """``<column>.csv`` taxonomies from ``directory`` for the given columns (those without a file are left
    to ``automatic``); ``fix_labels`` renames ``lo-hi`` labels that exclude their values (``labels``)."""
    d = Path(directory)
    if not d.is_dir():
        raise InvalidParameter(f"hierarchy directory '{d}' does not exist: pass a directory of <column>.csv")
    return {
        c: TaxonomyHierarchy.from_csv(d / f"{c}.csv", c, fix_labels=fix_labels)
        for c in columns
        if (d / f"{c}.csv").is_file()
    }


def resolve(
    df: pd.DataFrame,
    qi: Sequence[str],
    given: Mapping[str, Hierarchy | str] | None,
    *,
    fallback: bool = False,
) -> dict[str, Hierarchy]:
    """One validated hierarchy per quasi-identifier: given ones checked, the rest automatic."""
    given = dict(given or {})
    unknown = [c for c in given if c not in qi]
    if unknown:
        raise UnknownColumn(
            f"hierarchies given for {unknown}, which are not quasi-identifiers {list(qi)}: "
            "drop them or add the columns to the quasi-identifiers"
        )
    out: dict[str, Hierarchy] = {}
    for c in qi:
        h = given.get(c)
        col = df[c]
        if h is None or isinstance(h, str):
            out[c] = automatic(col, h)
        else:
            if h.numeric:
                numbers_of(c, col.dropna().to_numpy())
            out[c] = validated(h, col, fallback=fallback)
    return out
