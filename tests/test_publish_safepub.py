"""SafePub (issue 17): ARX's parameter table exactly, the release's privacy on neighbouring tables (exactly
for the sampling + suppression step, empirically with Clopper–Pearson for the whole mechanism), the
course's patients.csv end to end with the ledger charge, Adult, and bad input that spends nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

from adversarial.safepub_audit import audit_neighbours
from conftest import seeded
from privdb.anonymize import FlatHierarchy, load_hierarchies
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.publish import parameters, safepub
from privdb.publish.charge import OWNER_ACCOUNT
from privdb.publish.parameters import delta_of_k
from privdb.publish.report import marginal_distances, publication_report

DATA = Path(__file__).resolve().parents[1] / "data"
ADULT = DATA / "adult"
PATIENTS = DATA / "examples" / "patients.csv"
ADULT_QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]

runner = CliRunner()


@pytest.mark.parametrize(
    ("eps", "delta", "k"), [(1.0, 1e-5, 62), (0.5, 1e-5, 52), (2.0, 1e-5, 114), (1.0, 1e-6, 75)]
)
def test_parameters_match_arx(eps: float, delta: float, k: int) -> None:
    p = parameters(eps, delta)
    assert p.k == k
    assert round(p.beta, 3) == round(1 - math.exp(-eps), 3)
    # ARX's convention: one more than the smallest k with δ(k) < δ
    assert delta_of_k(k - 1, eps) < delta <= delta_of_k(k - 2, eps)


def test_beta_reference() -> None:
    assert round(parameters(1.0, 1e-5).beta, 3) == 0.632


@pytest.mark.parametrize(("eps", "delta"), [(0.9, 1e-5), (1.9, 0.05), (0.5, 1e-3)])
def test_sampling_and_suppression_are_eps_delta_dp_exactly(eps: float, delta: float) -> None:
    """For a fixed node, neighbours differ only in the target's class: its released count is Bin(m, β)
    (0 when below k) against Bin(m + 1, β). The hockey-stick divergence both ways is ≤ δ for every m."""
    p = parameters(eps, delta)
    for m in range(0, 6 * p.k):
        j = np.arange(m + 2)
        without = binom.pmf(j, m, p.beta)
        with_t = binom.pmf(j, m + 1, p.beta)
        # every count below k is published as nothing: merge those outcomes into one
        a = np.append(without[j >= p.k], without[j < p.k].sum())
        b = np.append(with_t[j >= p.k], with_t[j < p.k].sum())
        assert np.maximum(b - math.exp(eps) * a, 0).sum() <= delta * (1 + 1e-9), m
        assert np.maximum(a - math.exp(eps) * b, 0).sum() <= delta * (1 + 1e-9), m


@pytest.mark.slow
def test_release_on_neighbours_audited_with_clopper_pearson() -> None:
    """The whole mechanism (search, sampling, suppression) on D = m copies of one value and D' = D plus the
    target: P(the target's value is released) matches the exact binomial tails and the ε lower bound from
    Clopper–Pearson intervals stays within ε (false failure ≤ ALPHA per check)."""
    eps, eps_search, delta = 2.0, 0.1, 0.05
    p = parameters(eps - eps_search, delta)  # k = 20, β ≈ 0.85
    m, trials = 22, 1500
    hier = {"x": FlatHierarchy("x", ["a", "b"])}
    rng = seeded(17)

    def released(df: pd.DataFrame) -> bool:
        out = safepub(df, ["x"], hier, epsilon=eps, delta=delta, epsilon_search=eps_search, rng=rng)
        return len(out.table) > 0

    audit_neighbours(released, m, trials, p, epsilon=eps, delta=delta)


def test_search_and_release_on_adult() -> None:
    df = pd.read_csv(ADULT / "adult.csv", sep=";")
    hier = load_hierarchies(ADULT / "hierarchies", ADULT_QI, fix_labels=True)
    out = safepub(df, ADULT_QI, hier, epsilon=1.0, delta=1e-5, rng=seeded(5))
    assert out.params.k == 59 and out.steps == sum(h.height for h in hier.values())
    assert list(out.table.columns) == ADULT_QI and len(out.table) == int(out.kept.sum())
    assert not (out.kept & ~out.sampled).any()
    # every released class has at least k records
    assert out.table.value_counts().min() >= out.params.k
    report = publication_report(df, out, hier)
    assert [len(report["marginals_tvd"][w]["marginals"]) for w in "123"] == [8, 28, 56]
    assert [len(report["marginals_tvd_at_node"][w]["marginals"]) for w in "123"] == [8, 28, 56]
    # spreading coarse labels over their leaves costs more than sampling alone
    assert report["marginals_tvd"]["1"]["mean"] >= report["marginals_tvd_at_node"]["1"]["mean"]
    assert report["rows"]["released"] == len(out.table)
    assert 0.3 < report["dropped_by_sampling"] < 0.5  # 1 − β = 0.41 of 30,162 rows
    assert report["removed"] == pytest.approx(report["dropped_by_sampling"] + report["suppressed"])
    assert all(
        0 <= v["max"] <= 1
        for v in [*report["marginals_tvd"].values(), *report["marginals_tvd_at_node"].values()]
    )
    assert 0 < report["ncp"] < 1 and set(report["ncp_per_column"]) == set(ADULT_QI)


def test_raw_marginal_distance_spreads_labels_over_leaves() -> None:
    """A release at '*' is read as uniform over the hierarchy's leaves: x, x, y, y is matched exactly,
    x, x, x, y is 0.25 away; at the raw level a release of x, x against x, x, y, y is 0.5 away."""
    from privdb.publish import Published
    from privdb.publish.report import raw_marginal_distances

    hier = {"a": FlatHierarchy("a", ["x", "y"])}

    def release(labels: list[str], level: int) -> Published:
        n = len(labels)
        return Published(
            table=pd.DataFrame({"a": labels}), qi=("a",), node={"a": level}, params=parameters(1.0, 1e-5),
            epsilon=1.0, epsilon_search=0.1, steps=1, metric="loss",
            sampled=np.ones(n, dtype=bool), kept=np.ones(n, dtype=bool),
        )  # fmt: skip

    even, skewed = pd.DataFrame({"a": ["x", "x", "y", "y"]}), pd.DataFrame({"a": ["x", "x", "x", "y"]})
    assert raw_marginal_distances(even, release(["*", "*"], 1), hier, (1,))["1"]["max"] == 0.0
    assert raw_marginal_distances(skewed, release(["*", "*"], 1), hier, (1,))["1"]["max"] == 0.25
    assert raw_marginal_distances(even, release(["x", "x"], 0), hier, (1,))["1"]["max"] == 0.5


def test_marginal_distance_by_hand() -> None:
    orig = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["1", "2", "1", "2"]})
    rel = pd.DataFrame({"a": ["x", "x"], "b": ["1", "1"]})
    d = marginal_distances(orig, rel, ["a", "b"], ways=(1, 2))
    assert d["1"]["marginals"] == {"a": 0.5, "b": 0.5}
    assert d["2"]["marginals"]["a,b"] == 0.75


# ---- the CLI: patients.csv end to end, the ledger, bad input


def _hierarchies(folder: Path) -> Path:
    folder.mkdir()
    (folder / "job.csv").write_text(
        "engineer;professional;*\nlawyer;professional;*\nwriter;artist;*\ndancer;artist;*\n"
    )
    (folder / "sex.csv").write_text("male;*\nfemale;*\n")
    (folder / "age.csv").write_text("".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(120)))
    return folder


def _database(path: Path) -> Path:
    with Database(path) as db:
        db.grant("alice", epsilon=1.0)  # any database: the owner's publication account needs no grant
    return path


def _spent(db_path: Path) -> tuple[float, float]:
    with Database(db_path) as db:
        b = db.ledger.budget(OWNER_ACCOUNT, db.name)
        return float(b.epsilon_spent), float(b.delta_spent)


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["publish", "safepub", *args])
    return result.exit_code, result.output


def test_patients_end_to_end_charges_the_owner_each_time(tmp_path: Path) -> None:
    hier, db = _hierarchies(tmp_path / "h"), _database(tmp_path / "db")
    out, report, png = tmp_path / "out.csv", tmp_path / "r.json", tmp_path / "r.png"
    args = [str(PATIENTS), "--qi", "job,sex,age", "--epsilon", "1", "--delta", "1e-5",
            "--hierarchies", str(hier), "--db", str(db), "-o", str(out), "--report", str(report),
            "--report-png", str(png)]  # fmt: skip
    code, text = _run(*args)
    assert code == 0, text
    assert "charged ε=1" in text
    released = pd.read_csv(out)
    assert list(released.columns) == ["job", "sex", "age"]
    body = json.loads(report.read_text())
    assert body["privacy"] == {"epsilon": 1.0, "delta": 1e-5, "epsilon_anon": 0.9, "epsilon_search": 0.1,
                               "beta": pytest.approx(1 - math.exp(-0.9)), "k": 59}  # fmt: skip
    # 7 patients can never fill a class of 59: SafePub releases nothing, and says so
    assert len(released) == 0 and body["rows"] == {
        "input": 7,
        "sampled": body["rows"]["sampled"],
        "released": 0,
    }
    assert body["removed"] == 1.0 and set(body["marginals_tvd"]) == {"1", "2", "3"} and body["ncp"] is None
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert _spent(db) == pytest.approx((1.0, 1e-5))
    code, text = _run(*args)  # re-publishing is a new charge
    assert code == 0, text
    assert _spent(db) == pytest.approx((2.0, 2e-5))
    with Database(db) as d:
        notes = [e for e in d.log() if "publish safepub patients" in str(e)]
    assert len(notes) == 2


def test_table_budget_caps_publications(tmp_path: Path) -> None:
    hier, db = _hierarchies(tmp_path / "h"), _database(tmp_path / "db")
    with Database(db) as d:  # the table loaded in the database: IN names it
        d.load("patients", PATIENTS)
        d.set_shared_budget(table="patients", epsilon=1.5, delta=1e-3)
    args = ["patients", "--qi", "job,sex,age", "--epsilon", "1", "--delta", "1e-5",
            "--hierarchies", str(hier),
            "--db", str(db)]  # fmt: skip
    assert _run(*args, "-o", str(tmp_path / "a.csv"))[0] == 0
    code, text = _run(*args, "-o", str(tmp_path / "b.csv"))
    assert code == 2 and "table 'patients'" in text and "budget" in text
    assert not (tmp_path / "b.csv").exists()
    assert _spent(db) == pytest.approx((1.0, 1e-5))


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--qi", "job,salary"], "unknown column 'salary'"),
        (["--qi", "job,height"], "no public hierarchy for height"),
        (["--epsilon", "0"], "--epsilon must be a positive number"),
        (["--epsilon", "-1"], "--epsilon must be a positive number"),
        (["--delta", "0"], "--delta must be in (0, 1)"),
        (["--delta", "1.5"], "--delta must be in (0, 1)"),
        (["--epsilon", "0.1"], "--epsilon-search must be positive and below --epsilon"),
        (["-o", "/nonexistent-folder/out.csv"], "does not exist"),
        (["--db", "MISSING"], "no privdb database"),
        (["--metric", "utility"], "unknown score 'utility'"),
    ],
)
def test_bad_input_is_one_line_and_spends_nothing(tmp_path: Path, extra: list[str], needle: str) -> None:
    hier, db = _hierarchies(tmp_path / "h"), _database(tmp_path / "db")
    base = {"--qi": "job,sex,age", "--epsilon": "1", "--delta": "1e-5", "--hierarchies": str(hier),
            "--db": str(db), "-o": str(tmp_path / "o.csv")}  # fmt: skip
    for opt, value in zip(extra[::2], extra[1::2], strict=True):
        base[opt] = str(tmp_path / value) if value == "MISSING" else value
    code, text = _run(str(PATIENTS), *[x for kv in base.items() for x in kv])
    assert code == 2, text
    assert len(text.strip().splitlines()) == 1 and needle in text, text
    assert "Traceback" not in text and not (tmp_path / "o.csv").exists()
    assert _spent(db) == (0.0, 0.0)


def test_without_db_nothing_is_published_and_no_grant_can_take_the_owners_account(tmp_path: Path) -> None:
    hier = _hierarchies(tmp_path / "h")
    args = [str(PATIENTS), "--qi", "job,sex,age", "--epsilon", "1", "--delta", "1e-5",
            "--hierarchies", str(hier),
            "-o", str(tmp_path / "o.csv")]  # fmt: skip
    code, text = _run(*args)
    assert code == 2 and "give --db DIR" in text
    assert not (tmp_path / "o.csv").exists()
    with Database(tmp_path / "db") as d, pytest.raises(InvalidParameter):
        d.grant(OWNER_ACCOUNT, epsilon=1.0)  # '(owner)' is not an analyst name: no token stands for it


@pytest.mark.parametrize("metric", ["loss", "precision", "aecs", "discernibility", "entropy"])
def test_scores_move_by_at_most_one_between_neighbours(metric: str) -> None:
    """The exponential mechanism's Δ = 1: on random tables and a random added record, every node's score
    (at several thresholds) changes by at most 1."""
    from privdb.anonymize import TaxonomyHierarchy
    from privdb.anonymize.lattice import Lattice
    from privdb.publish.scores import score

    hier = {
        "a": TaxonomyHierarchy(
            "a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"], ["4", "3-4", "*"]]
        ),
        "b": TaxonomyHierarchy("b", [["x", "*"], ["y", "*"], ["z", "*"]]),
    }
    gen = np.random.default_rng(3)
    for _ in range(60):
        n = int(gen.integers(1, 40))
        df = pd.DataFrame({"a": gen.choice(["1", "2", "3", "4"], n), "b": gen.choice(["x", "y", "z"], n)})
        extra = pd.DataFrame({"a": [gen.choice(["1", "2", "3", "4"])], "b": [gen.choice(["x", "y", "z"])]})
        bigger = pd.concat([df, extra], ignore_index=True)
        small, large = Lattice(df, ["a", "b"], hier, 2), Lattice(bigger, ["a", "b"], hier, 2)
        for t in (1, 2, 3, 5, 8):
            for node in [(i, j) for i in range(3) for j in range(2)]:
                gap = abs(score(metric, large, node, t) - score(metric, small, node, t))
                assert gap <= 1 + 1e-12, (metric, t, node, gap)
