"""Linkage attack: the course example, Adult before and after anonymisation, and a brute-force oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdb.anonymize import linkage as pl
from privdb.errors import InvalidParameter, UnknownColumn

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv"


def test_course_example() -> None:
    res = pl.course_example()
    assert res["before"]["unique"] == 5 and res["before"]["correct"] == 5  # Emily and Gladys look alike
    assert res["after"]["unique"] == 0


def test_generalised_release_links_by_coverage() -> None:
    released = pd.DataFrame(
        {"zip": ["476**", "476**", "4790*"], "age": ["20-29", "20-29", "40-49"], "d": list("abc")}
    )
    public = pd.DataFrame(
        {
            "name": ["Ann", "Bob", "Cy", "Di"],
            "zip": ["47677", "47602", "47905", "47677"],
            "age": [29, 22, 43, 55],
        }
    )
    m = pl.match(released, public, ["zip", "age"])
    assert list(m.public_per_class) == [2, 1]
    res = pl.link(released, public, ["zip", "age"], truth=[0, 1, 2])
    assert res.unique == 1 and res.correct == 1
    assert list(res.released_rows) == [2] and list(res.public_rows) == [2]


cells = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(["1", "2", "3", "1-2", "2-3", "*"]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["a", "b", "a|b", "*"]), min_size=n, max_size=n),
    )
)
public_rows = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from(["a", "b", "c"])), min_size=1, max_size=25
)


def covers(label: str, value: str) -> bool:
    if label in ("*", value):
        return True
    if "|" in label:
        return value in label.split("|")
    if "-" in label:
        lo, hi = label.split("-")
        return value.isdigit() and int(lo) <= int(value) <= int(hi)
    return False


@settings(max_examples=100, deadline=None)
@given(cells, public_rows)
def test_match_and_link_against_brute_force(
    rel: tuple[list[str], list[str]], pub: list[tuple[int, str]]
) -> None:
    released = pd.DataFrame({"x": rel[0], "y": rel[1]})
    public = pd.DataFrame({"x": [p[0] for p in pub], "y": [p[1] for p in pub]})
    suppressed = [(a, b) == ("*", "*") for a, b in zip(rel[0], rel[1], strict=True)]
    hits = [
        [j for j, (px, py) in enumerate(pub) if not suppressed[i] and covers(rx, str(px)) and covers(ry, py)]
        for i, (rx, ry) in enumerate(zip(rel[0], rel[1], strict=True))
    ]
    back = [sum(1 for h in hits if j in h) for j in range(len(pub))]
    want = sorted(i for i, h in enumerate(hits) if len(h) == 1 and back[h[0]] == 1)
    res = pl.link(released, public, ["x", "y"])
    assert list(res.released_rows) == want
    assert [int(hits[i][0]) for i in want] == list(res.public_rows)


def test_adult_example_before_and_after() -> None:
    res = pl.adult_example(ADULT, public_share=0.5, k=10, seed=1)
    assert res["before"]["unique"] > 1000
    assert res["before"]["correct"] == res["before"]["unique"]
    assert res["after"]["unique"] == 0


def test_linkage_errors() -> None:
    df = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(UnknownColumn):
        pl.link(df, pd.DataFrame({"b": [1]}), ["a"])
    with pytest.raises(InvalidParameter, match="empty"):
        pl.link(df, df.iloc[:0], ["a"])
    with pytest.raises(InvalidParameter, match="same order"):
        pl.linkage_attack(df, df.iloc[:1], df, ["a"])
    with pytest.raises(InvalidParameter, match="truth"):
        pl.link(df, df, ["a"], truth=np.array([0]))
