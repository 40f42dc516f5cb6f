"""Generalisation hierarchies: one per quasi-identifier, levels 0 (raw) … H (fully generalised ``*``).

A hierarchy maps each raw value to a label per level, and the labels form a tree: two values with the same
level-i label share every label above i. Generalising a column maps its *distinct* values once and takes the
result per record (``pandas.factorize`` then ``numpy.take``), so the per-record work is vectorised.

Kinds (Sweeney 2002; Samarati 2001 for the lattice they span):

* ``IntervalHierarchy``: numbers into intervals of growing width, e.g. ``20-24`` → ``20-29`` → ``*``. Widths
  are given, or derived from the data: a "nice" base width (1, 2 or 5 times a power of ten, about 1/32 of the
  range), doubled per level and aligned to the data's minimum so that every interval nests in the next.
* ``MaskHierarchy``: codes masked from the right, ``3270`` → ``327*`` → ``32**`` → … → ``*``.
* ``DateHierarchy``: day → month → year → ``*``.
* ``TaxonomyHierarchy``: a tree read from ARX's CSV format (``;``-separated, no header, column 1 the raw
  value, column i+1 its level-i label, the last level ``*``); ``lo-hi`` labels must hold the numbers under
  them (``labels``), or are renamed with ``fix_labels``.
* ``FlatHierarchy``: raw → ``*``.

Choosing a hierarchy per column (automatic ones, validating given ones, loading a directory) is in
``resolve``.
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import text
from privdb.anonymize.labels import contradictions, describe, relabelled
from privdb.errors import InvalidParameter

__all__ = [
    "DateHierarchy",
    "FlatHierarchy",
    "Hierarchy",
    "IntervalHierarchy",
    "MaskHierarchy",
    "TaxonomyHierarchy",
    "infer_kind",
    "lattice_size",
    "numbers_of",
    "raw_strings",
    "refuse_missing",
]

ObjArray = NDArray[np.object_]
STAR = "*"


def lattice_size(heights: Iterable[int]) -> int:
    """The number of nodes of the generalisation lattice of hierarchies of these heights (exact)."""
    return math.prod(int(h) + 1 for h in heights)


def raw_strings(values: Any) -> ObjArray:
    """The canonical text of raw values (``_classes.text``: the one rule every part of anonymize uses)."""
    return text(values)


def _fmt(x: float, integer: bool) -> str:
    return str(int(x)) if integer else np.format_float_positional(x, trim="-")


class Hierarchy(ABC):
    """Levels 0..``height`` of one quasi-identifier; level 0 is the raw value, ``height`` is ``*``."""

    #: The raw values the hierarchy knows (its rows in ``table()``).
    domain: ObjArray | NDArray[Any]
    numeric: bool = False

    def __init__(self, name: str, height: int) -> None:
        if height < 1:
            raise InvalidParameter(f"hierarchy for '{name}' needs at least one level above the raw values")
        self.name = name
        self.height = height

    @abstractmethod
    def labels(self, values: Any, level: int) -> ObjArray:
        """Labels of the given (distinct) raw values at ``level``; ``None`` where the hierarchy misses one."""

    def missing(self, values: Any) -> ObjArray:
        """The distinct values among ``values`` the hierarchy has no labels for."""
        uniq = pd.unique(np.asarray(values, dtype=object))
        top = self.labels(uniq, 1)
        return np.asarray(uniq[pd.isna(top)], dtype=object)

    def generalize(self, column: Any, level: int) -> ObjArray:
        """Every record of ``column`` generalised to ``level`` (map the distinct values, then take)."""
        self._check_level(level)
        codes, uniques = pd.factorize(pd.Series(column), use_na_sentinel=False)
        return np.take(self.labels(np.asarray(uniques), level), codes)

    def table(self) -> pd.DataFrame:
        """ARX's layout: one row per raw value of ``domain``, columns ``level0``..``levelH`` as strings.

        This is the contract for hierarchical distances and NCP: the leaves under a level-i label are the
        rows whose ``level{i}`` holds it.
        """
        dom = np.asarray(self.domain)
        cols = {f"level{i}": self.labels(dom, i).astype(str) for i in range(self.height + 1)}
        return pd.DataFrame(cols)

    def _check_level(self, level: int) -> None:
        if not 0 <= level <= self.height:
            raise InvalidParameter(
                f"level {level} is outside the hierarchy of '{self.name}' (levels 0..{self.height})"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, height={self.height})"


class FlatHierarchy(Hierarchy):
    """Raw value, then ``*``: the automatic hierarchy of a category without structure."""

    def __init__(self, name: str, domain: Any = ()) -> None:
        super().__init__(name, 1)
        self.domain = np.asarray(pd.unique(np.asarray(domain, dtype=object)), dtype=object)

    def labels(self, values: Any, level: int) -> ObjArray:
        self._check_level(level)
        arr = np.asarray(values)
        if level == 0:
            return raw_strings(arr)
        return np.full(len(arr), STAR, dtype=object)


class IntervalHierarchy(Hierarchy):
    """Numbers into nested intervals ``lo-hi`` (inclusive for integers; ``[lo, hi)`` for real numbers).

    ``widths`` grow level by level and each must be a multiple of the previous one, so the intervals nest
    (all are aligned to ``origin``). The level after the last width is ``*``.
    """

    numeric = True

    def __init__(
        self,
        name: str,
        widths: Sequence[float],
        *,
        origin: float = 0.0,
        integer: bool = True,
        domain: Any = (),
    ) -> None:
        widths = [float(w) for w in widths]
        if not widths or any(w <= 0 for w in widths):
            raise InvalidParameter(f"interval widths for '{name}' must be positive, e.g. [5, 10, 20]")
        for a, b in itertools.pairwise(widths):
            ratio = b / a
            if b <= a or abs(ratio - round(ratio)) > 1e-9:
                raise InvalidParameter(
                    f"interval widths for '{name}' must grow by whole multiples so intervals nest "
                    f"(got {a:g} then {b:g}); e.g. [5, 10, 20, 40]"
                )
        super().__init__(name, len(widths) + 1)
        self.widths = widths
        self.origin = float(origin)
        self.integer = integer
        self.domain = np.sort(pd.unique(np.asarray(domain, dtype=np.float64)))

    @classmethod
    def derived(cls, name: str, values: Any) -> IntervalHierarchy:
        """Doubling widths from a nice base width, aligned to the data's minimum, until one interval
        covers the whole range."""
        arr = numbers_of(name, values)
        if arr.size == 0:
            raise InvalidParameter(f"column '{name}' has no values to derive a hierarchy from")
        lo, hi = float(arr.min()), float(arr.max())
        integer = bool(np.all(arr == np.round(arr)))
        span = hi - lo + (1 if integer else 0)
        target = max(span / 32.0, 1.0 if integer else 1e-12)
        exp = 10.0 ** math.floor(math.log10(target))
        base = next(m * exp for m in (1, 2, 5, 10) if m * exp >= target)
        widths = [base]
        while widths[-1] < span and len(widths) < 40:
            widths.append(widths[-1] * 2)
        if integer and widths[0] == 1 and len(widths) > 1:
            widths = widths[1:]  # width 1 repeats the raw level
        return cls(name, widths, origin=lo, integer=integer, domain=arr)

    def _bounds(self, x: NDArray[np.float64], level: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        w = self.widths[level - 1]
        lo = self.origin + np.floor((x - self.origin) / w) * w
        return lo, (lo + w - 1 if self.integer else lo + w)

    def labels(self, values: Any, level: int) -> ObjArray:
        self._check_level(level)
        x = pd.to_numeric(pd.Series(np.asarray(values)), errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(x)
        if level == 0:
            out = raw_strings(np.where(bad, 0, x)) if not bad.all() else np.empty(len(x), dtype=object)
        elif level == self.height:
            out = np.full(len(x), STAR, dtype=object)
        else:
            lo, hi = self._bounds(np.where(bad, self.origin, x), level)
            out = np.array(
                [f"{_fmt(a, self.integer)}-{_fmt(b, self.integer)}" for a, b in zip(lo, hi, strict=True)],
                dtype=object,
            )
        out[bad] = None
        return out


class MaskHierarchy(Hierarchy):
    """Codes masked from the right one character per level; a fully masked code is ``*``."""

    def __init__(self, name: str, length: int, domain: Any = ()) -> None:
        super().__init__(name, max(int(length), 1))
        self.domain = np.asarray(pd.unique(raw_strings(np.asarray(domain))), dtype=object)

    @classmethod
    def derived(cls, name: str, values: Any) -> MaskHierarchy:
        s = raw_strings(pd.unique(np.asarray(values, dtype=object)))
        return cls(name, max((len(v) for v in s), default=1), domain=s)

    def labels(self, values: Any, level: int) -> ObjArray:
        self._check_level(level)
        s = raw_strings(np.asarray(values))
        if level == 0:
            return s
        out = np.empty(len(s), dtype=object)
        for i, v in enumerate(s):  # distinct values only
            keep = len(v) - level
            out[i] = STAR if keep <= 0 or level >= self.height else v[:keep] + STAR * level
        return out


class DateHierarchy(Hierarchy):
    """Dates: ``YYYY-MM-DD`` → ``YYYY-MM`` → ``YYYY`` → ``*``."""

    _FORMATS = ("%Y-%m-%d", "%Y-%m", "%Y")

    def __init__(self, name: str, domain: Any = ()) -> None:
        super().__init__(name, 3)
        self.domain = np.asarray(pd.unique(np.asarray(domain, dtype=object)), dtype=object)

    def labels(self, values: Any, level: int) -> ObjArray:
        self._check_level(level)
        arr = np.asarray(values)
        d = pd.to_datetime(pd.Series(arr), errors="coerce")
        if level == self.height:
            out = np.full(len(arr), STAR, dtype=object)
        else:
            out = d.dt.strftime(self._FORMATS[level]).to_numpy(dtype=object)
        out[d.isna().to_numpy()] = None
        return out


class TaxonomyHierarchy(Hierarchy):
    """A tree given row by row: raw value, its level-1 label, …, ``*`` (ARX's CSV layout)."""

    def __init__(self, name: str, rows: Sequence[Sequence[str]], *, fix_labels: bool = False) -> None:
        rows = [[str(c).strip() for c in r] for r in rows if any(str(c).strip() for c in r)]
        if not rows:
            raise InvalidParameter(f"hierarchy for '{name}' is empty: give one row per value, e.g. 'a;*'")
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise InvalidParameter(
                f"hierarchy for '{name}' has rows of {sorted(widths)} columns: every row needs the same "
                "number of levels"
            )
        mat = np.array(rows, dtype=object)
        if mat.shape[1] == 1 or len(set(mat[:, -1])) != 1:
            mat = np.column_stack([mat, np.full(len(mat), STAR, dtype=object)])
        wrong = contradictions(mat)
        if wrong and not fix_labels:
            raise InvalidParameter(describe(name, mat, wrong))
        if wrong:
            mat = relabelled(name, mat)
        raw = pd.Index(mat[:, 0])
        if raw.has_duplicates:
            dup = raw[raw.duplicated()].unique()
            raise InvalidParameter(
                f"hierarchy for '{name}' lists {len(dup)} value(s) twice (e.g. {list(dup[:3])}): "
                "keep one row per value"
            )
        for i in range(1, mat.shape[1] - 1):
            parents = pd.DataFrame({"c": mat[:, i], "p": mat[:, i + 1]}).drop_duplicates()
            bad = parents["c"][parents["c"].duplicated()].unique()
            if len(bad):
                raise InvalidParameter(
                    f"hierarchy for '{name}' is not a tree: level-{i} label(s) {list(bad[:3])} have more "
                    f"than one parent at level {i + 1}; give each label one parent"
                )
        super().__init__(name, mat.shape[1] - 1)
        self._index = raw
        self._matrix = mat
        self.domain = mat[:, 0].copy()

    @classmethod
    def from_csv(
        cls, path: str | Path, name: str | None = None, *, fix_labels: bool = False
    ) -> TaxonomyHierarchy:
        """Read ARX's CSV layout; ``fix_labels`` renames ``lo-hi`` labels that exclude their values."""
        p = Path(path)
        text = p.read_text(encoding="utf-8-sig")
        rows = [line.split(";") for line in text.splitlines() if line.strip()]
        return cls(name or p.stem, rows, fix_labels=fix_labels)

    def labels(self, values: Any, level: int) -> ObjArray:
        self._check_level(level)
        idx = self._index.get_indexer(raw_strings(np.asarray(values)))
        col = np.concatenate([self._matrix[:, level], np.array([None], dtype=object)])
        return np.asarray(col[idx], dtype=object)  # idx -1 picks the trailing None

    def with_branches(self, values: Iterable[str]) -> TaxonomyHierarchy:
        """A copy where each given value is its own branch: itself up to level H−1, ``*`` at H."""
        extra = [[v] * self.height + [STAR] for v in values]
        return TaxonomyHierarchy(self.name, [list(r) for r in self._matrix.tolist()] + extra)


def numbers_of(name: str, values: Any) -> NDArray[np.float64]:
    s = pd.Series(np.asarray(values))
    x = pd.to_numeric(s, errors="coerce")
    bad = int((x.isna() & s.notna()).sum())
    if bad:
        raise InvalidParameter(
            f"quasi-identifier '{name}' is numeric but {bad} value(s) are not numbers: clean them, or pass "
            f"hierarchies={{'{name}': 'flat'}} (or a taxonomy) to treat the column as a category"
        )
    return x.dropna().to_numpy(dtype=np.float64)


def refuse_missing(name: object, missing: int) -> None:
    """Refuse a quasi-identifier with ``missing`` missing values (NULL, NaN): no hierarchy level holds them,
    and a made-up label would be a value the table does not have."""
    if missing:
        raise InvalidParameter(f"quasi-identifier '{name}' has {missing} missing value(s): fill or drop them")


def infer_kind(column: pd.Series) -> str:
    """``numeric``, ``code`` (digit strings), ``date`` (datetime dtype) or ``category``."""
    if pd.api.types.is_bool_dtype(column):
        return "category"
    if pd.api.types.is_numeric_dtype(column):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(column):
        return "date"
    uniq = pd.Series(pd.unique(column.dropna())).astype(str)
    if len(uniq) and bool(uniq.str.fullmatch(r"\d+").all()):
        return "code"
    num = pd.to_numeric(uniq, errors="coerce")
    if len(uniq) >= 5 and num.notna().mean() >= 0.9:
        numbers_of(str(column.name), uniq)  # raises: a numeric column with stray text
    return "category"
