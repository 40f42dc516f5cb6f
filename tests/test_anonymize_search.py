"""Heuristic full-domain search (Lightning bottom-up and top-down, genetic) and attribute weights:
optimality where the lattice can be searched exhaustively, a valid release under any budget, the automatic
switch above the lattice's limit, and weights that move the chosen node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdb.anonymize import Search, anonymize
from privdb.anonymize.lattice import MAX_NODES
from privdb.errors import InvalidParameter, UnknownColumn

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]


def small_table(seed: int, n: int = 150) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "zip": rng.choice(["3270", "3271", "3280", "3400", "3410"], n),
            "sex": rng.choice(["F", "M"], n),
            "score": rng.integers(0, 1000, n),
        }
    )


def wide_table(n: int = 300, d: int = 9) -> pd.DataFrame:
    """Numbers in d columns: automatic interval hierarchies make a lattice far above MAX_NODES."""
    rng = np.random.default_rng(7)
    return pd.DataFrame({f"c{j}": rng.integers(0, 1000, n) for j in range(d)})


def k_holds(res: object, k: int) -> bool:
    table = res.table  # type: ignore[attr-defined]
    kept = table.loc[~res.suppressed, list(res.qi)]  # type: ignore[attr-defined]
    return bool(kept.empty or kept.astype(str).groupby(list(res.qi), sort=False).size().min() >= k)  # type: ignore[attr-defined]


@pytest.mark.parametrize("method", ["lightning", "lightning-top-down"])
@pytest.mark.parametrize(("seed", "k", "limit"), [(2, 2, 0.0), (3, 3, 0.05), (5, 5, 0.1), (8, 8, 0.02)])
def test_lightning_finds_the_optimum_when_it_finishes(seed: int, k: int, limit: float, method: str) -> None:
    df = small_table(seed)
    qi = ["age", "zip", "sex", "score"]
    optimal = anonymize(df, qi, k=k, algorithm="lattice", suppression_limit=limit, search="optimal")
    light = anonymize(
        df, qi, k=k, algorithm="lattice", suppression_limit=limit, search=Search(method, time_limit=120)
    )
    assert light.params["complete"] is True  # the queue emptied: the result is the optimum
    assert light.ncp == pytest.approx(optimal.ncp, abs=1e-12)
    assert light.n_suppressed <= limit * len(df)


def test_genetic_is_reproducible_valid_and_never_below_the_optimum() -> None:
    df = small_table(11)
    qi = ["age", "zip", "sex", "score"]
    optimal = anonymize(df, qi, k=4, algorithm="lattice")
    runs = [
        anonymize(df, qi, k=4, algorithm="lattice", search=Search("genetic", time_limit=120, seed=s))
        for s in (1, 1, 2)
    ]
    assert runs[0].node == runs[1].node and runs[0].ncp == runs[1].ncp
    for r in runs:
        assert r.ncp >= optimal.ncp - 1e-12 and k_holds(r, 4)
        assert r.ncp <= optimal.ncp + 0.05  # within 5 points of the optimum on this small lattice


def test_adult_lightning_matches_the_optimal_node_given_time() -> None:
    df = pd.read_csv(ADULT / "adult.csv", sep=";")
    kw = {"k": 10, "algorithm": "lattice", "hierarchies": str(ADULT / "hierarchies"), "fix_labels": True}
    optimal = anonymize(df, QI, **kw)  # type: ignore[arg-type]
    light = anonymize(df, QI, search=Search("lightning", time_limit=300), **kw)  # type: ignore[arg-type]
    assert light.node == optimal.node and light.ncp == pytest.approx(0.33154, abs=1e-5)
    assert light.params["complete"] is True


@pytest.mark.parametrize("method", ["lightning", "lightning-top-down", "genetic"])
@pytest.mark.parametrize("budget", [{"time_limit": 1e-9}, {"max_evaluations": 1}])
def test_a_tiny_budget_still_returns_a_valid_release(method: str, budget: dict[str, float]) -> None:
    df = small_table(4)
    qi = ["age", "zip", "sex", "score"]
    res = anonymize(df, qi, k=6, algorithm="lattice", search=Search(method, **budget))  # type: ignore[arg-type]
    assert k_holds(res, 6) and res.n_suppressed <= 0.05 * len(df)
    assert res.params["search"] == method


def test_above_the_limit_auto_switches_to_lightning_and_optimal_refuses() -> None:
    df = wide_table()
    qi = list(df.columns)
    res = anonymize(df, qi, k=5, algorithm="lattice", search=Search("auto", time_limit=2))
    assert res.params["search"] == "lightning" and res.params["nodes"] > MAX_NODES
    assert "using Lightning" in res.params["note"]
    assert k_holds(res, 5) and res.n_suppressed <= 0.05 * len(df)
    with pytest.raises(InvalidParameter, match="search='lightning'"):
        anonymize(df, qi, k=5, algorithm="lattice", search="optimal")


def test_weights_move_the_chosen_node() -> None:
    """Generalising x or y costs the same (each flat, classes of 2 either way): the weights decide."""
    df = pd.DataFrame({"x": ["1", "1", "2", "2"] * 3, "y": ["a", "b", "a", "b"] * 3})
    df["x"] = df["x"] + pd.Series(np.repeat(["p", "q", "r"], 4))
    heavy_x = anonymize(df, ["x", "y"], k=2, algorithm="lattice", suppression_limit=0, weights={"x": 2})
    heavy_y = anonymize(df, ["x", "y"], k=2, algorithm="lattice", suppression_limit=0, weights={"y": 2})
    assert heavy_x.node == {"x": 0, "y": 1}
    assert heavy_y.node == {"x": 1, "y": 0}
    assert heavy_x.params["weighted_loss"] == pytest.approx(1 / 3)  # (2·0 + 1·1) / 3
    assert heavy_y.params["weighted_loss"] == pytest.approx(1 / 3)
    assert heavy_x.ncp == pytest.approx(0.5)  # the published loss is unweighted


def test_bad_weights_and_search_options_are_named() -> None:
    df = small_table(1)
    qi = ["age", "zip"]
    with pytest.raises(InvalidParameter, match="weight of 'age'"):
        anonymize(df, qi, k=3, algorithm="lattice", weights={"age": -1})
    with pytest.raises(UnknownColumn, match="'nope'"):
        anonymize(df, qi, k=3, algorithm="lattice", weights={"nope": 1})
    with pytest.raises(InvalidParameter, match="every weight is 0"):
        anonymize(df, qi, k=3, algorithm="lattice", weights={"age": 0, "zip": 0})
    with pytest.raises(InvalidParameter, match="metric='loss'"):
        anonymize(df, qi, k=3, algorithm="lattice", metric="aecs", weights={"age": 2})
    with pytest.raises(InvalidParameter, match="algorithm='lattice'"):
        anonymize(df, qi, k=3, search="lightning")
    with pytest.raises(InvalidParameter, match="unknown search"):
        anonymize(df, qi, k=3, algorithm="lattice", search="fast")
    with pytest.raises(InvalidParameter, match="time_limit"):
        anonymize(df, qi, k=3, algorithm="lattice", search=Search("lightning", time_limit=0))
