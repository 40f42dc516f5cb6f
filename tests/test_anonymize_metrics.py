"""ARX's metrics in the lattice (issue 41, ``lattice_metrics``) on tables small enough to count by hand, and
Grassberger's estimator for entropy l-diversity (ARX's ``EntropyLDiversity`` with ``GRASSBERGER``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdb.anonymize import anonymize
from privdb.anonymize.hierarchy import TaxonomyHierarchy
from privdb.anonymize.lattice import Lattice
from privdb.anonymize.lattice_metrics import aggregate, factors, suppression_terms
from privdb.anonymize.sensitive_condition import SensitiveCondition, _grassberger, grassberger_diverse
from privdb.errors import InvalidParameter


def _table() -> tuple[pd.DataFrame, dict[str, TaxonomyHierarchy]]:
    df = pd.DataFrame({"a": list("xxyz"), "b": list("pqpq")})
    hier = {
        "a": TaxonomyHierarchy("a", [["x", "*"], ["y", "*"], ["z", "*"]]),
        "b": TaxonomyHierarchy("b", [["p", "*"], ["q", "*"]]),
    }
    return df, hier


def test_the_columns_aggregate_as_arx_says() -> None:
    cols = np.array([0.5, 0.0])
    assert aggregate(cols, "loss") == pytest.approx(0.25)
    assert aggregate(cols, "geometric-loss") == pytest.approx(np.sqrt(1.5) - 1)
    assert aggregate(cols, "entropy") == pytest.approx(0.5)
    assert factors(0.5) == (1.0, 1.0) and factors(0.1) == (1.0, pytest.approx(0.2))
    assert factors(0.75) == (pytest.approx(0.5), 1.0)


def test_each_metric_at_a_node_counted_by_hand() -> None:
    df, hier = _table()
    # node (0, 1): a raw, b '*'; classes {x, x}, {y}, {z}: with k = 2 the two singletons are suppressed
    values = {}
    for metric in ("loss", "geometric-loss", "entropy", "monotonic-entropy", "dm-star", "discernibility"):
        lat = Lattice(df, ["a", "b"], hier, 2, metric=metric, suppression_limit=0.5)
        values[metric] = lat.evaluate([0, 1])[0].value
    # loss: a: 2 suppressed cells of 4 cost 1 → 0.5; b: every cell 1 → 1
    assert values["loss"] == pytest.approx(0.75)
    assert values["geometric-loss"] == pytest.approx(np.sqrt(1.5 * 2.0) - 1)
    # entropy: b generalised: 4 records, each log2(4/2) = 1; a raw: 0; suppressed (S = 2): a's values y, z
    # → −2·(1/2·log2(1/2))·… = 2, b's values both '*' → 0
    assert values["monotonic-entropy"] == pytest.approx(4.0)
    assert values["entropy"] == pytest.approx(6.0)
    assert values["dm-star"] == 4 + 1 + 1 and values["discernibility"] == 4 + 2 * 4


def test_precision_and_height_as_arx_defines_them() -> None:
    """ARX's precision: a kept cell h/H, a suppressed one 1, columns averaged; height: Σ levels."""
    df, hier = _table()
    # node (0, 1), k = 2: y and z suppressed; a: 2 kept cells at 0/1, 2 suppressed → 0.5; b: all 1 → 1
    prec = Lattice(df, ["a", "b"], hier, 2, metric="precision", suppression_limit=0.5)
    assert prec.evaluate([0, 1])[0].value == pytest.approx(0.75)
    height = Lattice(df, ["a", "b"], hier, 2, metric="height", suppression_limit=0.5)
    assert height.evaluate([0, 1])[0].value == pytest.approx(1.0)
    assert height.evaluate([1, 1])[0].value == pytest.approx(2.0)
    with pytest.raises(InvalidParameter, match="no gs factor"):
        Lattice(df, ["a", "b"], hier, 2, metric="precision", gs_factor=0.3)


def test_the_gs_factor_weighs_suppression() -> None:
    df, hier = _table()
    lat = Lattice(df, ["a", "b"], hier, 2, metric="loss", suppression_limit=0.5, gs_factor=0.25)
    # g = 1, s = 0.5: a's two suppressed raw cells cost 0 + 0.5·(1 − 0) each → 1/4; b 1
    assert lat.evaluate([0, 1])[0].value == pytest.approx((0.25 + 1.0) / 2)
    with pytest.raises(InvalidParameter, match="gs_factor"):
        Lattice(df, ["a", "b"], hier, 2, gs_factor=1.5)
    with pytest.raises(InvalidParameter, match="gs_factor"):
        anonymize(df, ["a", "b"], k=2, gs_factor=0.2)  # Mondrian has no such metric


def test_grassberger_matches_arx_table_and_check() -> None:
    g = _grassberger(102)
    assert g[1] == pytest.approx(-1.2703628454614782, abs=1e-15)
    assert g[2] == g[3] == pytest.approx(0.7296371545385218, abs=1e-15)
    assert g[100] == pytest.approx(4.605186851488337, abs=1e-12)
    assert g[102] == pytest.approx(np.log(102) + (1 / 51**2) * (1 / 24 - (1 / 51**2) * (7 / 960)), abs=1e-9)
    # a class of two values, 5 and 5: Σ f·G(f) = 10·G(5) = 10·G(4); N·(G(N) − ln l) = 10·(G(10) − ln 2)
    hist = np.array([[5, 5], [9, 1]])
    expected = [10 * g[4] <= 10 * (g[10] - np.log(2)), 9 * g[9] + g[1] <= 10 * (g[10] - np.log(2))]
    assert list(grassberger_diverse(hist, 2.0)) == expected == [True, False]


def test_ordered_distance_of_text_follows_the_sorted_values() -> None:
    """``t_distance="ordered"`` on a category (ARX's ``OrderedDistanceTCloseness`` of a string attribute):
    the values in sorted order, b between a and c; a class of a's is 1 step from P = (⅓, ⅓, ⅓) at a and 1/3
    more at b: (2/3 + 1/3)/2 = 0.5; the equal distance says 2/3."""
    col = pd.Series(list("cab"), name="s")
    ordered = SensitiveCondition.build(col, t=0.5, t_distance="ordered")
    equal = SensitiveCondition.build(col, t=0.5)
    hist = np.array([[3, 0, 0]])
    assert ordered.emd(hist)[0] == pytest.approx(0.5) and equal.emd(hist)[0] == pytest.approx(2 / 3)
    with pytest.raises(InvalidParameter, match="t_hierarchy"):
        SensitiveCondition.build(col, t=0.5, t_distance="hierarchical")
    with pytest.raises(InvalidParameter, match="numbers read as text"):  # '10' would sort before '9'
        SensitiveCondition.build(pd.Series(["10", "9", "9"], name="s"), t=0.5, t_distance="ordered")
    with pytest.raises(InvalidParameter, match="unknown t-closeness distance"):
        SensitiveCondition.build(col, t=0.5, t_distance="manhattan")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 400), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_suppressed_entropy_from_the_totals_has_the_same_bits(n: int, share: float, seed: int) -> None:
    """The entropy metric's suppressed counts taken as each group's records less the kept tuples' (where
    most tuples are suppressed) give the bits of counting the suppressed tuples themselves."""
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, k, n) for k in (1, 3, 40)]
    weight = rng.integers(1, 10_000, n)
    supp = rng.random(n) < share
    totals = [np.bincount(c, weights=weight).astype(np.float64) for c in codes]
    costs = [np.zeros(n)] * 3
    direct = suppression_terms("entropy", codes, costs, weight, supp, 1.0, 0.7)
    assert (
        suppression_terms("entropy", codes, costs, weight, supp, 1.0, 0.7, totals).tolist() == direct.tolist()
    )
    if supp.any():
        c = np.bincount(codes[2][supp], weights=weight[supp])
        c = c[c > 0]
        assert direct[2] == pytest.approx(-0.7 * float((c * np.log2(c / c.sum())).sum()), rel=1e-12, abs=1e-9)
