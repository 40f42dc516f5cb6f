"""SafePub's calibrated scores (privdb.publish.expected) and the data-independent form (a user-fixed node)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

from conftest import seeded
from privdb.anonymize import FlatHierarchy, TaxonomyHierarchy
from privdb.anonymize.lattice import Lattice
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.publish import parameters, safepub
from privdb.publish.charge import OWNER_ACCOUNT
from privdb.publish.expected import calibrated_score, q_table
from privdb.publish.scores import class_target

PATIENTS = Path(__file__).resolve().parents[1] / "data" / "examples" / "patients.csv"
HIER = {
    "a": TaxonomyHierarchy("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]),
    "b": TaxonomyHierarchy("b", [["x", "*"], ["y", "*"], ["z", "*"]]),
}


def test_q_table_is_the_binomial_tail_and_its_factors_are_maxima() -> None:
    t = q_table(5, 0.6)
    s = np.arange(len(t.q))
    assert np.allclose(t.q, binom.sf(4, s, 0.6), atol=1e-12)
    assert t.at(np.array([len(t.q), 10**6]))[0] == 1.0  # past the table a class is always kept
    step = np.diff(np.append(t.q, 1.0))
    assert t.jump == pytest.approx((s * step).max())
    assert t.lift == pytest.approx((np.append(t.q[1:], 1.0) + s * step).max())
    assert 1.0 < t.jump < 5 / 0.6  # sharper than ARX's divisor t − 1 = ⌈k/β⌉ − 1 = 8


@pytest.mark.parametrize("metric", ["loss", "precision", "classification"])
@pytest.mark.parametrize(("k", "beta"), [(2, 0.5), (3, 0.4), (5, 0.8)])
def test_calibrated_scores_move_by_at_most_one_between_neighbours(metric: str, k: int, beta: float) -> None:
    """The exponential mechanism's Δ = 1 for the calibrated scores: random tables, a random added record,
    every node. The bound is not slack by more than a factor 4 (a wrong divisor would show)."""
    table = q_table(k, beta)
    gen = np.random.default_rng(5)
    largest = 0.0
    for _ in range(80):
        n = int(gen.integers(0, 40))
        df = pd.DataFrame({"a": gen.choice(["1", "2", "3", "4"], n), "b": gen.choice(["x", "y", "z"], n),
                           "y": gen.choice(["p", "q"], n)})  # fmt: skip
        extra = pd.DataFrame({"a": [gen.choice(["1", "2", "3", "4"])], "b": [gen.choice(["x", "y", "z"])],
                              "y": [gen.choice(["p", "q"])]})  # fmt: skip
        bigger = pd.concat([df, extra], ignore_index=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            small, large = Lattice(df, ["a", "b"], HIER, 2), Lattice(bigger, ["a", "b"], HIER, 2)
        ts = class_target(small, "y", df["y"].tolist()) if metric == "classification" else None
        tl = class_target(large, "y", bigger["y"].tolist()) if metric == "classification" else None
        for node in [(i, j) for i in range(3) for j in range(2)]:
            gap = abs(
                calibrated_score(metric, large, node, table, tl)
                - calibrated_score(metric, small, node, table, ts)
            )
            assert gap <= 1 + 1e-12, (metric, node, gap)
            largest = max(largest, gap)
    assert largest > 0.25, largest


def test_calibrated_search_prefers_the_node_that_keeps_records() -> None:
    """Known answer: 400 records, 4 values of a in 2 pairs. At level 0 each value has 100 records, at
    level 1 each pair 200; with k = 59, β = 0.59 a class of 100 is kept about half the time, one of 200
    almost surely; * costs more than the pair labels. Calibrated loss ranks
    level 1 first, as the expected release says."""
    df = pd.DataFrame({"a": ["1", "2", "3", "4"] * 100, "b": ["x"] * 400})
    p = parameters(0.9, 1e-5)
    with np.errstate(divide="ignore", invalid="ignore"):
        lat = Lattice(df, ["a", "b"], HIER, p.k)
    t = q_table(p.k, p.beta)
    scores = {lv: calibrated_score("loss", lat, (lv, 0), t) for lv in range(3)}
    assert scores[1] > scores[0] and scores[1] > scores[2]


def test_fixed_node_is_released_as_given_with_all_of_epsilon() -> None:
    df = pd.DataFrame({"a": ["1", "2", "3", "4"] * 100, "b": ["x", "y"] * 200})
    out = safepub(df, ["a", "b"], HIER, epsilon=1.0, delta=1e-5, node=(1, 0), rng=seeded(3))
    assert out.node == {"a": 1, "b": 0}
    assert out.pivots == [] and out.epsilon_search == 0.0 and out.steps == 0
    # the data-independent (ε, δ) → (β, k): all of ε to sampling, ARX's/the paper's table: (1, 1e-5) → k 62
    assert out.params.k == 62 and out.params.epsilon_anon == 1.0
    assert out.params.beta == pytest.approx(1 - math.exp(-1.0))
    assert set(out.table["a"]) <= {"1-2", "3-4"} and set(out.table["b"]) <= {"x", "y"}
    assert len(out.table) == int(out.kept.sum()) > 0


@pytest.mark.parametrize(
    ("node", "extra"),
    [((1,), {}), ((3, 0), {}), ((1, -1), {}), ((1, 0), {"metric": "classification", "target": "y"}),
     ((1, 0), {"steps": 3})],
)  # fmt: skip
def test_bad_fixed_node_is_refused(node: tuple[int, ...], extra: dict[str, object]) -> None:
    df = pd.DataFrame({"a": ["1"], "b": ["x"], "y": ["p"]})
    with pytest.raises(InvalidParameter):
        safepub(df, ["a", "b"], HIER, epsilon=1.0, delta=1e-5, node=node, **extra)  # type: ignore[arg-type]


def test_cli_fixed_node_and_its_refusals_spend_as_they_should(tmp_path: Path) -> None:
    hier = tmp_path / "h"
    hier.mkdir()
    (hier / "job.csv").write_text(
        "engineer;professional;*\nlawyer;professional;*\nwriter;artist;*\ndancer;artist;*\n"
    )
    (hier / "sex.csv").write_text("male;*\nfemale;*\n")
    db = tmp_path / "db"
    with Database(db) as d:
        d.grant("alice", epsilon=1.0)
    base = [str(PATIENTS), "--qi", "job,sex", "--epsilon", "1", "--delta", "1e-5", "--hierarchies", str(hier),
            "--db", str(db), "-o", str(tmp_path / "o.csv")]  # fmt: skip
    for bad in (["--node", "1,x"], ["--node", "1"], ["--node", "1,5"], ["--node", "1,0", "--steps", "2"]):
        result = CliRunner().invoke(app, ["publish", "safepub", *base, *bad])
        assert result.exit_code != 0 and "--node" in result.output and "Traceback" not in result.output
    with Database(db) as d:
        assert float(d.ledger.budget(OWNER_ACCOUNT, d.name).epsilon_spent) == 0.0
    result = CliRunner().invoke(app, ["publish", "safepub", *base, "--node", "1,1"])
    assert result.exit_code == 0, result.output
    assert "'job': 1" in result.output and "'sex': 1" in result.output


def test_flat_fixed_node_keeps_the_whole_class_or_nothing() -> None:
    df = pd.DataFrame({"x": ["a"] * 300})
    out = safepub(df, ["x"], {"x": FlatHierarchy("x", ["a", "b"])}, epsilon=1.0, delta=1e-5, node=(0,),
                  rng=seeded(1))  # fmt: skip
    assert len(out.table) == int(out.sampled.sum())  # 300 records: ~190 sampled ≥ k = 62, all released
