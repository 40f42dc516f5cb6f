"""StructureFirst 1-D histograms (issue 17): the private structure finds clear steps, trivial structures spend
nothing on the structure, intervals cover each bucket's mean count (binomial test, false failure ≤ 1e-6), ε
audits on neighbouring histograms (the structure against ε₁, the whole release against ε), the command and
the JSON request, and every bad input refused before anything is spent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

import privdb
from conftest import ALPHA, seeded
from privdb.audit.auditor import audit
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism
from privdb.publish.histogram import release_histograms
from privdb.publish.noisefirst import bucket_costs, v_optimal_tables
from privdb.publish.structurefirst import largest_count_bound, structure_first
from publishfixtures import example_people, spent

runner = CliRunner()
STEPS = np.array([50.0] * 10 + [200.0] * 10 + [20.0] * 10)


def _miss_probability(x: np.ndarray, bounds: list[int], epsilon1: float, bound: int) -> float:
    """The chance that one of the k − 1 draws misses its boundary in ``bounds``, given the ones to its right
    were found (a union bound over the draws, from the mechanism's own probabilities)."""
    k, clipped = len(bounds) - 1, np.minimum(x, bound)
    tables, _ = v_optimal_tables(clipped, k - 1)
    cost = bucket_costs(clipped)
    mech = ExponentialMechanism(epsilon=epsilon1 / (k - 1), sensitivity=2 * bound + 1)
    miss = 0.0
    for t in range(k - 1, 0, -1):
        candidates = np.arange(t, bounds[t + 1])
        errors = tables[t - 1][candidates] + cost[candidates, bounds[t + 1]]
        p = mech.probabilities(-(errors - errors.min()))
        miss += 1.0 - float(p[candidates == bounds[t]][0])
    return miss


def test_the_private_structure_finds_clear_steps() -> None:
    """ε = 10 on a step function (50, 200, 20 over ten bins each): the right structure is all but certain
    (the computed chance of a miss is far below ALPHA), and each bin's value is near its step."""
    assert _miss_probability(STEPS, [0, 10, 20, 30], 5.0, 500) < ALPHA
    for seed in range(5):
        done = structure_first(STEPS, 3, epsilon=10.0, count_bound=500, sensitivity=1, rng=seeded(seed))
        assert done.bounds == (0, 10, 20, 30)
        assert done.epsilon_structure + done.epsilon_counts <= 10.0
        assert np.abs(done.counts - STEPS).max() < 1.0  # a total's noise of scale 0.2, over 10 bins
        assert list(done.bucket_of_bins()) == [0] * 10 + [1] * 10 + [2] * 10


def test_through_release_histograms_the_bucket_column_is_released() -> None:
    meta = metadata_from_dict(
        "t", {"columns": {"age": {"type": "int", "lower": 0, "upper": 29}}}, {"age": "int"}
    )
    frame = pd.DataFrame({"age": np.repeat(np.arange(30), STEPS.astype(int))})
    released = release_histograms(frame, meta, marginals=[("age",)], epsilon=10.0, method="structurefirst",
                                  buckets=3, count_bound=500, rng=seeded(3))  # fmt: skip
    ((_, out),) = released.marginals
    assert list(out.columns) == ["age", "count", "ci95_low", "ci95_high", "bucket"]
    assert released.structure is not None and released.structure["bounds"] == [0, 10, 20, 30]
    assert released.structure["epsilon_structure"] == pytest.approx(5.0)


def test_a_structure_with_one_choice_spends_everything_on_the_counts() -> None:
    x = np.array([4.0, 0.0, 9.0, 1.0])
    one = structure_first(x, 1, epsilon=1.0, count_bound=10, sensitivity=1, rng=seeded(1))
    assert one.bounds == (0, 4) and one.epsilon_structure == 0.0 and one.epsilon_counts == pytest.approx(1.0)
    assert len(set(one.counts.tolist())) == 1  # one bucket: every bin its mean
    each = structure_first(x, 4, epsilon=1.0, count_bound=10, sensitivity=1, rng=seeded(2))
    assert each.bounds == (0, 1, 2, 3, 4) and each.epsilon_structure == 0.0


def test_intervals_cover_each_buckets_mean_count() -> None:
    """Bin 12's interval against the true mean of the bucket it landed in, over 300 independent releases
    with a structure that varies between runs (a noisy ε)."""
    x = np.array([5.0, 9.0, 30.0, 31.0, 12.0, 0.0, 3.0, 44.0, 40.0, 41.0, 7.0, 8.0, 9.0, 2.0, 0.0, 1.0])
    runs, covered, shapes = 300, 0, set()
    for i in range(runs):
        done = structure_first(x, 4, epsilon=0.5, count_bound=50, sensitivity=1, rng=seeded(500 + i))
        bucket = done.bucket_of_bins()
        truth = x[bucket == bucket[12]].mean()
        covered += done.low[12] <= truth <= done.high[12]
        shapes.add(done.bounds)
    assert len(shapes) > 5  # the structure really is random here
    assert covered >= binom.ppf(ALPHA, runs, 0.95), covered


def _releases(x: np.ndarray, seed: int, encode):  # type: ignore[no-untyped-def]
    source = seeded(seed)

    def draw(n: int) -> np.ndarray:
        return np.array([encode(structure_first(x, 2, epsilon=4.0, count_bound=3, sensitivity=1, rng=source))
                         for _ in range(n)])  # fmt: skip

    return draw


@pytest.mark.slow
def test_the_release_is_epsilon_dp_on_neighbouring_histograms() -> None:
    """One person more in bin 2 of (3, 3, 0, 0), k = 2, ε = 4 split 2 + 2, F = 3: the Clopper–Pearson lower
    bound of the chosen boundary's privacy loss stays below ε₁ = 2 (and shows the person at all), and that of
    the whole release (boundary and bin 2's value) below ε."""
    base, neighbour = np.array([3.0, 3.0, 0.0, 0.0]), np.array([3.0, 3.0, 1.0, 0.0])

    def boundary(done):  # type: ignore[no-untyped-def]
        return done.bounds[1]

    structure = audit("structurefirst-structure", _releases(base, 11, boundary),
                      _releases(neighbour, 12, boundary), epsilon=2.0, samples=10_000)  # fmt: skip
    assert structure.epsilon_lower_bound <= 2.0, structure.to_dict()
    assert structure.epsilon_lower_bound > 0.1, structure.to_dict()  # the audit sees the person

    def whole(done):  # type: ignore[no-untyped-def]
        return done.bounds[1] * 1000 + min(round(float(done.counts[2]) * 2), 999)

    release = audit("structurefirst", _releases(base, 13, whole), _releases(neighbour, 14, whole),
                    epsilon=4.0, samples=10_000)  # fmt: skip
    assert 0.1 < release.epsilon_lower_bound <= 4.0, release.to_dict()


def test_the_audit_would_catch_a_structure_without_the_count_bound_in_its_sensitivity() -> None:
    """Control: scoring with sensitivity 1 instead of 2F + 1 on the same neighbours gives the boundary a
    privacy loss far above ε₁ (the exact probabilities show it; the audit above would see it)."""
    base, neighbour = np.array([3.0, 3.0, 0.0, 0.0]), np.array([3.0, 3.0, 1.0, 0.0])

    def probabilities(x: np.ndarray, sensitivity: float) -> np.ndarray:
        cost = bucket_costs(x)
        errors = np.array([cost[0, j] + cost[j, 4] for j in (1, 2, 3)])
        return ExponentialMechanism(epsilon=2.0, sensitivity=sensitivity).probabilities(-errors)

    honest = np.abs(np.log(probabilities(base, 7) / probabilities(neighbour, 7))).max()
    broken = np.abs(np.log(probabilities(base, 1) / probabilities(neighbour, 1))).max()
    assert honest <= 2.0 < broken


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return example_people(tmp_path / "db")


def test_the_command_releases_buckets_with_a_report(db: Path, tmp_path: Path) -> None:
    args = ["publish", "histogram", "people", "--db", str(db), "--columns", "age", "--bins", "age=20",
            "--method", "structurefirst", "--buckets", "5", "--count-bound", "2000", "--epsilon", "1",
            "-o", str(tmp_path / "h.csv"), "--report", str(tmp_path / "r.json"),
            "--report-png", str(tmp_path / "r.png")]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.stderr
    out = pd.read_csv(tmp_path / "h.csv")
    assert len(out) == 20 and out["bucket"].nunique() == 5 and (out["count"] >= 0).all()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["structure"]["buckets"] == 5 and len(report["structure"]["bounds"]) == 6
    assert report["structure"]["epsilon_structure"] + report["structure"]["epsilon_counts"] <= 1.0
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert spent(db) == pytest.approx(1.0)
    log = runner.invoke(app, ["log", "--db", str(db), "--format", "json"])
    assert "--method structurefirst" in log.stdout


def test_the_json_request_takes_the_same_options(db: Path) -> None:
    with privdb.connect(db) as owner:
        released = owner.publish("histogram", "people", columns=[["age"]], bins={"age": 10}, epsilon=1.0,
                                 method="structurefirst", buckets=3, count_bound=2000)  # fmt: skip
        assert released["summary"]["structure"]["buckets"] == 3
        assert released["columns"][-1] == "bucket"
        with pytest.raises(InvalidParameter, match="--buckets must be"):
            owner.publish("histogram", "people", columns=[["age"]], epsilon=1.0, method="structurefirst",
                          buckets=0, count_bound=2000)  # fmt: skip
    assert spent(db) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--columns", "age", "--buckets", "0", "--count-bound", "99"], "whole number from 1"),
        (["--columns", "age", "--buckets", "101", "--count-bound", "99"], "from 1 to 100"),
        (["--columns", "age", "--bins", "age=8", "--buckets", "9", "--count-bound", "99"], "has 8 bins"),
        (["--columns", "age", "--count-bound", "99"], "--buckets must be"),
        (["--columns", "sex", "--buckets", "2", "--count-bound", "99"], "needs an ordered numeric column"),
        (["--columns", "age,sex", "--buckets", "2", "--count-bound", "99"], "one 1-D histogram"),
        (["--columns", "age", "--buckets", "3"], "--count-bound F"),
        (["--columns", "age", "--buckets", "3", "--count-bound", "0"], "--count-bound must be"),
        (["--columns", "age", "--buckets", "3", "--count-bound", "10000000000"], "--count-bound must be"),
        (["--columns", "age", "--buckets", "3", "--count-bound", "99", "--structure-share", "1"],
         "--structure-share must be in (0, 1)"),
        (["--columns", "age", "--buckets", "3", "--count-bound", "99", "--noise", "gaussian", "--delta",
          "1e-6"], "drop --noise"),
    ],
)  # fmt: skip
def test_bad_inputs_are_one_line_and_spend_nothing(
    db: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    base = ["publish", "histogram", "people", "--db", str(db), "--epsilon", "1", "--method", "structurefirst"]
    done = runner.invoke(app, [*base, *extra, "-o", str(tmp_path / "h.csv")])
    assert done.exit_code == 2, done.output
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert spent(db) == 0 and not (tmp_path / "h.csv").exists()


def test_buckets_without_structurefirst_are_refused(db: Path, tmp_path: Path) -> None:
    base = ["publish", "histogram", "people", "--db", str(db), "--epsilon", "1", "--columns", "age"]
    done = runner.invoke(app, [*base, "--buckets", "3", "-o", str(tmp_path / "h.csv")])
    assert done.exit_code == 2 and "add --method structurefirst" in done.stderr
    assert spent(db) == 0


def test_the_largest_count_bound_keeps_the_scores_exact() -> None:
    for bins in (1, 10, 101, 1000):
        top = largest_count_bound(bins)
        assert bins * float(top) ** 2 <= 2.0**52 and bins * top <= 2e9
        worst = np.where(np.arange(bins) % 2 == 0, float(top), 0.0)  # the largest spread of the scores
        ok = structure_first(worst, min(bins, 3), epsilon=1.0, count_bound=top, sensitivity=1,
                             rng=seeded(bins))  # fmt: skip
        assert len(ok.bounds) == min(bins, 3) + 1
