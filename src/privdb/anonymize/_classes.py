"""Equivalence classes of any table, grouped once and shared by the checks, utility and risk measures.

Records with equal quasi-identifier tuples form a class (Samarati and Sweeney 1998). Suppressed records (``*``
in every quasi-identifier, DESIGN.md) form no class: they are counted apart, since ARX exports them as one
``*`` class that other checkers then count. Grouping is hash-based (``pandas.factorize`` per column, one
mixed-radix key, one more ``factorize``); every measure then works on ``bincount``-style arrays.

Also here: the canonical text of values, the parsing of released labels (``lo-hi``, ``a|b``, masked codes,
hierarchy labels) and the test whether a released value covers a raw one, shared by ``covers``, utility
and the linkage attack.
"""

from __future__ import annotations

import difflib
import operator
import re
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

_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_INTERVAL = re.compile(rf"^\s*{_NUM}\s*-\s*{_NUM}\s*$")


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


def parse_intervals(labels: ObjArray) -> tuple[FloatArray, FloatArray]:
    """``lo-hi`` labels as bounds (NaN where a label is not an interval): one match per label, ``|`` sets
    (most of a released category's labels) passed over unread (pandas' ``str.extract`` took ten times as long
    on Mondrian's tens of thousands of set labels)."""
    shown = (label if type(label) is str else str(label) for label in labels)
    found = [(i, m[1], m[2]) for i, s in enumerate(shown) if "|" not in s and (m := _INTERVAL.match(s))]
    lo, hi = np.full(len(labels), np.nan), np.full(len(labels), np.nan)
    if found:
        at, low, high = zip(*found, strict=True)
        for out, texts in ((lo, low), (hi, high)):
            out[list(at)] = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(float)
    return lo, hi


def hierarchy_pairs(frame: pd.DataFrame) -> pd.Index:
    """Every (raw value, label at some level) pair of a hierarchy, as ``raw\\x1flabel`` strings."""
    raw = frame[0]
    joined = pd.concat([raw + "\x1f" + frame[c] for c in frame.columns])
    out: pd.Index = pd.Index(np.asarray(joined.unique(), dtype=object))
    return out


@dataclass(frozen=True)
class CellPairs:
    """The distinct (raw, released) value pairs of one column: record i is pair ``of_record[i]``; pair p
    has the raw value's canonical text ``raw[p]``, the released label ``label[p]`` and ``count[p]`` records.
    The same texts numbered: ``raw[p] == raws[raw_code[p]]`` and ``label[p] == labels[label_code[p]]``,
    ``raws`` and ``labels`` each without repeats.

    Every per-cell question (is it covered, was it changed) is answered once per pair, not per record.
    """

    of_record: IntArray
    raw: ObjArray
    label: ObjArray
    count: IntArray
    raw_code: IntArray
    raws: ObjArray
    label_code: IntArray
    labels: ObjArray


def cell_pairs(raw: pd.Series, released: pd.Series) -> CellPairs:
    """Factorise both columns (hash-based), then the pair of codes (``_numbered``): text is made for distinct
    values only. Pairs are numbered in no particular order."""
    rc, ru = pd.factorize(raw, use_na_sentinel=False)
    lc, lu = pd.factorize(released, use_na_sentinel=False)
    labels = np.asarray(lu, dtype=object)
    if not _all_text(labels):
        labels = pd.Series(labels, dtype=object).astype(str).to_numpy(dtype=object)
    m = max(len(labels), 1)
    pair, uniq = _numbered(rc.astype(np.int64) * m + lc, len(ru) * m)
    raw_text = text(np.asarray(ru))
    r_code, r_text = pd.factorize(raw_text)  # two values may share a text (1 and 1.0): numbered once
    l_code, l_text = pd.factorize(labels)
    return CellPairs(
        of_record=pair.astype(np.int64),
        raw=raw_text[uniq // m],
        label=labels[uniq % m],
        count=np.bincount(pair, minlength=len(uniq)).astype(np.int64),
        raw_code=r_code.astype(np.int64)[uniq // m],
        raws=np.asarray(r_text, dtype=object),
        label_code=l_code.astype(np.int64)[uniq % m],
        labels=np.asarray(l_text, dtype=object),
    )


def _numbered(key: IntArray, space: int) -> tuple[IntArray, IntArray]:
    """``pd.factorize(key)`` for keys below ``space``, but numbered in key order: through a lookup table when
    the space is small enough (a flag per key, then a number per key seen), else by hash."""
    if space > _DENSE_KEYS or not len(key):
        pair, uniq = pd.factorize(key)
        return np.asarray(pair, dtype=np.int64), np.asarray(uniq, dtype=np.int64)
    seen = np.zeros(space, dtype=bool)
    seen[key] = True
    uniq = np.flatnonzero(seen)
    lookup = np.empty(space, dtype=np.int32)
    lookup[uniq] = np.arange(len(uniq), dtype=np.int32)
    return lookup[key].astype(np.int64), uniq.astype(np.int64)


_DENSE_KEYS = 1 << 24  # 80 MB of lookup at most


def covered(
    raw: pd.Series,
    released: pd.Series,
    hierarchy: pd.DataFrame | None = None,
    pairs: CellPairs | None = None,
) -> BoolArray:
    """Whether each released value covers its raw value.

    Covered: ``*``; the raw value itself; a label of the raw value in ``hierarchy``; a ``lo-hi`` range
    holding the number; a ``|``-joined set holding the value; a code masked from the right (``32**``).
    Decided once per distinct (raw, released) pair (``pairs``: their ``cell_pairs``, if made already).
    """
    cp = pairs if pairs is not None else cell_pairs(raw, released)
    ok = _texts_covered(cp.raws, cp.raw_code, cp.labels, cp.label_code, hierarchy)
    return np.asarray(ok[cp.of_record], dtype=bool)


def pair_covered(r_val: ObjArray, l_val: ObjArray, hierarchy: pd.DataFrame | None = None) -> BoolArray:
    """Whether label ``l_val[i]`` covers raw text ``r_val[i]`` (the rules of ``covered``).

    Texts are decided by distinct value (``_texts_covered``); other values take the rules pair by pair."""
    if len(r_val) and _all_text(r_val) and _all_text(l_val):
        rc, raws = pd.factorize(np.asarray(r_val, dtype=object))
        lc, labels = pd.factorize(np.asarray(l_val, dtype=object))
        return _texts_covered(
            np.asarray(raws, dtype=object),
            rc.astype(np.int64),
            np.asarray(labels, dtype=object),
            lc,
            hierarchy,
        )
    ok = (l_val == STAR) | (l_val == r_val)
    if hierarchy is not None:
        ok |= pd.Index(r_val + "\x1f" + l_val).isin(hierarchy_pairs(hierarchy))
    lo, hi = parse_intervals(l_val)
    x = pd.to_numeric(pd.Series(r_val, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok |= (lo <= x) & (x <= hi)
    rest = np.flatnonzero(~ok)
    if len(rest):
        ok[rest] = [_covers_text(str(r_val[i]), str(l_val[i])) for i in rest]
    return np.asarray(ok, dtype=bool)


def _all_text(values: ObjArray) -> bool:
    return bool(pd.api.types.infer_dtype(np.asarray(values, dtype=object), skipna=False) == "string")


def _texts_covered(
    raws: ObjArray, rc: IntArray, labels: ObjArray, lc: IntArray, hierarchy: pd.DataFrame | None
) -> BoolArray:
    """Whether ``labels[lc[i]]`` covers ``raws[rc[i]]`` (``raws``, ``labels``: texts without repeats), the
    rules of ``covered`` applied per distinct text: each label is parsed and each raw text read as a number
    once, a ``|`` set split once into its members, which are matched to the raw texts by hash."""
    index = pd.Index(raws, dtype=object)
    as_raw = index.get_indexer(pd.Index(labels, dtype=object))  # the raw text equal to each label, or -1
    ok = (labels == STAR)[lc] | (as_raw[lc] == rc)
    if hierarchy is not None:
        ok |= pd.Index(raws[rc] + "\x1f" + labels[lc]).isin(hierarchy_pairs(hierarchy))
    lo, hi = parse_intervals(labels)
    x = pd.to_numeric(pd.Series(raws, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok |= (lo[lc] <= x[rc]) & (x[rc] <= hi[lc])
    rest = np.flatnonzero(~ok)
    if not len(rest):
        return np.asarray(ok, dtype=bool)
    barred = pd.Series(labels, dtype=object).str.contains("|", regex=False).to_numpy(dtype=bool)
    in_set = rest[barred[lc[rest]]]
    if len(in_set):  # raw in label.split("|"): each label's members numbered as the raw texts
        used = np.flatnonzero(np.bincount(lc[in_set], minlength=len(labels)))
        sets = labels[used].tolist()
        sizes = np.fromiter(map(operator.methodcaller("count", "|"), sets), np.int64, len(sets)) + 1
        found = index.get_indexer(pd.Index("|".join(sets).split("|"), dtype=object))
        known = (np.repeat(used, sizes) * len(raws) + found)[found >= 0]
        ok[in_set] = pd.Index(lc[in_set] * len(raws) + rc[in_set]).isin(known)
    other = rest[~barred[lc[rest]]]
    if len(other):
        ok[other] = [_covers_text(str(raws[rc[i]]), str(labels[lc[i]])) for i in other]
    return np.asarray(ok, dtype=bool)


def _covers_text(raw: str, label: str) -> bool:
    if "|" in label:
        return raw in label.split("|")
    if label.endswith(STAR) and len(label) == len(raw):
        return raw.startswith(label.rstrip(STAR))
    return False
