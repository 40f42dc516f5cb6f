"""Risk and utility: RESEARCH.md's Adult figures, brute-force per-record oracles, hand-computed losses."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdb.anonymize import risk as pr
from privdb.anonymize import utility as pu
from privdb.anonymize._classes import group
from privdb.errors import InvalidParameter, UnknownColumn

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv"
ADULT_QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]


def test_raw_adult_figures() -> None:
    df = pd.read_csv(ADULT, sep=";")
    r = pr.risk(df, ADULT_QI).to_dict()
    assert r["prosecutor_avg"] == pytest.approx(0.600, abs=5e-4)  # #classes / n, as ARX
    assert r["sample_uniques"] == pytest.approx(0.465, abs=5e-4)
    assert r["prosecutor_max"] == 1.0 and r["journalist_max"] == 1.0
    assert r["marketer"] == pytest.approx(r["prosecutor_avg"])
    metrics = pytest.importorskip("pycanon.metrics")
    assert metrics.average_rir(df, ADULT_QI) == pytest.approx(0.857, abs=5e-4)  # the mean over classes


rows = st.integers(1, 50).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(["1", "2", "3", "*"]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["a", "b", "*"]), min_size=n, max_size=n),
    )
)


@settings(max_examples=100, deadline=None)
@given(rows)
def test_risk_matches_per_record_oracle(data: tuple[list[str], list[str]]) -> None:
    df = pd.DataFrame({"x": data[0], "y": data[1]})
    keys = list(zip(df["x"], df["y"], strict=True))
    counts = Counter(keys)
    n_sup = counts.get(("*", "*"), 0)
    per_record = [1 / counts[k] for k in keys]  # suppressed records: one set of size |suppressed|
    r = pr.risk(df, ["x", "y"])
    assert r.prosecutor_max == pytest.approx(max(per_record))
    assert r.prosecutor_avg == pytest.approx(sum(per_record) / len(df))
    assert r.sample_uniques == pytest.approx(
        sum(1 for k in keys if counts[k] == 1 and k != ("*", "*")) / len(df)
    )
    assert r.suppressed == n_sup and r.classes == len(counts) - (1 if n_sup else 0)
    assert pr.record_risk(group(df, ["x", "y"])) == pytest.approx(per_record)


def test_journalist_against_population() -> None:
    sample = pd.DataFrame({"age": ["30-39", "30-39", "40-49"], "sex": ["m", "m", "f"]})
    population = pd.DataFrame(
        {"age": [31, 35, 38, 33, 41, 45, 52], "sex": ["m", "m", "m", "f", "f", "f", "m"]}
    )
    r = pr.risk(sample, ["age", "sex"], population)
    # class (30-39, m) covers 3 population records, (40-49, f) covers 2
    assert r.journalist_max == pytest.approx(1 / 2)
    assert r.marketer == pytest.approx((2 / 3 + 1 / 2) / 3)
    assert r.prosecutor_max == 1.0


# ------------------------------------------------------------------------------------------------ utility


def test_utility_by_hand() -> None:
    original = pd.DataFrame(
        {"age": [20, 25, 30, 40, 60], "job": ["a", "b", "c", "d", "a"], "s": list("xyzxy")}
    )
    released = pd.DataFrame(
        {
            "age": ["20-30", "20-30", "20-30", "*", "*"],
            "job": ["a|b|c", "a|b|c", "a|b|c", "*", "*"],
            "s": list("xyzxy"),
        }
    )
    u = pu.utility(original, released, ["age", "job"], k=3)
    # age: 3 cells (30-20)/40 = 1/4, 2 suppressed cells 1 → (0.75 + 2)/5; job: 3 cells 2/3, 2 cells 1 → 4/5
    assert u.ncp_by_column["age"] == pytest.approx(0.55)
    assert u.ncp_by_column["job"] == pytest.approx(0.8)
    assert u.ncp == pytest.approx(0.675)
    assert u.discernibility == 9 + 2 * 5
    assert u.avg_class_size == 3 and u.c_avg == 1
    assert u.suppressed == 2 and u.suppression_rate == pytest.approx(0.4)
    assert u.generalised_cells == 1.0
    assert set(u.to_dict()) >= {"ncp", "discernibility", "avg_class_size", "suppressed"}
    assert pu.discernibility(released, ["age", "job"]) == 19


def test_utility_with_hierarchy_and_masks() -> None:
    edu = pd.DataFrame(
        [["Bachelors", "Undergraduate", "*"], ["Masters", "Graduate", "*"], ["Doctorate", "Graduate", "*"]]
    )
    original = pd.DataFrame({"edu": ["Bachelors", "Masters", "Doctorate"], "zip": [3270, 3294, 3400]})
    released = pd.DataFrame({"edu": ["Bachelors", "Graduate", "Graduate"], "zip": ["32**", "32**", "3400"]})
    by = pu.ncp(original, released, ["edu", "zip"], {"edu": edu})
    assert by["edu"] == pytest.approx((0 + 0.5 + 0.5) / 3)  # Graduate: 2 leaves of 3 → 1/2
    assert by["zip"] == pytest.approx((99 / 130 * 2) / 3)
    assert pu.utility(original, original, ["edu", "zip"]).ncp == 0.0


def test_utility_errors() -> None:
    df = pd.DataFrame({"a": ["x", "y"]})
    with pytest.raises(UnknownColumn):
        pu.utility(df, df, ["b"])
    with pytest.raises(InvalidParameter, match="same order"):
        pu.utility(df, df.iloc[:1], ["a"])
    with pytest.raises(InvalidParameter, match="pass the hierarchy"):
        pu.ncp(df, pd.DataFrame({"a": ["Letters", "Letters"]}), ["a"])
    with pytest.raises(InvalidParameter, match="empty"):
        pr.risk(df.iloc[:0], ["a"])
