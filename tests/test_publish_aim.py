"""AIM (issue 17, part 3: ``privdb publish synthetic --method aim``): the public plan, the exact model
marginals used for scoring, the zCDP budget the rounds spend, an ε audit of a round (selection and
measurement) on neighbouring tables, bad input refused before anything is spent, the command end to end."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import privdb
from conftest import ALPHA, seeded
from privdb.accounting import zcdp
from privdb.audit.auditor import audit
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.errors import InvalidParameter
from privdb.mechanisms import DiscreteGaussian, ExponentialMechanism, RandomSource
from privdb.publish import aim as aim_module
from privdb.publish.aim import ALPHA as SHARE
from privdb.publish.aim import MAX_WORKLOAD, aim_round, model_marginals, plan
from privdb.publish.evaluation import split_rows
from privdb.publish.l1 import selector
from privdb.publish.mst import marginal
from privdb.publish.synthetic import encode, load_mbi, release_synthetic
from privdb.publish.utility import utility_report
from publishfixtures import adult_with_domains, example_people, spent

runner = CliRunner()


def test_the_plan_is_the_papers_workload_weights_and_first_round() -> None:
    """Four columns: the 4 triples and their downward closure (4 + 6 + 4 candidates), w_r = Σ_s |r ∩ s|,
    and σ₀, ε₀ giving each of T = 16d rounds ρ/T, α of it for the measurement."""
    rho = 0.7
    made = plan(4, rho)
    assert len(made.candidates) == 14 and all(1 <= len(c) <= 3 for c in made.candidates)
    weight = dict(zip(made.candidates, made.weights, strict=True))
    assert weight[(0,)] == 3 and weight[(0, 1)] == 6 and weight[(0, 1, 2)] == 9
    rounds = 16 * 4
    assert 1 / (2 * made.sigma**2) == pytest.approx(SHARE * rho / rounds)
    assert made.epsilon**2 / 8 == pytest.approx((1 - SHARE) * rho / rounds)
    assert plan(2, rho).candidates == ((0,), (0, 1), (1,))  # fewer than 3 columns: the widest marginal
    wide = plan(12, rho)  # 220 triples: a public, fixed-seed sample of them
    assert sum(len(c) == 3 for c in wide.candidates) == MAX_WORKLOAD and wide == plan(12, rho)


def test_model_marginals_are_exact() -> None:
    """The junction-tree marginals used for scoring equal mbi's own inference, for every 2- and 3-way
    clique (in or out of the model, across a disconnected column)."""
    mbi = load_mbi()
    rng = np.random.default_rng(1)
    names, sizes = list("abcdef"), [2, 3, 4, 2, 3, 2]
    cliques = [("a", "b"), ("b", "c"), ("c", "d", "e"), ("f",)]
    measurements = [
        mbi.LinearMeasurement(rng.uniform(0, 50, math.prod(sizes[names.index(x)] for x in c)), c, stddev=1.0)
        for c in cliques
    ]
    estimator = mbi.estimation.MirrorDescent(marginal_oracle=mbi.marginal_oracles.message_passing_stable)
    model = estimator.estimate(mbi.Domain(tuple(names), tuple(sizes)), measurements, iters=200)
    queries = [*itertools.combinations(names, 2), *itertools.combinations(names, 3)]
    for query, mine in zip(queries, model_marginals(mbi, model, queries), strict=True):
        theirs = np.asarray(model.project(query).datavector(flatten=False))
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9)


def _small(n: int = 300) -> tuple[pd.DataFrame, Any]:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.85, a % 2, 1 - a % 2)
    c = np.where(rng.random(n) < 0.8, (a + b) % 2, rng.integers(0, 2, n))
    frame = pd.DataFrame({"a": np.array(["x", "y", "z"])[a], "b": b, "c": np.array(["u", "v"])[c]})
    spec = {"columns": {"a": {"type": "category", "values": ["x", "y", "z"]},
                        "b": {"type": "int", "lower": 0, "upper": 1},
                        "c": {"type": "category", "values": ["u", "v"]}}}  # fmt: skip
    return frame, metadata_from_dict("small", spec, {"a": "text", "b": "int", "c": "text"})


def test_the_rounds_spend_rho_and_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every measurement's ρ (the discrete Gaussian's, after rounding its scale up) plus every selection's
    ε²/8 adds up to the ρ from (ε, δ), to within the 1e-9 kept aside; the last round spends what is left."""
    spends: list[float] = []

    class Gaussian(DiscreteGaussian):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            spends.append(self.rho)

    def selection(
        epsilon: float, sensitivity: float, rng: RandomSource, *, weighted: bool = False
    ) -> tuple[ExponentialMechanism, float, float]:
        spends.append(epsilon**2 / 8)  # one mechanism drawn from once per round
        return selector(epsilon, sensitivity, rng, weighted=weighted)

    monkeypatch.setattr(aim_module, "DiscreteGaussian", Gaussian)
    monkeypatch.setattr(aim_module, "selector", selection)
    monkeypatch.setattr(aim_module, "MAX_ROUNDS", 3)
    frame, meta = _small()
    released = release_synthetic(
        frame, meta, epsilon=2.0, delta=1e-6, rows=200, method="aim", rng=seeded(2), iterations=100
    )
    rho = zcdp.rho_from_epsilon(2.0, 1e-6)
    assert released.rho == rho and 1 <= released.rounds <= 3
    assert len(spends) == 3 + 2 * released.rounds  # three 1-way measurements, then a pick and a measurement
    assert rho * (1 - 1e-6) <= sum(spends) <= rho
    assert len(released.cliques) == 3 + released.rounds and released.cliques[:3] == [("a",), ("b",), ("c",)]
    assert len(released.frame) == 200 and set(released.frame["c"]) <= {"u", "v"}


@pytest.mark.slow  # ~20 s: 6,000 rounds on each table
def test_a_round_is_dp_on_neighbouring_tables() -> None:
    """The 1-way measurements and one round (the exponential mechanism's pick, the measurement of the picked
    marginal) at ρ from (ε, δ) = (8, 1e-3), on tables with and without one person (cell (1, 1, 1)): the
    noisy counts of the person's cells, summed (post-processing), have a Clopper–Pearson ε lower bound
    (confidence 1 − ALPHA) within the ε spent, and above 0.1 (the audit sees the person)."""
    epsilon, delta = 8.0, 1e-3
    rho = zcdp.rho_from_epsilon(epsilon, delta)
    base = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [1, 0, 1], [0, 0, 1], [1, 1, 1]], dtype=np.int64)
    neighbour = np.vstack([base, [[1, 1, 1]]])
    sizes = [2, 2, 2]
    setup = plan(3, rho)
    half = rho / 2  # the 1-way measurements and the round: ρ/2 each
    sigma_one = math.sqrt(3 / (2 * half))  # three 1-way marginals at ρ/6 each
    sigma, em = math.sqrt(1 / (2 * SHARE * half)), math.sqrt(8 * (1 - SHARE) * half)
    uniform = [np.full([2] * len(c), 6.5 / 2 ** len(c)) for c in setup.candidates]  # a public model
    source = seeded(13)

    def draw(codes: np.ndarray):  # type: ignore[no-untyped-def]
        exacts = [marginal(codes, sizes, c) for c in setup.candidates]

        def sample(n: int) -> np.ndarray:
            out = np.empty(n)
            for i in range(n):
                total = 0.0
                for a in range(3):
                    mech = DiscreteGaussian(
                        rho=1 / (2 * sigma_one**2), delta=delta, sensitivity=1, rng=source
                    )
                    total += float(mech.release(exacts[setup.candidates.index((a,))])[1])
                _, noisy, _ = aim_round(exacts, uniform, setup.weights, sigma, em, 1, delta, source)
                out[i] = total + float(noisy.reshape(-1)[-1])  # the picked marginal's cell (1, …, 1)
            return out

        return sample

    result = audit(
        "aim", draw(base), draw(neighbour), epsilon=epsilon, delta=delta, samples=6_000, confidence=1 - ALPHA
    )
    assert result.epsilon_lower_bound <= epsilon, result.to_dict()
    assert result.epsilon_lower_bound > 0.1, result.to_dict()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return example_people(tmp_path / "db")


@pytest.mark.parametrize("method", ["gan", "AIM", "aim "])
def test_an_unknown_method_is_refused_before_anything_is_spent(db: Path, tmp_path: Path, method: str) -> None:
    args = ["publish", "synthetic", "people", "--db", str(db), "--epsilon", "1", "--delta", "1e-9", "--rows",
            "5", "--method", method, "-o", str(tmp_path / "s.csv")]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and "--method must be one of mst, aim" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and spent(db) == 0
    with privdb.connect(db) as owner, pytest.raises(InvalidParameter, match="must be one of mst, aim"):
        owner.publish("synthetic", "people", epsilon=1.0, delta=1e-9, rows=5, method=method)
    assert spent(db) == 0 and not (tmp_path / "s.csv").exists()


def test_the_command_runs_aim_charges_and_reports(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--method aim`` on the example people (two columns, two rounds to keep it short): rows in the public
    domains, the report (method, rounds, measured cliques, utility with the classifier), the charge to the
    owner's account and the table's lifetime budget, the log line; and the same through Connection.publish."""
    monkeypatch.setattr(aim_module, "MAX_ROUNDS", 2)
    runner.invoke(app, ["budgets", "--db", str(db), "--table", "people", "--epsilon", "5", "--delta", "1e-6"])
    out, report = tmp_path / "s.csv", tmp_path / "r.json"
    args = ["publish", "synthetic", "people", "--db", str(db), "--method", "aim", "--columns", "sex,state",
            "--epsilon", "1", "--delta", "1e-9", "--rows", "321", "-o", str(out), "--report", str(report),
            "--target", "sex"]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.stderr
    rows = pd.read_csv(out)
    assert len(rows) == 321 and list(rows.columns) == ["sex", "state"]
    assert set(rows["sex"].dropna()) <= {"F", "M"}
    summary = json.loads(report.read_text())
    assert summary["method"] == "aim" and 1 <= summary["rounds"] <= 2
    assert summary["measured"][:2] == ["sex", "state"]
    assert len(summary["measured"]) == 2 + summary["rounds"]
    assert summary["rho"] == pytest.approx(zcdp.rho_from_epsilon(1.0, 1e-9))
    assert {"train_synthetic_test_real", "majority_class"} <= set(summary["utility"]["classifier"])
    log = runner.invoke(app, ["log", "--db", str(db), "--format", "json"])
    assert "publish synthetic people --rows 321 (aim)" in log.stdout
    assert spent(db) == pytest.approx(2.0)  # the owner's account and the table's lifetime budget
    with privdb.connect(db) as owner:
        made = owner.publish(
            "synthetic", "people", columns=["sex", "state"], epsilon=1.0, delta=1e-9, rows=40, method="aim"
        )
    assert made["summary"]["method"] == "aim" and len(made["rows"]) == 40 and made["summary"]["rounds"] >= 1
    assert spent(db) == pytest.approx(4.0)


@pytest.mark.slow  # a dozen or more rounds, each a new model for jax to compile: minutes on a shared machine
def test_adult_end_to_end() -> None:
    """Adult (30,162 rows, ARX's hierarchies as public domains) at ε = 1: AIM's 3-way marginals are close and,
    unlike MST's tree, its cliques link salary-class to several columns, so the classifier trained on its rows
    clearly beats the majority class."""
    frame, meta = adult_with_domains()
    split = split_rows(frame)  # the classifier's test rows are held out before the release
    released = release_synthetic(
        split.train, meta, epsilon=1.0, delta=1e-9, rows=len(frame), method="aim", rng=seeded(5)
    )
    held_out = (encode(split.train, released.domains), encode(split.test, released.domains))
    report = utility_report(encode(frame, released.domains), released.codes, released.columns,
                            [len(d.labels) for d in released.domains], "salary-class", held_out)  # fmt: skip
    tv = report["tv_distance"]
    assert tv["2-way"]["average"] < 0.08 and tv["3-way"]["average"] < 0.15, tv["3-way"]["average"]
    accuracy = report["classifier"]
    assert accuracy["train_synthetic_test_real"] > accuracy["majority_class"] + 0.03, accuracy
