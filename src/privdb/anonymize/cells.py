"""Released cells against raw ones: the parsing of released labels (``lo-hi``, ``a|b``, masked codes,
hierarchy labels), the distinct (raw, released) pairs of a column, and whether a released value covers its
raw one; shared by ``covers``, utility and the linkage attack (and publishing's evaluation)."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from privdb.anonymize._classes import STAR, BoolArray, FloatArray, IntArray, ObjArray, codes_of, text

__all__ = [
    "CellPairs",
    "LabelSets",
    "cell_pairs",
    "covered",
    "hierarchy_pairs",
    "label_sets",
    "pair_covered",
    "parse_intervals",
]

_NUM = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_INTERVAL = re.compile(rf"^\s*{_NUM}\s*-\s*{_NUM}\s*$")


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

    @cached_property
    def sets(self) -> LabelSets:
        """The ``|`` sets among ``labels``, split once for coverage and utility alike."""
        return label_sets(self.labels, self.raws)

    @cached_property
    def intervals(self) -> tuple[FloatArray, FloatArray]:
        """``parse_intervals`` of ``labels``, read once for coverage and utility alike (read-only arrays:
        a caller that fills in more bounds copies them)."""
        lo, hi = parse_intervals(self.labels)
        lo.flags.writeable = hi.flags.writeable = False
        return lo, hi


@dataclass(frozen=True)
class LabelSets:
    """The ``|`` sets among distinct label texts, each split once: ``barred[i]`` whether label i is a set;
    set s is label ``at[s]``; member j belongs to set ``owner[j]`` and is ``member[j]``, numbered as the
    raw texts (below their count) or, a text no raw value has, from their count on."""

    barred: BoolArray
    at: IntArray
    owner: IntArray
    member: IntArray


def label_sets(labels: ObjArray, raws: ObjArray) -> LabelSets:
    """``LabelSets`` of ``labels`` against the distinct raw texts ``raws``: every set joined and split once,
    its members matched to the raw texts by hash."""
    texts = labels.tolist()
    barred = np.fromiter(map(operator.methodcaller("__contains__", "|"), texts), bool, len(texts))
    at = np.flatnonzero(barred)
    sets = [texts[i] for i in at.tolist()]
    sizes = np.fromiter(map(operator.methodcaller("count", "|"), sets), np.int64, len(sets)) + 1
    parts = np.asarray("|".join(sets).split("|") if sets else [], dtype=object)
    member = pd.Index(raws, dtype=object).get_indexer(pd.Index(parts, dtype=object)).astype(np.int64)
    unknown = member < 0
    if unknown.any():
        member[unknown] = len(raws) + pd.factorize(parts[unknown])[0]
    owner = np.repeat(np.arange(len(sets), dtype=np.int64), sizes)
    return LabelSets(barred, at.astype(np.int64), owner, member)


def cell_pairs(raw: pd.Series, released: pd.Series) -> CellPairs:
    """Number both columns (a categorical by its codes, else by hash), then the pair of codes
    (``_numbered``): text is made for distinct values only, a missing label read as the text ``nan``.
    Pairs are numbered in no particular order."""
    rc, ru = _present(*codes_of(raw))  # a categorical's own codes: no hashing of a million small integers
    lc, lu = _present(*codes_of(released))
    labels = np.asarray(lu, dtype=object)
    if not _all_text(labels):  # str() of each distinct value: pandas 3's astype(str) keeps NaN as NaN
        labels = np.array([str(v) for v in labels.tolist()], dtype=object)
    m = max(len(labels), 1)
    pair, uniq = _numbered(rc * m + lc, len(ru) * m)
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


def _present(codes: IntArray, values: pd.Index) -> tuple[IntArray, pd.Index]:
    """``codes_of``'s codes and values without the values no record has (a categorical's unused
    categories): the values hashing the column would find, in the categories' order."""
    seen = np.bincount(codes, minlength=len(values)) > 0
    if seen.all():
        return codes, values
    return (np.cumsum(seen) - 1)[codes], values[seen]


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
    ok = _texts_covered(cp.raws, cp.raw_code, cp.labels, cp.label_code, hierarchy, cp.sets, cp.intervals)
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
    raws: ObjArray,
    rc: IntArray,
    labels: ObjArray,
    lc: IntArray,
    hierarchy: pd.DataFrame | None,
    sets: LabelSets | None = None,
    bounds: tuple[FloatArray, FloatArray] | None = None,
) -> BoolArray:
    """Whether ``labels[lc[i]]`` covers ``raws[rc[i]]`` (``raws``, ``labels``: texts without repeats), the
    rules of ``covered`` applied per distinct text: each label is parsed and each raw text read as a number
    once, a ``|`` set split once into its members, which are matched to the raw texts by hash (``sets`` and
    ``bounds``: the labels' ``label_sets`` and ``parse_intervals``, if made already)."""
    index = pd.Index(raws, dtype=object)
    as_raw = index.get_indexer(pd.Index(labels, dtype=object))  # the raw text equal to each label, or -1
    ok = (labels == STAR)[lc] | (as_raw[lc] == rc)
    if hierarchy is not None:
        ok |= pd.Index(raws[rc] + "\x1f" + labels[lc]).isin(hierarchy_pairs(hierarchy))
    lo, hi = bounds if bounds is not None else parse_intervals(labels)
    x = pd.to_numeric(pd.Series(raws, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok |= (lo[lc] <= x[rc]) & (x[rc] <= hi[lc])
    rest = np.flatnonzero(~ok)
    if not len(rest):
        return np.asarray(ok, dtype=bool)
    sets = sets if sets is not None else label_sets(labels, raws)
    in_set = rest[sets.barred[lc[rest]]]
    if len(in_set):  # raw in label.split("|"): (label, raw) of every member that is a raw text
        raw_member = sets.member < len(raws)
        known = (sets.at[sets.owner] * len(raws) + sets.member)[raw_member]
        ok[in_set] = pd.Index(lc[in_set] * len(raws) + rc[in_set]).isin(known)
    other = rest[~sets.barred[lc[rest]]]
    if len(other):
        ok[other] = [_covers_text(str(raws[rc[i]]), str(labels[lc[i]])) for i in other]
    return np.asarray(ok, dtype=bool)


def _covers_text(raw: str, label: str) -> bool:
    if "|" in label:
        return raw in label.split("|")
    if label.endswith(STAR) and len(label) == len(raw):
        return raw.startswith(label.rstrip(STAR))
    return False
