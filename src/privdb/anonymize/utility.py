"""Information loss of a release, measured against its original.

* NCP / GCP (Xu et al., KDD 2006; Ghinita et al., VLDB 2007): per cell, a number generalised to
  ``lo-hi`` costs (hi − lo)/(max − min of the original column); a category costs (leaves − 1)/(domain − 1),
  its leaves counted in the hierarchy when one is given (domain: the hierarchy's values), else in the
  ``|``-joined set (domain: the column's distinct values); ``*`` and suppressed cells cost 1, raw values 0.
  Reported as the mean over quasi-identifiers and records, a fraction 0..1.
* Discernibility (Bayardo and Agrawal, ICDE 2005): Σ|E|² + |suppressed|·n.
* Average equivalence-class size C_avg (LeFevre et al., SIGMOD 2005): (records in classes / classes) / k.
* Suppression rate and the share of quasi-identifier cells changed.

Costs are computed once per distinct released label and gathered per record.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import (
    STAR,
    Classes,
    FloatArray,
    HierarchyLike,
    group,
    hierarchy_frame,
    require_release_of,
    text,
)
from privdb.anonymize.cells import CellPairs, LabelSets, cell_pairs, label_sets, parse_intervals
from privdb.errors import InvalidParameter

__all__ = ["Utility", "discernibility", "ncp", "utility"]

_MASK = re.compile(r"^\d*\*+$")


def _is_numeric(col: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(col)) and not pd.api.types.is_bool_dtype(col)


def _column_loss(
    orig: pd.Series, rel: pd.Series, hierarchy: pd.DataFrame | None, pairs: CellPairs | None = None
) -> FloatArray:
    """NCP of each cell of one quasi-identifier (``pairs``: the column's ``cell_pairs``, if made already)."""
    if pairs is None:
        codes, labels = pd.factorize(rel, use_na_sentinel=False)
        lab = pd.Series(np.asarray(labels, dtype=object), dtype=object).astype(str).to_numpy(dtype=object)
        raw_text = pd.Index(pd.unique(text(np.asarray(pd.unique(orig)))))
    else:  # the labels' texts without repeats: a cost depends on the text alone
        codes, lab, raw_text = pairs.label_code[pairs.of_record], pairs.labels, pd.Index(pairs.raws)
    cost = np.full(len(lab), np.nan)
    cost[lab == STAR] = 1.0
    cost[pd.Index(lab).isin(raw_text)] = 0.0
    if _is_numeric(orig):
        x = orig.to_numpy(dtype=np.float64)
        span = float(np.nanmax(x) - np.nanmin(x)) if len(x) else 0.0
        lo, hi = (b.copy() for b in pairs.intervals) if pairs is not None else parse_intervals(lab)
        _other_ranges(lab, lo, hi)
        if hierarchy is not None:  # labels such as ">=80": the range of the raw values under them
            lo, hi = _hierarchy_ranges(lab, hierarchy, lo, hi)
        todo = np.isnan(cost) & ~np.isnan(lo)
        cost[todo] = np.clip((hi[todo] - lo[todo]) / span, 0.0, 1.0) if span > 0 else 0.0
    else:
        if hierarchy is not None:
            leaves = _leaf_counts(hierarchy)
            domain = len(hierarchy)
            counted = pd.Series(lab).map(leaves).to_numpy(dtype=np.float64)
        else:
            domain = int(orig.nunique(dropna=False))
            counted = _leaf_sets(lab, raw_text, pairs.sets if pairs is not None else None)
        todo = np.isnan(cost) & ~np.isnan(counted)
        cost[todo] = (counted[todo] - 1) / (domain - 1) if domain > 1 else 0.0
    if np.isnan(cost).any():
        raise InvalidParameter(
            f"{int(np.isnan(cost).sum())} released label(s) of '{orig.name}' are neither raw values, ranges "
            "lo-hi, '|' sets, '*' nor labels of its hierarchy: pass the hierarchy used for the release"
        )
    return np.asarray(cost[codes], dtype=np.float64)


def _other_ranges(lab: Any, lo: FloatArray, hi: FloatArray) -> None:
    """Fill ``lo``/``hi`` in place for ``|`` sets of numbers and masked codes (``32**`` → 3200..3299)."""
    for i in np.flatnonzero(np.isnan(lo)):
        label = str(lab[i])
        if "|" in label:
            nums = pd.to_numeric(pd.Series(label.split("|")), errors="coerce")
            if nums.notna().all():
                lo[i], hi[i] = float(nums.min()), float(nums.max())
        elif _MASK.match(label) and label != STAR:
            stars = len(label) - len(label.rstrip(STAR))
            base = int(label.rstrip(STAR) or 0) * 10**stars
            lo[i], hi[i] = float(base), float(base + 10**stars - 1)


def _leaf_sets(lab: Any, raw_text: pd.Index, sets: LabelSets | None = None) -> FloatArray:
    """``_leaves_of`` of each label; the ``|`` sets counted at once (split in one go, ``label_sets``, or
    ``sets`` if made already; the distinct members of each set counted by hash)."""
    labels = [str(x) for x in lab]
    if sets is None:
        sets = label_sets(np.asarray(labels, dtype=object), np.asarray(raw_text, dtype=object))
    out = np.full(len(labels), np.nan)
    if len(sets.at):
        again = pd.Series(sets.owner * (int(sets.member.max()) + 1) + sets.member).duplicated().to_numpy()
        out[sets.at] = np.bincount(sets.owner[~again], minlength=len(sets.at)).astype(np.float64)
    for i in np.flatnonzero(~sets.barred):
        out[i] = _leaves_of(labels[i], raw_text)
    return out


def _leaves_of(label: str, raw_text: pd.Index) -> float:
    """Distinct original values a category label stands for: its ``|`` set, or the codes a mask matches."""
    if "|" in label:
        return float(len(set(label.split("|"))))
    if label.endswith(STAR) and label != STAR:
        prefix = label.rstrip(STAR)
        return float(sum(1 for v in raw_text if len(str(v)) == len(label) and str(v).startswith(prefix)))
    return np.nan


def _leaf_counts(frame: pd.DataFrame) -> pd.Series:
    """Number of raw values under each label of a hierarchy (a label counted once per level it is on)."""
    parts = [frame.groupby(c)[0].nunique() for c in frame.columns]
    return pd.concat(parts).groupby(level=0).max()


def _hierarchy_ranges(
    lab: Any, frame: pd.DataFrame, lo: FloatArray, hi: FloatArray
) -> tuple[FloatArray, FloatArray]:
    raw = pd.to_numeric(frame[0], errors="coerce")
    long = pd.concat([pd.DataFrame({"label": frame[c], "x": raw}) for c in frame.columns])
    span = long.groupby("label")["x"].agg(["min", "max"])
    found = pd.Series(lab).map(span["min"]).to_numpy(dtype=np.float64)
    top = pd.Series(lab).map(span["max"]).to_numpy(dtype=np.float64)
    use = np.isnan(lo) & ~np.isnan(found)
    return np.where(use, found, lo), np.where(use, top, hi)


def ncp(
    original: pd.DataFrame,
    released: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, HierarchyLike] | None = None,
    *,
    pairs: Mapping[str, CellPairs] | None = None,
) -> dict[str, float]:
    """NCP per quasi-identifier (mean over records), each a fraction 0..1 (``pairs``: ``cell_pairs`` of
    some columns, made already)."""
    require_release_of(original, released, qi)
    hierarchies = hierarchies or {}
    out: dict[str, float] = {}
    for c in qi:
        h = hierarchy_frame(hierarchies[c], c) if c in hierarchies else None
        out[c] = float(_column_loss(original[c], released[c], h, (pairs or {}).get(c)).mean())
    return out


def discernibility(released: pd.DataFrame, qi: Sequence[str]) -> int:
    """Σ|E|² over classes plus |suppressed|·n (each suppressed record indistinguishable from all)."""
    cl = group(released, qi)
    return int((cl.sizes.astype(np.int64) ** 2).sum()) + cl.n_suppressed * cl.n


@dataclass(frozen=True)
class Utility:
    """Information loss of one release."""

    ncp: float
    ncp_by_column: dict[str, float]
    discernibility: int
    avg_class_size: float
    c_avg: float
    suppressed: int
    suppression_rate: float
    generalised_cells: float

    def to_dict(self) -> dict[str, Any]:
        """DESIGN.md's ``utility`` block (ncp, discernibility, avg_class_size, suppressed) plus details."""
        return {
            "ncp": self.ncp,
            "discernibility": self.discernibility,
            "avg_class_size": self.avg_class_size,
            "suppressed": self.suppressed,
            "c_avg": self.c_avg,
            "suppression_rate": self.suppression_rate,
            "generalised_cells": self.generalised_cells,
            "ncp_by_column": dict(self.ncp_by_column),
        }


def utility(
    original: pd.DataFrame,
    released: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, HierarchyLike] | None = None,
    *,
    k: int | None = None,
    classes: Classes | None = None,
    pairs: Mapping[str, CellPairs] | None = None,
) -> Utility:
    """All information-loss measures of ``released`` against ``original`` (same rows, same order).

    ``k`` is the k asked for, used by C_avg; without it the achieved k is used. ``classes`` reuses a
    grouping of ``released`` already made by ``_classes.group``, ``pairs`` the columns' ``cell_pairs``.
    """
    require_release_of(original, released, qi)
    pairs = {c: (pairs or {}).get(c) or cell_pairs(original[c], released[c]) for c in qi}
    by_col = ncp(original, released, qi, hierarchies, pairs=pairs)
    cl = classes if classes is not None else group(released, qi)
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise InvalidParameter(f"k must be a whole number of at least 1 (got {k!r})")
    kk = k if k is not None else max(cl.k, 1)
    in_classes = cl.n - cl.n_suppressed
    avg = in_classes / cl.n_classes if cl.n_classes else 0.0
    changed = 0
    for cp in pairs.values():
        changed += int(cp.count[cp.raw != cp.label].sum())
    return Utility(
        ncp=float(np.mean(list(by_col.values()))),
        ncp_by_column=by_col,
        discernibility=int((cl.sizes**2).sum()) + cl.n_suppressed * cl.n,
        avg_class_size=float(avg),
        c_avg=float(avg / kk),
        suppressed=cl.n_suppressed,
        suppression_rate=cl.n_suppressed / cl.n,
        generalised_cells=changed / (cl.n * len(qi)),
    )
