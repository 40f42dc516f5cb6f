"""Generalisation hierarchies: kinds, ARX's CSV format, validation and the table() contract."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdb.anonymize import (
    DateHierarchy,
    FlatHierarchy,
    IntervalHierarchy,
    MaskHierarchy,
    TaxonomyHierarchy,
    automatic,
    load_hierarchies,
)
from privdb.anonymize.resolve import resolve, validated
from privdb.errors import InvalidParameter, UnknownColumn

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
HIER = ADULT / "hierarchies"


def test_taxonomy_from_arx_csv() -> None:
    h = TaxonomyHierarchy.from_csv(HIER / "education.csv")
    assert h.height == 3
    assert h.labels(np.array(["Masters", "9th"], dtype=object), 1).tolist() == ["Graduate", "High School"]
    assert h.generalize(pd.Series(["Masters", "Masters", "9th"]), 3).tolist() == ["*", "*", "*"]
    table = h.table()
    assert list(table.columns) == ["level0", "level1", "level2", "level3"]
    assert len(table) == 16 and (table["level3"] == "*").all()


def test_numeric_taxonomy_matches_integers() -> None:
    h = TaxonomyHierarchy.from_csv(HIER / "age.csv", fix_labels=True)
    assert h.generalize(pd.Series([39, 17, 41]), 1).tolist() == ["36-40", "16-20", "41-45"]


def test_the_shipped_age_hierarchy_is_refused_with_its_bad_rows() -> None:
    """Issue 15: ARX's Adult age hierarchy puts 5 under '0-4', 40 under '35-39' and 60 under '40-59'."""
    with pytest.raises(InvalidParameter) as err:
        TaxonomyHierarchy.from_csv(HIER / "age.csv")
    message = str(err.value)
    assert "(20 row(s))" in message  # 5, 10, …, 100: the top of every five-year label
    assert (
        "row 40 (40;35-39;30-39;20-39;*): 40 is not in '35-39', 40 is not in '30-39', 40 is not in '20-39'"
        in (message)
    )
    assert "and 12 more row(s)" in message and "--fix-labels" in message
    with pytest.raises(InvalidParameter, match="exclude their own values"):
        load_hierarchies(HIER, ["age"])


def test_fix_labels_renames_only_the_labels_that_exclude_their_values() -> None:
    rows = [["1", "0-4", "*"], ["5", "0-4", "*"], ["6", "5-9", "*"], ["9", "5-9", "*"], ["x", "other", "*"]]
    h = TaxonomyHierarchy("n", rows, fix_labels=True)
    assert h.labels(np.array(["1", "5", "6", "9", "x"], dtype=object), 1).tolist() == [
        "1-5", "1-5", "5-9", "5-9", "other"
    ]  # fmt: skip
    fixed = TaxonomyHierarchy.from_csv(HIER / "age.csv", fix_labels=True).table()
    for level in ("level1", "level2", "level3"):  # every label now holds the ages under it
        bounds = fixed[level].str.split("-", expand=True).astype(int)
        ages = fixed["level0"].astype(int)
        assert ((bounds[0] <= ages) & (ages <= bounds[1])).all()
    assert sorted(fixed["level3"].unique()) == ["1-20", "21-40", "41-60", "61-80", "81-100"]
    with pytest.raises(InvalidParameter, match="merge it"):
        TaxonomyHierarchy("n", [["1", "5-9", "*"], ["9", "5-9", "*"], ["2", "1-9", "*"]], fix_labels=True)


def test_load_hierarchies_reads_column_files() -> None:
    hs = load_hierarchies(HIER, ["age", "sex", "no-such-column"], fix_labels=True)
    assert set(hs) == {"age", "sex"}
    with pytest.raises(InvalidParameter, match="does not exist"):
        load_hierarchies(HIER / "missing", ["age"])


def test_missing_values_are_named_with_the_fix() -> None:
    h = TaxonomyHierarchy("col", [["a", "x", "*"], ["b", "x", "*"]])
    column = pd.Series(["a", "b", "c", "d", "c"], name="col")
    with pytest.raises(InvalidParameter) as err:
        validated(h, column)
    msg = str(err.value)
    assert "misses 2 value(s)" in msg and "'c'" in msg and "'d'" in msg
    assert "2 value(s), 2 level(s)" in msg  # hierarchy-side facts
    assert "Add a row" in msg and "fallback" in msg
    fixed = validated(h, column, fallback=True)
    assert fixed.generalize(column, 1).tolist() == ["x", "x", "c", "d", "c"]
    assert fixed.generalize(column, 2).tolist() == ["*"] * 5


def test_taxonomy_must_be_a_tree() -> None:
    with pytest.raises(InvalidParameter, match="not a tree"):
        TaxonomyHierarchy("c", [["a", "x", "p", "*"], ["b", "x", "q", "*"]])
    with pytest.raises(InvalidParameter, match="twice"):
        TaxonomyHierarchy("c", [["a", "*"], ["a", "*"]])


def test_mask_hierarchy() -> None:
    h = MaskHierarchy.derived("zip", pd.Series(["3270", "3400", "3271"]))
    assert h.height == 4
    assert h.generalize(pd.Series(["3270"]), 1).tolist() == ["327*"]
    assert h.generalize(pd.Series(["3270"]), 2).tolist() == ["32**"]
    assert h.generalize(pd.Series(["3270"]), 4).tolist() == ["*"]


def test_date_hierarchy() -> None:
    h = DateHierarchy("d", ["2020-03-15"])
    s = pd.Series(["2020-03-15", "2021-12-01"])
    assert h.generalize(s, 1).tolist() == ["2020-03", "2021-12"]
    assert h.generalize(s, 2).tolist() == ["2020", "2021"]
    assert h.generalize(s, 3).tolist() == ["*", "*"]


def test_automatic_kinds() -> None:
    df = pd.DataFrame({"age": [20, 35, 61], "zip": ["03270", "03400", "03271"], "job": ["a", "b", "c"]})
    assert isinstance(automatic(df["age"]), IntervalHierarchy)
    assert isinstance(automatic(df["zip"]), MaskHierarchy)
    assert isinstance(automatic(df["job"]), FlatHierarchy)


def test_numeric_column_with_text_is_refused_without_echoing_values() -> None:
    df = pd.DataFrame({"age": [str(a) for a in range(20, 70, 5)] + ["n/a-secret"]})
    with pytest.raises(InvalidParameter) as err:
        resolve(df, ["age"], None)
    assert "1 value(s) are not numbers" in str(err.value) and "secret" not in str(err.value)
    with pytest.raises(UnknownColumn):
        resolve(df, ["age"], {"other": "flat"})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-500, 5000), min_size=1, max_size=60))
def test_derived_intervals_nest_and_cover(values: list[int]) -> None:
    col = pd.Series(values, name="x")
    h = IntervalHierarchy.derived("x", col)
    assert h.labels(np.array(values), h.height).tolist() == ["*"] * len(values)
    prev = None
    for level in range(1, h.height):
        labels = h.generalize(col, level)
        for v, lab in zip(values, labels, strict=True):
            lo, hi = (int(p) for p in lab.rsplit("-", 1)) if not lab.startswith("-") else _neg(lab)
            assert lo <= v <= hi
        if prev is not None:  # a tree: each level-i label has one parent
            pairs = pd.DataFrame({"c": prev, "p": labels}).drop_duplicates()
            assert not pairs["c"].duplicated().any()
        prev = labels


def _neg(label: str) -> tuple[int, int]:
    head, _, tail = label[1:].partition("-")
    return -int(head), int(tail)


def test_widths_must_nest() -> None:
    with pytest.raises(InvalidParameter, match="whole multiples"):
        IntervalHierarchy("x", [5, 7])
    h = IntervalHierarchy("x", [5, 10], origin=0)
    assert h.generalize(pd.Series([7, 12]), 1).tolist() == ["5-9", "10-14"]
    assert h.generalize(pd.Series([7, 12]), 2).tolist() == ["0-9", "10-19"]


def test_raw_strings_never_wrap_and_give_each_value_one_text_whatever_else_is_present() -> None:
    """Whole floats past int64 once went through int64: 1e308 and −1e308 both became
    '-9223372036854775808' (a made-up value, and one class for two). A value's text must also not depend
    on the other values beside it (2^62 read one way next to whole numbers, another next to 0.5): the
    lattice maps a column's distinct values together, so that would make the public map depend on others'
    records."""
    from privdb.anonymize.hierarchy import raw_strings

    big = raw_strings(np.array([1e308, -1e308]))
    assert big[0] == "1" + "0" * 308 and big[1] == "-" + big[0]
    for value in (2.0**62, 1e23, -0.0, 3.0, 1e308):
        alone, mixed = raw_strings(np.array([value]))[0], raw_strings(np.array([value, 0.5]))[0]
        assert alone == mixed, (value, alone, mixed)
    assert raw_strings(np.array([2**64 - 1], dtype=np.uint64))[0] == "18446744073709551615"
