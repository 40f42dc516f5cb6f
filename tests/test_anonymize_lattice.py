"""Full-domain lattice search: k with suppression on Adult, ARX's NCP, optimality against brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdb.anonymize import Hierarchy, anonymize, load_hierarchies
from privdb.anonymize.resolve import resolve
from privdb.errors import InvalidParameter

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(ADULT / "adult.csv", sep=";")


@pytest.mark.parametrize("k", [2, 10, 100])
def test_adult_k_with_suppression(adult: pd.DataFrame, k: int) -> None:
    res = anonymize(
        adult, QI, k=k, algorithm="lattice", hierarchies=str(ADULT / "hierarchies"), fix_labels=True
    )
    assert res.n_suppressed <= 0.05 * len(adult)
    kept = res.table.loc[~res.suppressed, QI]
    assert kept.groupby(QI, sort=False).size().min() >= k
    assert (res.table.loc[res.suppressed, QI] == "*").all().all()
    assert res.node is not None and set(res.node) == set(QI)
    if res.n_suppressed:
        assert res.suppression_reason is not None and "smaller than k" in res.suppression_reason
    if k == 10:
        assert res.ncp <= 0.344  # ARX 3.9.2 (Flash), same hierarchies and limit: 34.4 %
    hs = load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True)
    for c in QI:  # every cell is the node's generalisation of the original value
        expected = hs[c].generalize(adult[c], res.node[c])
        assert (expected[~res.suppressed] == res.table.loc[~res.suppressed, c].to_numpy()).all()


def brute_force(df: pd.DataFrame, qi: list[str], hs: dict[str, Hierarchy], k: int, limit: float) -> float:
    """ARX's loss of every lattice node, computed cell by cell; the minimum over anonymous nodes."""
    best = np.inf
    tables = {c: hs[c].table() for c in qi}
    for levels in itertools.product(*[range(hs[c].height + 1) for c in qi]):
        gen = pd.DataFrame({c: hs[c].generalize(df[c], lv) for c, lv in zip(qi, levels, strict=True)})
        size = gen.groupby(qi, sort=False)[qi[0]].transform("size").to_numpy()
        supp = size < k
        if supp.sum() > np.floor(limit * len(df) + 1e-9):
            continue
        cost = np.zeros(len(df))
        for c, lv in zip(qi, levels, strict=True):
            leaves = tables[c][f"level{lv}"].value_counts()
            cell = (gen[c].map(leaves).fillna(1).to_numpy() - 1) / (len(tables[c]) - 1)
            cost += np.where(supp, 1.0, cell if lv else 0.0)
        best = min(best, float(cost.mean() / len(qi)))
    return best


@pytest.mark.parametrize(("k", "limit"), [(2, 0.0), (3, 0.05), (5, 0.1), (8, 0.02)])
def test_optimal_against_brute_force(k: int, limit: float) -> None:
    rng = np.random.default_rng(k)
    n = 150
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "zip": rng.choice(["3270", "3271", "3280", "3400", "3410"], n),
            "sex": rng.choice(["F", "M"], n),
            "d": rng.normal(size=n),
        }
    )
    qi = ["age", "zip", "sex"]
    res = anonymize(df, qi, k=k, algorithm="lattice", suppression_limit=limit)
    hs = resolve(df, qi, None)
    assert res.ncp == pytest.approx(brute_force(df, qi, hs, k, limit), abs=1e-12)
    assert res.n_suppressed <= limit * n


def test_l_diversity_in_the_lattice(adult: pd.DataFrame) -> None:
    qi = ["age", "education", "sex"]
    res = anonymize(
        adult,
        qi,
        k=5,
        l=2,
        sensitive="salary-class",
        algorithm="lattice",
        hierarchies=str(ADULT / "hierarchies"),
        fix_labels=True,
    )
    kept = res.table.loc[~res.suppressed]
    assert kept.groupby(qi)["salary-class"].nunique().min() >= 2
    assert kept.groupby(qi).size().min() >= 5
    assert res.n_suppressed <= 0.05 * len(adult)


def test_lattice_bad_input(adult: pd.DataFrame) -> None:
    with pytest.raises(InvalidParameter, match="unknown metric"):
        anonymize(adult, ["age"], k=2, algorithm="lattice", metric="beauty")
    with pytest.raises(InvalidParameter, match="suppression_limit"):
        anonymize(adult, ["age"], k=2, algorithm="lattice", suppression_limit=2.0)
    with pytest.raises(InvalidParameter, match="unknown algorithm"):
        anonymize(adult, ["age"], k=2, algorithm="greedy")


@pytest.mark.parametrize("missing", [None, np.nan])
def test_a_missing_quasi_identifier_value_is_refused_not_published_as_another_value(missing: object) -> None:
    # 121 records: a missing 'job' and 40 each of nurse/pilot/clerk, so the optimal node keeps 'job' raw;
    # the lattice used to publish the missing value as the last distinct one ('clerk'): a made-up record
    job = [missing] + [v for _ in range(40) for v in ("nurse", "pilot", "clerk")]
    df = pd.DataFrame({"job": job, "age": [30 + i % 2 for i in range(len(job))]})
    for algorithm in ("lattice", "mondrian"):  # the same refusal as Mondrian's
        with pytest.raises(InvalidParameter, match="quasi-identifier 'job' has 1 missing value"):
            anonymize(df, ["job", "age"], k=2, algorithm=algorithm, hierarchy_fallback=True)
    filled = anonymize(df.fillna({"job": "unknown"}), ["job", "age"], k=1, algorithm="lattice")
    assert filled.table["job"].iloc[0] == "unknown"


def test_many_quasi_identifiers_do_not_wrap_the_class_keys() -> None:
    """Eleven QIs of 64 values: the mixed-radix key (64¹¹ = 2⁶⁶) wrapped in int64, so two distinct tuples
    whose first codes differ by 16 shared a class and a release with a unique record passed as 2-anonymous."""
    qi = [f"q{j}" for j in range(11)]
    rows = [["v00"] * 11] + [[f"v{r:02d}"] * 11 for r in range(1, 64) for _ in range(2)]
    rows.append(["v16"] + ["v00"] * 10)  # q0's code 16 = 2⁶⁴ / 64¹⁰ apart from the all-v00 record
    df = pd.DataFrame(rows, columns=qi)
    res = anonymize(df, qi, k=2, algorithm="lattice", suppression_limit=0.0)
    assert int(res.table.groupby(qi).size().min()) >= 2
    assert res.node["q0"] == 1


def test_combined_keys_are_distinct_exactly_when_tuples_are() -> None:
    """``combine_sized`` over columns whose product of sizes passes 2⁶⁴ (it wrapped before)."""
    from privdb.anonymize._classes import combine_sized

    rng = np.random.default_rng(5)
    sizes = [1 << 20] * 5  # 2¹⁰⁰ combinations
    codes = [rng.integers(0, 4, 4000) << 18 for _ in sizes]  # few values, far apart: wraps collide
    key, space = combine_sized(codes, sizes)
    tuples = pd.MultiIndex.from_arrays(codes)
    assert len(np.unique(key)) == tuples.nunique()
    assert pd.Series(key).groupby(pd.factorize(tuples)[0]).nunique().max() == 1
    assert key.min() >= 0 and key.max() < space
