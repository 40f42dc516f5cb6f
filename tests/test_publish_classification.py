"""SafePub's classification score (issue 17): its value by hand, its sensitivity bound on neighbouring tables
(hypothesis, every node, several thresholds; and a case that reaches it), the command on Adult with
salary-class as the target (never released), the JSON request, and bad input refused with nothing spent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import seeded
from privdb.anonymize import TaxonomyHierarchy, load_hierarchies
from privdb.anonymize.lattice import Lattice
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.publish import safepub
from privdb.publish.charge import OWNER_ACCOUNT
from privdb.publish.report import majority_accuracy, publication_report
from privdb.publish.scores import class_target, score
from test_publish_safepub import ADULT, ADULT_QI, PATIENTS, _hierarchies

runner = CliRunner()
HIER = {
    "a": TaxonomyHierarchy("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]),
    "b": TaxonomyHierarchy("b", [["x", "*"], ["y", "*"], ["z", "*"]]),
}
NODES = [(i, j) for i in range(3) for j in range(2)]


def _scores(
    df: pd.DataFrame, thresholds: tuple[int, ...] = (1, 2, 3, 5)
) -> dict[tuple[int, int, int], float]:
    """The classification score of every node at every threshold, keyed (t, *node)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty table: the lattice's loss bound is 0/0
        lat = Lattice(df, ["a", "b"], HIER, 2)
    target = class_target(lat, "y", df["y"].tolist())
    return {(t, *node): score("classification", lat, node, t, target) for t in thresholds for node in NODES}


def _score(df: pd.DataFrame, node: tuple[int, int], t: int) -> float:
    return _scores(df, (t,))[(t, *node)]


def test_the_score_by_hand() -> None:
    """Classes at node (1, 1): {1-2} has targets p, p, q (majority 2); {3-4} has r, None, None (2); with
    t = 3 both are kept: (2 + 2)/3. At t = 4 both are suppressed: 0. At node (0, 0) with t = 1 every
    distinct (a, b) is a class: a=1,x: p,p → 2; a=2,y: q → 1; a=3,z: r → 1; a=4,z: None, None → 2."""
    df = pd.DataFrame({"a": ["1", "1", "2", "3", "4", "4"], "b": ["x", "x", "y", "z", "z", "z"],
                       "y": ["p", "p", "q", "r", None, None]})  # fmt: skip
    assert _score(df, (1, 1), 3) == pytest.approx(4 / 3)
    assert _score(df, (1, 1), 4) == 0.0
    assert _score(df, (0, 0), 1) == pytest.approx(6.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lat = Lattice(df, ["a", "b"], HIER, 2)
    with pytest.raises(InvalidParameter, match="--target"):
        score("classification", lat, (1, 1), 3)


rows = st.lists(
    st.tuples(st.sampled_from("1234"), st.sampled_from("xyz"), st.sampled_from(["p", "q", "r", None])),
    min_size=0,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(table=rows, extra=rows.filter(bool).map(lambda r: r[0]))
def test_the_score_moves_by_at_most_one_between_neighbours(
    table: list[tuple[str, str, str | None]], extra: tuple[str, str, str | None]
) -> None:
    """Add/remove neighbours (the table with and without one more record): at every node and threshold the
    score, pre-divided by its sensitivity t, moves by at most 1 — the exponential mechanism's Δ."""
    small = _scores(pd.DataFrame(table, columns=["a", "b", "y"]))
    large = _scores(pd.DataFrame([*table, extra], columns=["a", "b", "y"]))
    for key, value in small.items():
        assert abs(large[key] - value) <= 1 + 1e-12, (key, large[key], value)


def test_the_bound_is_reached() -> None:
    """A class of t − 1 records with one target value, lifted to t by one more: the score moves by exactly
    t/t = 1 (so a smaller divisor would break the mechanism's Δ)."""
    small = pd.DataFrame({"a": ["1"] * 4, "b": ["x"] * 4, "y": ["p"] * 4})
    large = pd.DataFrame({"a": ["1"] * 5, "b": ["x"] * 5, "y": ["p"] * 5})
    assert _score(large, (0, 0), 5) - _score(small, (0, 0), 5) == pytest.approx(1.0)


def test_majority_accuracy_by_hand() -> None:
    released = pd.DataFrame({"a": ["1-2", "1-2", "1-2", "3-4"], "b": ["*"] * 4})
    out = majority_accuracy(released, pd.Series(["p", "p", "q", "q"]))
    assert out == {"released_records": 4, "majority_in_class": 0.75, "majority_overall": 0.5}
    assert majority_accuracy(released.iloc[:0], pd.Series([], dtype=object))["majority_in_class"] is None


def test_safepub_on_adult_with_salary_class_as_target() -> None:
    df = pd.read_csv(ADULT / "adult.csv", sep=";")
    hier = load_hierarchies(ADULT / "hierarchies", ADULT_QI, fix_labels=True)
    out = safepub(df, ADULT_QI, hier, epsilon=1.0, delta=1e-5, metric="classification", target="salary-class",
                  rng=seeded(7))  # fmt: skip
    assert list(out.table.columns) == ADULT_QI  # the target steers the search; it is not released
    assert out.metric == "classification" and out.target == "salary-class"
    assert out.table.value_counts().min() >= out.params.k
    report = publication_report(df, out, hier)
    found = report["classification"]
    assert report["search"]["target"] == "salary-class" and found["released_records"] == len(out.table)
    # a vote within classes is never worse than the overall majority of the same records
    assert 0.5 < found["majority_overall"] <= found["majority_in_class"] <= 1.0


def _database(path: Path) -> Path:
    with Database(path) as db:
        db.grant("alice", epsilon=1.0)
    return path


def _spent(path: Path) -> float:
    with Database(path) as db:
        return float(db.ledger.budget(OWNER_ACCOUNT, db.name).epsilon_spent)


def test_the_command_on_adult_reports_the_target(tmp_path: Path) -> None:
    db = _database(tmp_path / "db")
    out, report = tmp_path / "out.csv", tmp_path / "r.json"
    args = ["publish", "safepub", str(ADULT / "adult.csv"), "--qi", ",".join(ADULT_QI), "--epsilon", "1",
            "--delta", "1e-5", "--epsilon-search", "0.5", "--hierarchies", str(ADULT / "hierarchies"),
            "--fix-labels", "--metric", "classification", "--target", "salary-class", "--db", str(db),
            "-o", str(out), "--report", str(report)]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert list(pd.read_csv(out).columns) == ADULT_QI
    body = json.loads(report.read_text())
    assert body["search"]["metric"] == "classification" and body["classification"]["target"] == "salary-class"
    assert _spent(db) == pytest.approx(1.0)


def test_the_json_request_takes_a_target(tmp_path: Path) -> None:
    import privdb

    db = _database(tmp_path / "db")
    with privdb.connect(db) as owner:
        owner.load("patients", PATIENTS)
        hierarchies = {"job": [["engineer", "professional", "*"], ["lawyer", "professional", "*"],
                               ["writer", "artist", "*"], ["dancer", "artist", "*"]],
                       "sex": [["male", "*"], ["female", "*"]]}  # fmt: skip
        options = {"qi": ["job", "sex"], "hierarchies": hierarchies, "epsilon": 1.0, "delta": 1e-5}
        released = owner.publish("safepub", "patients", **options, metric="classification", target="disease")
        assert released["summary"]["target"] == "disease" and released["columns"] == ["job", "sex"]
        with pytest.raises(InvalidParameter, match="quasi-identifier"):
            owner.publish("safepub", "patients", qi=["job", "sex"], hierarchies=hierarchies, epsilon=1.0,
                          delta=1e-5, metric="classification", target="sex")  # fmt: skip
    assert _spent(db) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--metric", "classification"], "needs the column to predict: give --target COLUMN"),
        (["--metric", "classification", "--target", "salary"], "--target: unknown column 'salary'"),
        (["--metric", "classification", "--target", "job"], "--target 'job' is a quasi-identifier"),
        (["--metric", "loss", "--target", "disease"], "use --metric classification (or leave --metric out)"),
    ],
)
def test_bad_targets_are_one_line_and_spend_nothing(tmp_path: Path, extra: list[str], needle: str) -> None:
    hier, db = _hierarchies(tmp_path / "h"), _database(tmp_path / "db")
    args = ["publish", "safepub", str(PATIENTS), "--qi", "job,sex,age", "--epsilon", "1", "--delta", "1e-5",
            "--hierarchies", str(hier), "--db", str(db), "-o", str(tmp_path / "o.csv"), *extra]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    assert len(done.output.strip().splitlines()) == 1 and needle in done.output, done.output
    assert _spent(db) == 0.0 and not (tmp_path / "o.csv").exists()
