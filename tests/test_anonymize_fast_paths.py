"""The vectorised paths of issue 40 answer as the rules they replace: coverage decided per distinct text
(``cells._texts_covered``) as pair by pair, Mondrian's ordered-category labels from bit-mask words as
from sorted pairs, the leaves of ``|`` sets counted at once as one by one, and the CSV writer's quick test
for text that needs quoting."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdb.anonymize import cells, mondrian_labels
from privdb.anonymize._classes import STAR, hierarchy_frame
from privdb.anonymize.cells import covered, pair_covered, parse_intervals
from privdb.anonymize.mondrian import partition
from privdb.anonymize.mondrian_codes import encode
from privdb.anonymize.tables import write_table
from privdb.anonymize.utility import _leaf_sets, _leaves_of

_INTERVAL = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*-\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")


def _one_pair(raw: str, label: str, pairs: set[str]) -> bool:
    """The rules of ``covered`` for one pair, written out plainly."""
    if label in (STAR, raw) or f"{raw}\x1f{label}" in pairs:
        return True
    found = _INTERVAL.match(label)
    if found is not None:
        try:
            if float(found[1]) <= float(raw) <= float(found[2]):
                return True
        except ValueError:
            pass
    if "|" in label:
        return raw in label.split("|")
    return label.endswith(STAR) and len(label) == len(raw) and raw.startswith(label.rstrip(STAR))


def _random_pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    words = np.array(["a", "b", "c", "ab", "3", "31", "32", "12", "7.5", "-2", "x y", ""], dtype=object)
    raw = words[rng.integers(0, len(words), n)]
    labels = []
    for i in range(n):
        kind = rng.integers(0, 6)
        if kind == 0:
            labels.append(STAR)
        elif kind == 1:
            labels.append(str(raw[i]))
        elif kind == 2:
            lo = int(rng.integers(-5, 30))
            labels.append(f"{lo}-{lo + int(rng.integers(0, 10))}")
        elif kind == 3:
            labels.append("|".join(words[rng.integers(0, len(words), rng.integers(1, 5))]))
        elif kind == 4:
            labels.append(["3*", "1*", "**", "a*", "*b"][int(rng.integers(0, 5))])
        else:
            labels.append(str(words[rng.integers(0, len(words))]))
    return raw, np.asarray(labels, dtype=object)


@pytest.mark.parametrize("seed", range(4))
def test_text_pairs_are_covered_as_pair_by_pair(seed: int) -> None:
    raw, label = _random_pairs(3000, seed)
    hierarchy = hierarchy_frame(
        pd.DataFrame({0: ["a", "b", "ab"], 1: ["ab", "ab", "ab"], 2: ["x", "x", "x"]}), "c"
    )
    pairs = set(cells.hierarchy_pairs(hierarchy))
    for h, known in ((None, set()), (hierarchy, pairs)):
        expected = np.array([_one_pair(r, lab, known) for r, lab in zip(raw, label, strict=True)])
        assert np.array_equal(pair_covered(raw, label, h), expected)


@pytest.mark.parametrize("seed", range(3))
def test_covered_on_categoricals_is_covered_on_text(seed: int) -> None:
    """A categorical column (as the report's columns are) is numbered by its own codes: the same pairs,
    counts and coverage as the text, with unused categories and a missing value left as text would have
    them, and the labels' ``|`` sets split once for coverage and utility."""
    raw, label = _random_pairs(2000, seed)
    raw[::97] = None
    as_text = pd.Series(raw, dtype=object), pd.Series(label, dtype=object)
    extra = ["never", "seen|here"]
    as_cat = (
        pd.Series(pd.Categorical(raw, categories=[*sorted(set(raw) - {None}), "never"])),
        pd.Series(pd.Categorical(label, categories=[*sorted(set(label)), *extra])),
    )
    got, want = cells.cell_pairs(*as_cat), cells.cell_pairs(*as_text)
    assert sorted(got.raws.tolist()) == sorted(want.raws.tolist())
    assert sorted(got.labels.tolist()) == sorted(want.labels.tolist())
    per_record = [(got.raw[p], got.label[p]) for p in got.of_record]
    assert per_record == [(want.raw[p], want.label[p]) for p in want.of_record]
    assert np.array_equal(covered(*as_cat), covered(*as_text))
    one_by_one = [_leaves_of(str(label), pd.Index(got.raws)) for label in got.labels]
    shared = _leaf_sets(got.labels, pd.Index(got.raws), got.sets)
    assert np.array_equal(shared, np.array(one_by_one), equal_nan=True)


def test_a_missing_released_label_is_the_text_nan_not_another_label() -> None:
    """pandas 3's ``astype(str)`` keeps NaN: a missing label must not be read as the last label there is."""
    raw = pd.Series(["a", None, "a"], dtype=object)
    released = pd.Series(pd.Categorical(["a|b", None, "a"]))
    got = cells.cell_pairs(raw, released)
    assert [(got.raw[p], got.label[p]) for p in got.of_record] == [("a", "a|b"), ("nan", "nan"), ("a", "a")]
    assert covered(raw, released).tolist() == [True, True, True]  # missing, and shown as missing


def test_values_that_are_not_text_keep_the_pair_by_pair_path() -> None:
    raw = np.array([1, "1", 2.5, "x"], dtype=object)
    label = np.array(["1", 1, "2-3", "x|y"], dtype=object)
    assert pair_covered(raw, label).tolist() == [False, False, True, True]


def test_covered_reads_numbers_and_sets_per_record() -> None:
    raw = pd.Series([17, 30, 45, 30], name="age")
    released = pd.Series(["17-30", "17-30", "40-44", "30|45"], name="age")
    assert covered(raw, released).tolist() == [True, True, False, True]


@pytest.mark.parametrize("strict", [True, False])
def test_ordered_labels_from_words_are_those_from_sorted_pairs(
    strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 50, n),
            "c": [f"v{int(x)}" for x in rng.zipf(1.3, n) % 300],  # > 63 values: several words per mask
            "d": [f"w{int(x)}" for x in rng.integers(0, 70, n)],
        }
    )
    dims = [encode(frame[c], None) for c in frame.columns]
    ids, sizes = partition(dims, 5, strict=strict)
    words, loss = mondrian_labels.generalize(dims, ids, sizes)
    monkeypatch.setattr(mondrian_labels, "_MAX_WORDS", 0)  # every set through the sorted-pairs path
    monkeypatch.setattr(mondrian_labels, "_MAX_BITS", 64)
    pairs, loss_pairs = mondrian_labels.generalize(dims, ids, sizes)
    assert loss == loss_pairs
    for x, y in zip(words, pairs, strict=True):
        assert np.array_equal(x.codes, y.codes) and x.labels.tolist() == y.labels.tolist()


def test_word_sets_read_back_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    xs = np.array([0, 64, 200, 0, 64, 5, 199], dtype=np.int64)
    pid = np.array([0, 0, 0, 1, 1, 2, 2], dtype=np.int64)
    monkeypatch.setattr(mondrian_labels, "_MAX_BITS", 64)
    inv, row, code = mondrian_labels._word_sets(xs, pid, 3, 201)
    assert inv.tolist() == [0, 1, 2]
    assert list(zip(row.tolist(), code.tolist(), strict=True)) == [
        (0, 0),
        (0, 64),
        (0, 200),
        (1, 0),
        (1, 64),
        (2, 5),
        (2, 199),
    ]


@pytest.mark.parametrize("seed", range(3))
def test_intervals_read_one_by_one_as_the_pattern_reads_them(seed: int) -> None:
    """parse_intervals (a loop that passes ``|`` sets over) gives each label the bounds the interval pattern
    reads, and NaN where it reads none: ranges, sets, masks, numbers, padded and negative forms, NULLs."""
    rng = np.random.default_rng(seed)
    pool = ["17-90", " 3 - 4 ", "-3--1", "1.5-2e3", "1e999-2", "20", "-5", "a|b", "1-2|3-4", "32**", STAR]
    drawn = [pool[i] for i in rng.integers(0, len(pool), 500)]
    labels = np.array([*drawn, "x-y", None, np.nan, 7, 2.5], dtype=object)
    lo, hi = parse_intervals(labels)
    for label, low, high in zip(labels, lo, hi, strict=True):
        found = _INTERVAL.match(str(label))
        want = (float(found[1]), float(found[2])) if found else (np.nan, np.nan)
        np.testing.assert_array_equal([low, high], want)


def test_leaves_of_sets_counted_at_once_as_one_by_one() -> None:
    labels = np.array(["a|b", "a|a|b", "*", "3*", "x", "|", "b|c|b|c", "33|3"], dtype=object)
    raw_text = pd.Index(["a", "b", "30", "31", "4"])
    expected = [_leaves_of(str(x), raw_text) for x in labels]
    assert np.array_equal(_leaf_sets(labels, raw_text), np.array(expected), equal_nan=True)


@pytest.mark.parametrize("values", [["a", "b|c", "d"], ["a;b", "c", "d"], ['say "hi"', "b", "c"]])
def test_written_text_matches_pandas_whatever_it_holds(tmp_path: Path, values: list[str]) -> None:
    frame = pd.DataFrame({"x": pd.Series(values * 3, dtype=object), "n": range(9)})
    write_table(frame, tmp_path / "t.csv", ";")
    assert (tmp_path / "t.csv").read_bytes() == frame.to_csv(index=False, sep=";").encode("utf-8")


def test_a_last_nul_is_still_dropped_as_before(tmp_path: Path) -> None:
    """Text went through NumPy's fixed-width strings, which drop a last NUL: kept, so releases stay the
    same bytes."""
    frame = pd.DataFrame({"x": pd.Series(["a\x00", "b"], dtype=object), "n": [0, 1]})
    write_table(frame, tmp_path / "t.csv", ";")
    assert (tmp_path / "t.csv").read_bytes() == b"x;n\na;0\nb;1\n"
