"""Linkage attack: join a release with a public, named table on the quasi-identifiers (Sweeney 2002).

The course's story: the Massachusetts governor's hospital record was found by joining the "anonymous"
release with the Cambridge voter list on postcode, birth date and sex. A public record matches a released
class when every public quasi-identifier value is covered by the class's released value (a ``lo-hi`` range
holds it, a label or ``|`` set contains it, ``*`` covers all; raw values must be equal). A released record
is re-identified uniquely when it matches exactly one public record and that public record matches no
other released record. Suppressed records publish no quasi-identifier and are left out of the join.

The join never loops over records: public records are reduced to distinct tuples, coverage is decided
once per distinct (released value, public value) pair and column, candidate (class, tuple) pairs come from
the most selective column and are filtered by array look-ups on the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize import anonymize
from privdb.anonymize._classes import (
    STAR,
    BoolArray,
    Classes,
    IntArray,
    ObjArray,
    combine,
    group,
    require_columns,
    require_rows,
    text,
)
from privdb.anonymize.cells import pair_covered, parse_intervals
from privdb.anonymize.hierarchy import DateHierarchy, Hierarchy
from privdb.anonymize.population import unread_labels
from privdb.errors import InvalidParameter

__all__ = ["Linkage", "Match", "adult_example", "course_example", "link", "linkage_attack", "match",
           "match_population"]  # fmt: skip


@dataclass(frozen=True)
class Coverage:
    """The (released text, public text) pairs of one column in which the first covers the second, sorted."""

    side: IntArray
    value: IntArray
    shape: tuple[int, int]
    unread: IntArray  # released texts that are no *, range, set or mask, and cover no public text
    plain: int  # released texts that are no *, range, set or mask

    def holds(self, side: IntArray, value: IntArray) -> BoolArray:
        """Whether each (side, value) pair is a covering one."""
        width = max(self.shape[1], 1)
        known = self.side * width + self.value
        asked = side * width + value
        at = np.minimum(np.searchsorted(known, asked), max(len(known) - 1, 0))
        return np.asarray(known[at] == asked, dtype=bool) if len(known) else np.zeros(len(asked), dtype=bool)


@dataclass(frozen=True)
class Match:
    """The join of a release's classes with a public table's records."""

    classes: Classes
    pair_class: IntArray  # matching (class, public tuple) pairs
    pair_tuple: IntArray
    tuple_of_public: IntArray  # public record → its distinct quasi-identifier tuple
    tuple_count: IntArray
    public_per_class: IntArray  # public records each class covers
    released_per_tuple: IntArray  # released (non-suppressed) records each public tuple matches
    #: per column, the released texts that are no ``*``, range, set, mask, public value or label of the
    #: column's hierarchy (so they cover no public record), and the released records holding them
    unread: dict[str, tuple[ObjArray, int]] = field(default_factory=dict)
    #: the columns of ``unread`` whose every such text is unread: no released record's value is a public one
    all_unread: frozenset[str] = frozenset()


def _side(values: pd.Series) -> tuple[IntArray, ObjArray]:
    """Codes and distinct canonical texts of a column."""
    codes, uniq = pd.factorize(pd.Series(text(values.to_numpy()), dtype=object), use_na_sentinel=False)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def match(
    released: pd.DataFrame,
    public: pd.DataFrame,
    qi: Sequence[str],
    *,
    classes: Classes | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> Match:
    """Which public records each released class covers (see the module docstring). With ``hierarchies``
    (those the release was generalised with), a released label also covers the public values the
    column's hierarchy maps to it at some level, so category names such as ``Undergraduate`` join."""
    require_columns(released, qi, "release")
    require_columns(public, qi, "public table")
    require_rows(public, "public table")
    cl = classes if classes is not None else group(released, qi)
    # public records → distinct tuples of canonical text
    pub = [_side(public[c]) for c in qi]
    tup, first_pub = pd.factorize(combine([c for c, _ in pub], [len(u) for _, u in pub]))
    tup = tup.astype(np.int64)
    n_tup = len(first_pub)
    rep = np.zeros(n_tup, dtype=np.int64)
    rep[tup[::-1]] = np.arange(len(tup))[::-1]
    tuple_count = np.bincount(tup, minlength=n_tup).astype(np.int64)
    # per column: class side codes, tuple value codes, coverage of the (side, value) pairs (sparse)
    cols: list[tuple[IntArray, IntArray, Coverage]] = []
    unread: dict[str, tuple[ObjArray, int]] = {}
    all_unread: list[str] = []
    for j, c in enumerate(qi):
        s_code, s_uniq = _side(released[c].iloc[cl.first].reset_index(drop=True))
        v_code, v_uniq = pub[j][0][rep], pub[j][1]
        grid = _coverage(c, s_uniq, v_uniq, (hierarchies or {}).get(c))
        cols.append((s_code, v_code, grid))
        if len(grid.unread):
            unread[c] = (s_uniq[grid.unread], int(cl.sizes[np.isin(s_code, grid.unread)].sum()))
            all_unread += [c] if len(grid.unread) == grid.plain else []
    pc, pt = _candidates(cols, cl.n_classes, n_tup)
    for s_code, v_code, grid in cols:
        keep = grid.holds(s_code[pc], v_code[pt])
        pc, pt = pc[keep], pt[keep]
    return Match(
        classes=cl,
        pair_class=pc,
        pair_tuple=pt,
        tuple_of_public=tup,
        tuple_count=tuple_count,
        public_per_class=np.bincount(pc, tuple_count[pt], cl.n_classes).astype(np.int64),
        released_per_tuple=np.bincount(pt, cl.sizes[pc], n_tup).astype(np.int64),
        unread=unread,
        all_unread=frozenset(all_unread),
    )


def match_population(
    released: pd.DataFrame,
    population: pd.DataFrame,
    qi: Sequence[str],
    classes: Classes,
    hierarchies: Mapping[str, Hierarchy] | None,
) -> Match:
    """``match`` against a population that holds the research sample (δ-presence, k-map, risk): a released
    value read as covering nobody would under-count its class's population, so it is refused."""
    m = match(released, population, qi, classes=classes, hierarchies=hierarchies)
    if m.unread:
        raise InvalidParameter(unread_labels(m.unread, hierarchies))
    return m


def _coverage(
    column: str, s_uniq: ObjArray, v_uniq: ObjArray, hierarchy: Hierarchy | None = None
) -> Coverage:
    """Which released texts cover which public texts, as the list of covering pairs. A released
    text that is no ``*``, range, set or mask covers only itself: those pairs come from a hash join, so a
    raw column (an id, a name) with many distinct values joins in linear time; the others are decided
    against every public text. With ``hierarchy``, a released text also covers each public text whose
    label at some level it is (one hash join per level). ``unread``: the released texts read as themselves
    that cover no public text and that the hierarchy (if any) does not know either."""
    lo, hi = parse_intervals(s_uniq)
    labels = pd.Series(s_uniq, dtype=object).astype(str)
    general = (labels == STAR) | labels.str.contains("|", regex=False) | labels.str.endswith(STAR)
    ranged = ~np.isnan(lo) & ~(lo > hi)  # `2020-01` (a month) is no range: it is read below, or unread
    general_at = np.flatnonzero(general.to_numpy() | ranged)
    plain_at = np.setdiff1d(np.arange(len(s_uniq)), general_at)
    found = pd.Index(v_uniq).get_indexer(pd.Index(s_uniq[plain_at]))
    rows, cols = [plain_at[found >= 0]], [found[found >= 0]]
    if len(general_at):
        if len(general_at) * len(v_uniq) > 20_000_000:
            raise InvalidParameter(
                f"column '{column}' has too many distinct generalised and public values to join "
                f"({len(general_at)} × {len(v_uniq)}): generalise it further or leave it out of --on"
            )
        grid = pair_covered(np.repeat(v_uniq, len(general_at)), np.tile(s_uniq[general_at], len(v_uniq)))
        v_at, g_at = np.nonzero(grid.reshape(len(v_uniq), len(general_at)))
        rows.append(general_at[g_at])
        cols.append(v_at)
    looked_up, values = hierarchy, v_uniq
    if hierarchy is None and labels.str.fullmatch(_DATE_PREFIX).any():
        # a month or year of privdb's date hierarchy covers the public dates (YYYY-MM-DD…) in it
        dated = pd.Series(v_uniq, dtype=object).astype(str).str.match(r"\d{4}-\d{2}-\d{2}").to_numpy()
        looked_up, values = DateHierarchy(column), v_uniq.copy()
        values[~dated] = None
    if looked_up is not None:  # a released label covers the public values the hierarchy maps to it
        side = pd.Index(s_uniq)
        for level in range(1, 3) if hierarchy is None else range(looked_up.height + 1):
            at = side.get_indexer(pd.Index(looked_up.labels(values, level)))
            rows.append(at[at >= 0])
            cols.append(np.flatnonzero(at >= 0))
    r, c = np.concatenate(rows).astype(np.int64), np.concatenate(cols).astype(np.int64)
    key = np.unique(r * max(len(v_uniq), 1) + c)  # sorted, each covering pair once
    r, c = key // max(len(v_uniq), 1), key % max(len(v_uniq), 1)
    unread = np.setdiff1d(plain_at, r)
    if len(unread) and hierarchy is not None:
        unread = unread[~pd.Index(s_uniq[unread]).isin(_labels_of(hierarchy))]
    return Coverage(r, c, (len(s_uniq), len(v_uniq)), unread.astype(np.int64), len(plain_at))


_DATE_PREFIX = r"\d{4}(-\d{2})?"  # DateHierarchy's year and month labels (YYYY, YYYY-MM)


def _labels_of(hierarchy: Hierarchy) -> ObjArray:
    """Every text the hierarchy publishes for its raw values, at any level (the raw values included)."""
    dom = np.asarray(hierarchy.domain)
    return np.concatenate([text(hierarchy.labels(dom, i)) for i in range(hierarchy.height + 1)])


def _candidates(
    cols: list[tuple[IntArray, IntArray, Coverage]], n_cls: int, n_tup: int
) -> tuple[IntArray, IntArray]:
    """(class, tuple) pairs matching on the column that yields the fewest of them."""
    best: tuple[int, int] | None = None
    for j, (s_code, v_code, grid) in enumerate(cols):
        nc = np.bincount(s_code, minlength=grid.shape[0])
        nt = np.bincount(v_code, minlength=grid.shape[1])
        total = int(np.dot(nc[grid.side], nt[grid.value]))
        if best is None or total < best[1]:
            best = (j, total)
    assert best is not None
    s_code, v_code, grid = cols[best[0]]
    c_order, t_order = np.argsort(s_code, kind="stable"), np.argsort(v_code, kind="stable")
    nc = np.bincount(s_code, minlength=grid.shape[0])
    nt = np.bincount(v_code, minlength=grid.shape[1])
    c_start, t_start = np.cumsum(nc) - nc, np.cumsum(nt) - nt
    s, v = grid.side, grid.value
    a, b = nc[s], nt[v]
    size = a * b
    block = np.repeat(np.arange(len(s)), size)
    off = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    bb = b[block]
    pc = c_order[c_start[s[block]] + off // np.maximum(bb, 1)]
    pt = t_order[t_start[v[block]] + off % np.maximum(bb, 1)]
    return pc.astype(np.int64), pt.astype(np.int64)


@dataclass(frozen=True)
class Linkage:
    """Outcome of one linkage attack."""

    released: int
    public: int
    unique: int  # released records re-identified uniquely
    correct: int | None  # of those, how many are the right person (when the truth is known)
    released_rows: IntArray  # the uniquely linked released rows
    public_rows: IntArray  # and their public rows
    #: per column, released values that match no public value (``Match.unread``) and their records
    unread: dict[str, tuple[ObjArray, int]] = field(default_factory=dict)

    @property
    def share(self) -> float:
        return self.unique / self.released if self.released else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "released": self.released,
            "public": self.public,
            "unique": self.unique,
            "share": self.share,
            "correct": self.correct,
        }


def link(
    released: pd.DataFrame,
    public: pd.DataFrame,
    qi: Sequence[str],
    *,
    truth: Sequence[int] | IntArray | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    refuse_labels: bool = False,
) -> Linkage:
    """Re-identify released records by joining with ``public`` on ``qi``.

    ``truth[i]`` (optional) is the public row of released row i's person, −1 if absent; it lets the result
    say how many unique links are right. ``hierarchies`` (those the release was generalised with) let a
    category label such as ``Undergraduate`` match the public values under it (``match``).

    A released value that matches no public value is either a raw value of someone not on the public list
    (normal: ``Linkage.unread`` lists them) or a label read without its hierarchy, which would hide links.
    ``refuse_labels`` refuses a column in which no released value (other than ``*``, ranges, sets, masks)
    matches a public value: it then reads as labels, and the join would find no record through it.
    """
    m = match(released, public, qi, hierarchies=hierarchies)
    if refuse_labels and m.all_unread:
        labelled = {c: v for c, v in m.unread.items() if c in m.all_unread}
        raise InvalidParameter(unread_labels(labelled, hierarchies, joined="public table"))
    cl = m.classes
    once = (cl.sizes[m.pair_class] == 1) & (m.public_per_class[m.pair_class] == 1)
    once &= m.released_per_tuple[m.pair_tuple] == 1
    rows = cl.first[m.pair_class[once]]
    pub_first = np.zeros(len(m.tuple_count), dtype=np.int64)
    pub_first[m.tuple_of_public[::-1]] = np.arange(len(m.tuple_of_public))[::-1]
    pub_rows = pub_first[m.pair_tuple[once]]
    correct = None
    if truth is not None:
        tr = np.asarray(truth, dtype=np.int64)
        if len(tr) != len(released):
            raise InvalidParameter("truth needs one public row (or −1) per released record")
        correct = int((tr[rows] == pub_rows).sum())
    order = np.argsort(rows)
    found = (rows[order], pub_rows[order])
    return Linkage(len(released), len(public), len(rows), correct, *found, unread=m.unread)


def linkage_attack(
    original: pd.DataFrame,
    released: pd.DataFrame,
    public: pd.DataFrame,
    qi: Sequence[str],
    *,
    truth: Sequence[int] | IntArray | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> dict[str, Linkage]:
    """The same attack on the original (names removed) and on the release: ``{"before": …, "after": …}``;
    ``hierarchies``: those the release was generalised with (``link``)."""
    if len(original) != len(released):
        raise InvalidParameter("the release must keep the original's records in the same order")
    return {
        "before": link(original, public, qi, truth=truth),
        "after": link(released, public, qi, truth=truth, hierarchies=hierarchies),
    }


# ----------------------------------------------------------------------------------------------- examples

_PATIENTS = pd.DataFrame(
    {
        "name": ["Bob", "Fred", "Doug", "Alice", "Cathy", "Emily", "Gladys"],
        "job": ["engineer", "engineer", "lawyer", "writer", "writer", "dancer", "dancer"],
        "sex": ["male", "male", "male", "female", "female", "female", "female"],
        "age": [35, 38, 38, 30, 33, 31, 31],
        "disease": ["hepatitis", "hepatitis", "HIV", "flu", "HIV", "HIV", "HIV"],
    }
)


def course_example() -> dict[str, Any]:
    """The notes' patients table (004) against a voter list holding them and three other people.

    The release generalises job to ``engineer|lawyer`` / ``dancer|writer`` and age to ranges, giving
    classes of 3 and 4: before, 5 of 7 patients are linked to their name; after, none.
    """
    qi = ["job", "sex", "age"]
    original = _PATIENTS.drop(columns=["name"])
    released = original.copy()
    male = original["sex"] == "male"
    released["job"] = np.where(male, "engineer|lawyer", "dancer|writer")
    released["age"] = np.where(male, "35-38", "30-33")
    extra = pd.DataFrame(
        {
            "name": ["Hank", "Ivy", "Jules"],
            "job": ["lawyer", "writer", "dancer"],
            "sex": ["male", "female", "male"],
            "age": [52, 44, 31],
        }
    )
    voters = pd.concat([_PATIENTS[["name", *qi]], extra], ignore_index=True)
    truth = np.arange(len(original))
    res = linkage_attack(original, released, voters, qi, truth=truth)
    return {key: value.to_dict() for key, value in res.items()}


ADULT_PUBLIC_QI = ("age", "sex", "race", "marital-status", "education", "native-country")


def adult_example(
    path: str | Path, *, public_share: float = 0.5, k: int = 10, seed: int = 0
) -> dict[str, Any]:
    """Adult against a public list sampled from it with synthetic names, before and after Mondrian at k.

    The public list holds what a voter list and a profile page reveal (``ADULT_PUBLIC_QI``) for a random
    ``public_share`` of the people, each named ``person-<n>``.
    """
    if not 0 < public_share <= 1:
        raise InvalidParameter(f"public_share must be in (0, 1] (got {public_share!r})")
    qi = list(ADULT_PUBLIC_QI)
    df = pd.read_csv(path, sep=";", skipinitialspace=True)
    gen = np.random.default_rng(seed)
    chosen = np.sort(gen.choice(len(df), size=round(public_share * len(df)), replace=False))
    public = df.iloc[chosen][qi].reset_index(drop=True)
    public.insert(0, "name", [f"person-{i:05d}" for i in range(len(public))])
    truth = np.full(len(df), -1, dtype=np.int64)
    truth[chosen] = np.arange(len(chosen))
    released = anonymize(df, qi, k=k).table
    res = linkage_attack(df, released, public, qi, truth=truth)
    return {"qi": qi, "k": k, **{key: value.to_dict() for key, value in res.items()}}
