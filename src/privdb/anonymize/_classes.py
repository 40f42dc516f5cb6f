"""Equivalence classes of any table, grouped once and shared by the checks, utility and risk measures.

Records with equal quasi-identifier tuples form a class (Samarati and Sweeney 1998). Suppressed records (``*``
in every quasi-identifier, DESIGN.md) form no class: they are counted apart, since ARX exports them as one
``*`` class that other checkers then count. Grouping is hash-based (``pandas.factorize`` per column, one
mixed-radix key, one more ``factorize``); every measure then works on ``bincount``-style arrays.

Also here: the canonical text of values and the mixed-radix keys the lattice shares; released labels against
raw values (parsing, coverage) are ``cells``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.errors import InvalidParameter, UnknownColumn

STAR = "*"
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
ObjArray = NDArray[np.object_]


@runtime_checkable
class HasTable(Protocol):
    """A hierarchy object that can show itself in ARX layout (``privdb.anonymize.Hierarchy`` does)."""

    def table(self) -> pd.DataFrame: ...


HierarchyLike = pd.DataFrame | HasTable


def hierarchy_frame(h: HierarchyLike, name: str) -> pd.DataFrame:
    """The hierarchy as strings in ARX layout: one row per raw value, levels 0..H, the last ``*``."""
    frame = h.table() if isinstance(h, HasTable) and not isinstance(h, pd.DataFrame) else h
    if not isinstance(frame, pd.DataFrame) or frame.shape[0] == 0 or frame.shape[1] == 0:
        raise InvalidParameter(
            f"hierarchy for '{name}' is empty or not a table: give one row per value, columns level 0..H"
        )
    out = pd.DataFrame(frame.astype(str).apply(lambda c: c.str.strip()))
    out.columns = list(range(out.shape[1]))
    if out.shape[1] == 1 or out.iloc[:, -1].nunique() != 1:
        out[out.shape[1]] = STAR
    return out


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str = "table") -> None:
    """Raise ``UnknownColumn`` naming the first missing column and the closest existing one."""
    if isinstance(columns, str):
        raise InvalidParameter(f"give column names as a list, e.g. ['{columns}'], not one string")
    have = [str(c) for c in df.columns]
    for c in columns:
        if c not in have:
            near = difflib.get_close_matches(str(c), have, n=1)
            hint = f"did you mean '{near[0]}'?" if near else f"the {what} has {', '.join(have)}"
            raise UnknownColumn(f"unknown column '{c}' in the {what}: {hint}")


def require_rows(df: pd.DataFrame, what: str = "table") -> None:
    if len(df) == 0:
        raise InvalidParameter(f"the {what} is empty: give a table with at least one record")


def require_release_of(original: pd.DataFrame, released: pd.DataFrame, qi: Sequence[str]) -> None:
    """Both tables hold the quasi-identifiers and the same records in the same order (coverage, utility)."""
    require_columns(original, qi, "original table")
    require_columns(released, qi, "released table")
    require_rows(original, "original table")
    if len(original) != len(released):
        raise InvalidParameter(
            f"the release has {len(released)} records and the original {len(original)}: give both in the "
            "same order, one released record per original record"
        )


def text(values: Any) -> ObjArray:
    """The canonical text of raw values: integers without ``.0``, everything else ``str``.

    One rule per value, whatever else the array holds (a label must not depend on other records): whole
    floats below 2^53 (exact) without ``.0``, other floats their shortest positional form. Hierarchy files
    hold text, data frames hold typed values; this is the one bridge between them.
    """
    arr = np.asarray(values)
    if arr.dtype.kind == "u":
        return arr.astype(str).astype(object)  # uint64 past 2^63 would wrap through int64
    if arr.dtype.kind in "ib":
        return arr.astype(np.int64).astype(str).astype(object)
    if arr.dtype.kind == "f":
        exact = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0**53)
        if exact.all():
            return arr.astype(np.int64).astype(str).astype(object)
        return np.array(
            [
                str(int(x)) if ok else np.format_float_positional(x, trim="-")
                for x, ok in zip(arr.tolist(), exact.tolist(), strict=True)
            ],
            dtype=object,
        )
    return np.array([str(x) for x in arr.tolist()], dtype=object)


def codes_of(col: pd.Series) -> tuple[IntArray, pd.Index]:
    """Integer codes and distinct values of a column (hash-based; categoricals reuse their codes)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        cats = pd.Index(col.cat.categories)
        if (codes < 0).any():  # missing values become one more value
            codes = np.where(codes < 0, len(cats), codes)
            cats = cats.append(pd.Index([np.nan]))
        return codes, cats
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    return codes.astype(np.int64), pd.Index(uniques)


def combine(codes: Sequence[IntArray], sizes: Sequence[int]) -> IntArray:
    """One int64 key per record from several code columns (refactorised before int64 would overflow)."""
    return combine_sized(codes, sizes)[0]


def combine_sized(codes: Sequence[IntArray], sizes: Sequence[int]) -> tuple[IntArray, int]:
    """``combine``'s keys and the size of their space (every key is below it).

    Column ``i`` of sizes ``s`` counts ``∏ s[:i]`` times as much as column 0 (a mixed radix) until the
    product would pass 2⁶² and wrap in int64 (then two different tuples could share a key, and a class
    of one record pass as a class of two): the keys so far are renumbered densely first.
    """
    n = len(codes[0]) if codes else 0
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for c, size in zip(codes, sizes, strict=True):
        size = max(size, 1)
        if radix > (1 << 62) // size:
            key = pd.factorize(key)[0].astype(np.int64)
            radix = int(key.max()) + 1 if n else 1
        key += np.asarray(c, dtype=np.int64) * radix  # (key is this function's own array)
        radix *= size
    return key, radix


def dense_space(space: int, n: int) -> bool:
    """Whether ``n`` keys below ``space`` are better looked up in a table over the whole space (a
    ``bincount`` or an array index, no hash index) than hashed: while the space is at most 4n + 1,024."""
    return space <= 4 * n + 1024


@dataclass(frozen=True)
class Classes:
    """Equivalence classes: ``ids[i]`` is record i's class (−1 if suppressed), ``sizes[c]`` the size of c."""

    qi: tuple[str, ...]
    ids: IntArray
    sizes: IntArray
    suppressed: BoolArray
    first: IntArray  # one record of each class (its released values are the class's values)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def n_classes(self) -> int:
        return len(self.sizes)

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())

    @property
    def k(self) -> int:
        """Achieved k: the smallest class (0 when every record is suppressed)."""
        return int(self.sizes.min()) if len(self.sizes) else 0


def group(df: pd.DataFrame, qi: Sequence[str]) -> Classes:
    """Group the records of ``df`` into equivalence classes over ``qi``."""
    require_columns(df, qi)
    if not qi:
        raise InvalidParameter("give at least one quasi-identifier, e.g. qi=['age', 'zip']")
    require_rows(df)
    cols = [codes_of(df[c]) for c in qi]
    suppressed = np.ones(len(df), dtype=bool)
    for codes, uniques in cols:
        suppressed &= codes == int(uniques.get_indexer(pd.Index([STAR]))[0])
    key = combine([c for c, _ in cols], [len(u) for _, u in cols])
    keep = ~suppressed
    ids = np.full(len(df), -1, dtype=np.int64)
    ids[keep] = pd.factorize(key[keep])[0]
    n_classes = int(ids.max()) + 1 if keep.any() else 0
    sizes = np.bincount(ids[keep], minlength=n_classes).astype(np.int64)
    first = np.zeros(n_classes, dtype=np.int64)
    rows = np.flatnonzero(keep)
    first[ids[rows][::-1]] = rows[::-1]
    return Classes(tuple(qi), ids, sizes, suppressed, first)


@dataclass(frozen=True)
class Pairs:
    """Sparse class × value histogram sorted by (class, value): ``cnt`` records of ``val`` in ``cls``."""

    cls: IntArray
    val: IntArray
    cnt: FloatArray
    m: int


def histogram(ids: IntArray, values: IntArray, n_classes: int, m: int) -> Pairs:
    """Count each value code per class, for records with ``ids >= 0``."""
    keep = ids >= 0
    key = ids[keep] * m + values[keep]
    if n_classes * m <= 1 << 25:
        counts = np.bincount(key, minlength=n_classes * m)
        nz = np.flatnonzero(counts)
        cnt = counts[nz]
    else:
        nz, cnt = np.unique(key, return_counts=True)
    return Pairs(nz // m, nz % m, cnt.astype(np.float64), m)
