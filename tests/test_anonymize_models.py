"""Privacy-model checks: RESEARCH.md's test vectors, the notes' worked example, LP and brute-force oracles,
and agreement with pycanon (an independent checker) on Adult."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.optimize import linprog

from privdb.anonymize import closeness, coverage, distances
from privdb.anonymize import models as pm
from privdb.errors import InvalidParameter, UnknownColumn

DATA = Path(__file__).resolve().parents[1] / "data"
ADULT = DATA / "adult" / "adult.csv"
STUDENTS = DATA / "examples" / "students_os.csv"
ADULT_QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]

# Li, Li, Venkatasubramanian (ICDE 2007), Figure 1, in ARX layout.
DISEASES = pd.DataFrame(
    [
        ["flu", "respiratory infection", "respiratory system", "*"],
        ["pneumonia", "respiratory infection", "respiratory system", "*"],
        ["bronchitis", "respiratory infection", "respiratory system", "*"],
        ["pulmonary edema", "vascular lung", "respiratory system", "*"],
        ["pulmonary embolism", "vascular lung", "respiratory system", "*"],
        ["gastric ulcer", "stomach", "digestive system", "*"],
        ["gastritis", "stomach", "digestive system", "*"],
        ["stomach cancer", "stomach", "digestive system", "*"],
        ["colitis", "colon", "digestive system", "*"],
        ["colon cancer", "colon", "digestive system", "*"],
    ]
)


def salaries() -> pd.DataFrame:
    """RESEARCH.md: 9 salaries 3k..11k in three classes."""
    return pd.DataFrame({"g": [0, 0, 0, 1, 1, 1, 2, 2, 2], "salary": [3, 4, 5, 6, 8, 11, 7, 9, 10]})


def notes_release() -> tuple[pd.DataFrame, pd.DataFrame]:
    """students_os.csv and the notes' 3-anonymous release of it (examples README)."""
    original = pd.read_csv(STUDENTS)
    released = original.copy()
    released["plz"] = ["3200-3299"] * 3 + ["2600-3199"] * 3 + ["3700-3899"] * 3
    released["points"] = ["75-90"] * 3 + ["35-45"] * 3 + ["25-34"] * 3
    return original, released


# -------------------------------------------------------------------------------------- RESEARCH.md vectors


def test_salary_vectors() -> None:
    t = salaries()
    ordered = pm.check(t, ["g"], "salary", distance="ordered").class_t
    assert ordered is not None
    assert ordered[0] == pytest.approx(0.375) and ordered[1] == pytest.approx(1 / 6)
    for kind, value in [("equal", 2 / 3), ("variational", 2 / 3), ("kl", math.log(3))]:
        got = pm.check(t, ["g"], "salary", distance=kind).class_t
        assert got is not None and got[:2] == pytest.approx([value, value])
    assert closeness.t_closeness(t, ["g"], "salary") == pytest.approx(0.375)  # auto: ordered for numbers


def test_recursive_vector() -> None:
    t = pd.DataFrame({"g": [0] * 9, "s": list("aaaaabbbc")})  # counts {5, 3, 1}
    assert pm.recursive_c(t, ["g"], "s", 3) == 6
    assert pm.is_recursive_diverse(t, ["g"], "s", 6, 3)
    assert not pm.is_recursive_diverse(t, ["g"], "s", 5, 3)
    assert pm.recursive_l(t, ["g"], "s", 5.5) == 3 and pm.recursive_l(t, ["g"], "s", 5) == 2
    assert math.isinf(pm.recursive_c(t, ["g"], "s", 4))  # three values cannot be 4-diverse


def test_notes_students_t_closeness() -> None:
    _, released = notes_release()
    res = pm.check(released, ["plz", "points"], "system", distance="variational")
    assert res.class_t is not None
    assert res.class_t * 9 == pytest.approx([4, 5, 2])
    assert res.t == pytest.approx(5 / 9)
    assert res.to_dict()["achieved"] == {"k": 3, "l": 2, "t": pytest.approx(5 / 9)}
    assert closeness.t_closeness(released, ["plz", "points"], "system") == pytest.approx(
        5 / 9
    )  # EMD, equal distance


def test_coverage_catches_3400_in_3200_3299() -> None:
    original, released = notes_release()
    cov = coverage.covers(original, released, ["plz", "points"])
    assert not cov.ok
    assert cov.violations == 1 and cov.by_column == {"plz": 1, "points": 0}
    assert original.loc[cov.rows[0], "last_name"] == "Ayinkamiye"
    fixed = released.copy()
    fixed["plz"] = ["3200-3400"] * 3 + ["2600-3199"] * 3 + ["3700-3899"] * 3
    assert coverage.covers(original, fixed, ["plz", "points"]).ok


def test_coverage_kinds() -> None:
    original = pd.DataFrame({"zip": ["3270", "3294"], "job": ["a", "b"], "edu": ["Bachelors", "9th"]})
    edu = pd.DataFrame([["Bachelors", "Undergraduate", "*"], ["9th", "High School", "*"]])
    released = pd.DataFrame({"zip": ["32**", "33**"], "job": ["a|c", "a|c"], "edu": ["Undergraduate", "*"]})
    cov = coverage.covers(original, released, ["zip", "job", "edu"], {"edu": edu})
    assert cov.by_column == {"zip": 1, "job": 1, "edu": 0}
    assert list(cov.rows) == [1]
    wrong = released.assign(edu=["High School", "*"])
    assert coverage.covers(original, wrong, ["edu"], {"edu": edu}).violations == 1


# ---------------------------------------------------------------------------------------- LP-exact EMDs


def emd_lp(q: NDArray[np.float64], p: NDArray[np.float64], ground: NDArray[np.float64]) -> float:
    m = len(q)
    rows = [np.kron(np.eye(m)[i], np.ones(m)) for i in range(m)] + [
        np.kron(np.ones(m), np.eye(m)[j]) for j in range(m)
    ]
    res = linprog(ground.ravel(), A_eq=np.array(rows), b_eq=np.r_[q, p], bounds=(0, None))
    return float(res.fun)


def tree_ground(frame: pd.DataFrame) -> NDArray[np.float64]:
    mat = frame.to_numpy()
    top = mat.shape[1] - 1
    m = len(mat)
    return np.array(
        [
            [
                0.0 if i == j else min(h for h in range(1, top + 1) if mat[i, h] == mat[j, h]) / top
                for j in range(m)
            ]
            for i in range(m)
        ]
    )


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=12), st.lists(st.integers(0, 9), min_size=1, max_size=30)
)
def test_distances_equal_linear_programme(cls: list[int], rest: list[int]) -> None:
    q = np.bincount(cls, minlength=10) / len(cls)
    p = np.bincount(cls + rest, minlength=10) / (len(cls) + len(rest))
    idx = np.arange(10)
    assert distances.distance(q, p, "equal") == pytest.approx(
        emd_lp(q, p, (idx[:, None] != idx).astype(float)), abs=1e-7
    )
    ordered = np.abs(idx[:, None] - idx) / 9
    assert distances.distance(q, p, "ordered") == pytest.approx(emd_lp(q, p, ordered), abs=1e-7)
    tree = tree_ground(DISEASES)
    assert distances.distance(q, p, "hierarchical", DISEASES) == pytest.approx(emd_lp(q, p, tree), abs=1e-7)


def test_hierarchical_paper_table() -> None:
    """ICDE 2007 Table 3's diseases: the class {gastric ulcer, gastritis, stomach cancer} moves 4/9 of
    the mass across the root (distance 1)."""
    diseases = ["gastric ulcer", "gastritis", "stomach cancer", "gastritis", "flu", "bronchitis"]
    diseases += ["bronchitis", "pneumonia", "stomach cancer"]
    t = pd.DataFrame({"g": [0, 0, 0, 1, 1, 1, 2, 2, 2], "disease": diseases})
    res = pm.check(t, ["g"], "disease", hierarchy=DISEASES)
    assert res.distance == "hierarchical" and res.class_t is not None
    assert res.class_t * 27 == pytest.approx([12, 8, 8])


# -------------------------------------------------------------------- vectorised checks vs per-class oracle

tables = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n),
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)


def build(data: tuple[list[int], list[str], list[int], list[bool]]) -> pd.DataFrame:
    a, b, s, sup = data
    df = pd.DataFrame({"a": [str(x) for x in a], "b": b, "s": s})
    df.loc[np.array(sup) & (np.arange(len(a)) % 3 == 0), ["a", "b"]] = "*"
    return df


def oracle_classes(df: pd.DataFrame) -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for a, b, s in df.itertuples(index=False):
        if not (a == "*" and b == "*"):
            out.setdefault((a, b), []).append(s)
    return out


@settings(max_examples=80, deadline=None)
@given(tables, st.integers(1, 4), st.floats(0.5, 6))
def test_checks_match_per_class_oracle(
    data: tuple[list[int], list[str], list[int], list[bool]],
    l: int,  # noqa: E741
    c: float,
) -> None:
    df = build(data)
    classes = oracle_classes(df)
    res = pm.check(df, ["a", "b"], "s", distance="equal", recursive_l=l)
    assert res.classes.n_suppressed == int(((df["a"] == "*") & (df["b"] == "*")).sum())
    if not classes:
        assert res.k == 0 and res.l is None
        return
    p = np.bincount(df["s"], minlength=5) / len(df)
    ks, ls, hs, cs, ts, rl = [], [], [], [], [], []
    for values in classes.values():
        counts = sorted(Counter(values).values(), reverse=True)
        q = np.bincount(values, minlength=5) / len(values)
        ks.append(len(values))
        ls.append(len(counts))
        hs.append(-sum(x / len(values) * math.log(x / len(values)) for x in counts))
        tail = sum(counts[l - 1 :])
        cs.append(math.inf if tail == 0 else next(cc for cc in range(1, 10**6) if counts[0] < cc * tail))
        ts.append(0.5 * float(np.abs(q - p).sum()))
        rl.append(
            max([ll for ll in range(1, len(counts) + 1) if counts[0] < c * sum(counts[ll - 1 :])], default=0)
        )
    assert res.k == min(ks) and res.l == min(ls)
    assert res.l_entropy == pytest.approx(math.exp(min(hs)))
    assert res.recursive_c == max(cs)
    assert res.t == pytest.approx(max(ts))
    assert pm.recursive_l(df, ["a", "b"], "s", c) == min(rl)
    for kind in ("ordered", "kl"):
        got = pm.check(df, ["a", "b"], "s", distance=kind).class_t
        assert got is not None
        order = [tuple(df.loc[res.classes.first[i], ["a", "b"]]) for i in range(res.classes.n_classes)]
        for i, key in enumerate(order):
            q = np.bincount(classes[key], minlength=5) / len(classes[key])
            mask = p > 0
            want = distances.distance(q[mask], p[mask], kind)
            assert got[i] == pytest.approx(want, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(tables)
def test_nt_closeness_with_whole_table_is_t_closeness(
    data: tuple[list[int], list[str], list[int], list[bool]],
) -> None:
    df = build(data)
    if not oracle_classes(df):
        return
    # brute force: regions keep a, b, both or neither; "neither" is the whole table, suppressed rows too
    kept = df[~((df["a"] == "*") & (df["b"] == "*"))]
    p_all = np.bincount(df["s"], minlength=5) / len(df)
    for n in sorted({min(2, len(df)), min(5, len(df)), len(df)}):
        worst = 0.0
        for (a, b), part in kept.groupby(["a", "b"]):
            q = np.bincount(part["s"], minlength=5) / len(part)
            options = [distances.distance(q, p_all, "equal")]
            for region in (part, kept[kept["a"] == a], kept[kept["b"] == b]):
                if len(region) >= n:
                    options.append(
                        distances.distance(q, np.bincount(region["s"], minlength=5) / len(region), "equal")
                    )
            worst = max(worst, min(options))
        assert closeness.nt_closeness(df, ["a", "b"], "s", n, distance="equal") == pytest.approx(worst)
    for kind in ("equal", "ordered"):
        t = closeness.t_closeness(df, ["a", "b"], "s", distance=kind)
        assert closeness.nt_closeness(df, ["a", "b"], "s", len(df), distance=kind) == pytest.approx(t)
        assert closeness.nt_closeness(df, ["a", "b"], "s", 1, distance=kind) == 0.0
        values = [
            closeness.nt_closeness(df, ["a", "b"], "s", n, distance=kind) for n in range(1, len(df) + 1)
        ]
        assert all(x <= y + 1e-12 for x, y in itertools.pairwise(values))  # larger n, fewer supersets


def test_nt_closeness_parent_region() -> None:
    # Two regions a=0 and a=1, each holding two classes; the region's distribution is closer than the table's.
    df = pd.DataFrame(
        {
            "a": [0] * 8 + [1] * 8,
            "b": [0, 0, 0, 0, 1, 1, 1, 1] * 2,
            "s": ["x", "x", "x", "y", "x", "x", "y", "y", "y", "y", "y", "x", "y", "y", "y", "y"],
        }
    )
    t = closeness.t_closeness(df, ["a", "b"], "s")
    nt = closeness.nt_closeness(df, ["a", "b"], "s", 8)
    # class (0,0): 3/4 x; region a=0: 5/8 x → distance 1/8; region b=0 (a=0,1): 4/8 x → 1/4; table 6/16
    assert nt == pytest.approx(1 / 8)
    assert t == pytest.approx(3 / 8)
    assert closeness.is_nt_close(df, ["a", "b"], "s", 8, 0.125) and not closeness.is_nt_close(
        df, ["a", "b"], "s", 9, 0.125
    )
    assert closeness.nt_closeness(df, ["a", "b"], "s", 8, regions="chain") == pytest.approx(1 / 8)


# ----------------------------------------------------------------------------------------- pycanon agrees


def pycanon_agrees(df: pd.DataFrame, qi: list[str], sensitive: str) -> None:
    import pycanon.anonymity as anonymity  # installed by make, without its pins (see Makefile)

    res = pm.check(df, qi, sensitive)
    assert res.k == anonymity.k_anonymity(df, qi)
    assert res.l == anonymity.l_diversity(df, qi, [sensitive])
    assert res.l_entropy is not None
    assert anonymity.entropy_l_diversity(df, qi, [sensitive]) == int(res.l_entropy + 1e-9)  # pycanon floors
    assert res.t == pytest.approx(anonymity.t_closeness(df, qi, [sensitive]), abs=1e-12)


def test_pycanon_agrees_on_coarsened_adult() -> None:
    df = pd.read_csv(ADULT, sep=";")
    coarse = df.assign(age=(df["age"] // 20 * 20).astype(str), education=df["education"].str[:2])
    pycanon_agrees(coarse, ["age", "sex", "race"], "salary-class")  # equal distance (categories)
    pycanon_agrees(coarse, ["education", "sex", "race"], "occupation")
    pycanon_agrees(df, ["sex", "race", "marital-status"], "age")  # ordered distance (numbers)


@pytest.mark.slow
def test_pycanon_agrees_on_raw_adult() -> None:
    df = pd.read_csv(ADULT, sep=";")
    import pycanon.anonymity as anonymity  # installed by make, without its pins (see Makefile)

    res = pm.check(df, ADULT_QI, "salary-class")
    assert res.k == anonymity.k_anonymity(df, ADULT_QI) == 1
    assert res.l == anonymity.l_diversity(df, ADULT_QI, ["salary-class"]) == 1
    assert res.t == pytest.approx(anonymity.t_closeness(df, ADULT_QI, ["salary-class"]), abs=1e-12)
    assert res.classes.n_classes == 18109


# ------------------------------------------------------------------------------------------------- errors


def test_suppressed_records_are_no_class() -> None:
    df = pd.DataFrame(
        {"a": ["1", "1", "*", "*", "2", "2"], "b": ["x", "x", "*", "*", "y", "y"], "s": [1, 2, 1, 1, 1, 2]}
    )
    res = pm.check(df, ["a", "b"], "s", distance="equal")
    d = res.to_dict()
    assert d["classes"] == 2 and d["suppressed"] == 2 and d["achieved"]["k"] == 2 and d["achieved"]["l"] == 2
    assert res.t == pytest.approx(0.5 * (abs(0.5 - 4 / 6) + abs(0.5 - 2 / 6)))  # P includes suppressed rows


def test_errors_say_what_to_fix() -> None:
    df = salaries()
    with pytest.raises(UnknownColumn, match="did you mean 'salary'"):
        pm.check(df, ["g"], "salery")
    with pytest.raises(UnknownColumn):
        pm.k_anonymity(df, ["nope"])
    with pytest.raises(InvalidParameter, match="empty"):
        pm.k_anonymity(df.iloc[:0], ["g"])
    with pytest.raises(InvalidParameter, match="l must be"):
        pm.recursive_c(df, ["g"], "salary", 0)
    with pytest.raises(InvalidParameter, match="t must be between 0 and 1"):
        closeness.is_nt_close(df, ["g"], "salary", 3, 1.5)
    with pytest.raises(InvalidParameter, match="n = 10 is larger"):
        closeness.nt_closeness(df, ["g"], "salary", 10)
    with pytest.raises(InvalidParameter, match="not numeric"):
        closeness.t_closeness(df.assign(salary=df["salary"].astype(str)), ["g"], "salary", distance="ordered")
    with pytest.raises(InvalidParameter, match="missing from its hierarchy"):
        closeness.t_closeness(
            pd.DataFrame({"g": [0], "d": ["secret disease"]}), ["g"], "d", hierarchy=DISEASES
        )
    with pytest.raises(InvalidParameter, match="as a list"):
        pm.k_anonymity(df, "g")
    with pytest.raises(InvalidParameter, match="both sensitive and a quasi-identifier"):
        pm.check(df, ["g", "salary"], "salary")
    with pytest.raises(InvalidParameter) as err:
        closeness.t_closeness(
            pd.DataFrame({"g": [0], "d": ["secret disease"]}), ["g"], "d", hierarchy=DISEASES
        )
    assert "secret" not in str(err.value)  # never echoes private values
