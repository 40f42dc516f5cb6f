"""DP histograms and marginals (issue 17, part 2): consistency and non-negativity by construction, intervals
that cover (binomial test, false failure ≤ 1e-6), an ε audit of the whole release on neighbouring tables,
the ledger charge, and every bad input refused before anything is spent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

from conftest import ALPHA, seeded
from privdb.audit.auditor import audit
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.errors import InvalidParameter
from privdb.publish.histogram import release_histograms
from privdb.publish.marginals import Measurement, estimate, mechanisms
from publishfixtures import EXAMPLES, example_people, spent

runner = CliRunner()
SPEC = {
    "columns": {
        "sex": {"type": "category", "values": ["F", "M"]},
        "state": {"type": "category", "values": ["AL", "AK", "AZ"]},
        "age": {"type": "int", "lower": 0, "upper": 99},
        "name": {"type": "text", "identifier": True},
        "note": {"type": "text"},
    }
}


def _frame(n: int = 600, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "sex": rng.choice(["F", "M"], n), "state": rng.choice(["AL", "AK", "AZ", "XX"], n),
        "age": rng.integers(-5, 120, n), "name": [f"p{i}" for i in range(n)], "note": ["x"] * n,
    })  # fmt: skip


def _meta(spec: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    columns = {"sex": "text", "state": "text", "age": "int", "name": "text", "note": "text"}
    return metadata_from_dict("people", spec or SPEC, columns)


def test_marginals_are_consistent_non_negative_and_keep_the_domain() -> None:
    released = release_histograms(
        _frame(), _meta(), marginals=[("sex", "state"), ("state",), ("sex",), ("age",)], bins={"age": 5},
        epsilon=0.5, rng=seeded(1),
    )  # fmt: skip
    by = dict(released.marginals)
    pair, state, sex = by[("sex", "state")], by[("state",)], by[("sex",)]
    assert list(state["state"]) == ["AL", "AK", "AZ"]  # the public domain: 'XX' is counted nowhere
    assert (pair["count"] >= 0).all() and (state["count"] >= 0).all()
    summed = pair.groupby("state", sort=False)["count"].sum()
    assert np.allclose(summed.reindex(state["state"]).to_numpy(), state["count"].to_numpy(), atol=1e-9)
    assert np.isclose(pair["count"].sum(), sex["count"].sum(), atol=1e-9)
    ages = by[("age",)]
    assert list(ages["age"]) == ["0-19.8", "19.8-39.6", "39.6-59.4", "59.4-79.2", "79.2-99"]
    assert ((ages["ci95_low"] <= ages["count"] + 1e-9) | (ages["count"] == 0)).all()
    assert set(released.utility) == {"sex|state", "state", "sex", "age"}


def test_a_hierarchical_histogram_releases_every_bin() -> None:
    released = release_histograms(
        _frame(), _meta(), hierarchical="age", branching=4, epsilon=1.0, rng=seeded(2)
    )
    ((cols, frame),) = released.marginals
    assert cols == ("age",) and len(frame) == 100  # one bin per year of the declared bounds
    assert released.hierarchical == {"column": "age", "branching": 4, "levels": 5, "epsilon_per_level": 0.2}
    assert (frame["count"] >= 0).all()


def test_intervals_cover_the_true_counts() -> None:
    """One fixed cell per release (releases are independent; cells of one release are not)."""
    frame, runs, covered = _frame(400), 300, 0
    truth = int(((frame["sex"] == "F") & (frame["state"] == "AK")).sum())
    for i in range(runs):
        released = release_histograms(frame, _meta(), marginals=[("sex", "state"), ("state",)], epsilon=0.3,
                                      rng=seeded(100 + i))  # fmt: skip
        pair = released.marginals[0][1]
        cell = pair[(pair["sex"] == "F") & (pair["state"] == "AK")].iloc[0]
        covered += cell["ci95_low"] <= truth <= cell["ci95_high"]
    assert covered >= binom.ppf(ALPHA, runs, 0.95), covered


def test_the_whole_release_is_epsilon_dp_on_neighbouring_tables() -> None:
    """Geometric noise on two overlapping marginals, then the consistent non-negative estimate, on tables
    with and without one person: the Clopper–Pearson lower bound of ε stays below the ε spent."""
    shape, epsilon = (2, 2), 1.0
    base = np.array([[3.0, 1.0], [0.0, 2.0]])
    neighbour = base.copy()
    neighbour[0, 1] += 1  # one more person in cell (F, AK)
    measurements = [Measurement((0, 1)), Measurement((1,))]
    mechs = mechanisms(2, epsilon, 0.0, 1, "laplace", seeded(7))

    def draw(table: np.ndarray):  # type: ignore[no-untyped-def]
        def sample(n: int) -> np.ndarray:
            from privdb.publish.marginals import Measured

            ys, measured = [], []
            for m, mech in zip(measurements, mechs, strict=True):
                exact = m.apply(table)
                noisy = mech.release(np.tile(exact.reshape(-1), n)).reshape(n, *exact.shape)
                ys.append(noisy)
                measured.append(Measured(m, noisy[0], mech))
            released = estimate(measured, ys, shape, nb=1)
            return np.round(released[:, 0, 1], 1)  # the cell the person changes

        return sample

    result = audit("histogram", draw(base), draw(neighbour), epsilon=epsilon, samples=20_000)
    assert result.epsilon_lower_bound <= epsilon, result.to_dict()
    assert (
        result.epsilon_lower_bound > 0.1
    )  # the audit can see the person at all (not a test that cannot fail)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return example_people(tmp_path / "db")


def test_the_command_charges_the_table_and_logs_the_release(db: Path, tmp_path: Path) -> None:
    runner.invoke(app, ["budgets", "--db", str(db), "--table", "people", "--epsilon", "1.5"])
    args = ["publish", "histogram", "people", "--db", str(db), "--columns", "sex,education", "--epsilon", "1",
            "-o", str(tmp_path / "h.csv"), "--report", str(tmp_path / "r.json"),
            "--report-png", str(tmp_path / "r.png")]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.stderr
    out = pd.read_csv(tmp_path / "h.csv")
    assert len(out) == 12 and set(out.columns) >= {"marginal", "sex", "education", "count", "ci95_low"}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["epsilon"] == 1.0 and "sex|education" in report["utility"]["tv_distance"]
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    log = runner.invoke(app, ["log", "--db", str(db), "--format", "json"])
    assert "publish histogram people --columns sex,education" in log.stdout
    again = runner.invoke(app, args)  # re-publishing is a new charge: the table's 1.5 cannot pay it
    assert again.exit_code == 2 and "table 'people'" in again.stderr
    (tmp_path / "h.csv").unlink()
    assert runner.invoke(app, args).exit_code == 2 and not (tmp_path / "h.csv").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--columns", "sex,nosuch"], "no column 'nosuch'"),
        (["--columns", "pid"], "identifier"),
        (["--columns", "income"], None),  # a number with bounds: 10 bins, fine
        (["--columns", "sex,sex"], "1 to 3 different columns"),
        (["--columns", "a,b,c,d"], "1 to 3 different columns"),
        ([], "give the marginals"),
        (["--columns", "sex", "--epsilon", "0"], "--epsilon must be > 0"),
        (["--columns", "sex", "--noise", "gaussian"], "needs --delta"),
        (["--columns", "sex", "--delta", "1.5"], "--delta must be in [0, 1)"),
        (["--columns", "sex", "--bins", "age"], "write COLUMN=N"),
        (["--columns", "sex", "--bins", "age=4"], "bins apply to released columns"),
        (["--hierarchical", "sex"], "numeric column"),
    ],
)
def test_bad_inputs_are_one_line_and_spend_nothing(
    db: Path, tmp_path: Path, extra: list[str], message: str | None
) -> None:
    eps = [] if "--epsilon" in extra else ["--epsilon", "1"]
    done = runner.invoke(app, ["publish", "histogram", "people", "--db", str(db), *eps, *extra,
                               "-o", str(tmp_path / "h.csv")])  # fmt: skip
    if message is None:
        assert done.exit_code == 0, done.stderr
        return
    assert done.exit_code == 2, done.output
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert spent(db) == 0 and not (tmp_path / "h.csv").exists()


def test_paths_and_sources_that_cannot_work_are_refused_first(db: Path, tmp_path: Path) -> None:
    base = ["publish", "histogram", "--epsilon", "1", "--columns", "sex"]
    cases = [
        ([*base, "people", "-o", str(tmp_path / "h.csv")], "--db DIR"),
        ([*base, "people", "--db", str(db), "-o", str(tmp_path / "no" / "h.csv")], "does not exist"),
        ([*base, "peple", "--db", str(db), "-o", str(tmp_path / "h.csv")], "peple"),
        ([*base, str(EXAMPLES / "people.csv"), "--db", str(db), "-o", str(tmp_path / "h.csv")], "--metadata"),
    ]
    for args, message in cases:
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and message in done.stderr, (args, done.stderr)
    assert spent(db) == 0


def test_a_file_is_published_with_its_metadata_and_charged_to_its_name(db: Path, tmp_path: Path) -> None:
    done = runner.invoke(app, ["publish", "histogram", str(EXAMPLES / "people.csv"), "--db", str(db),
                               "--metadata", str(EXAMPLES / "people.yaml"), "--table", "people", "--columns",
                               "sex", "--epsilon", "0.5", "-o", str(tmp_path / "h.csv")])  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert spent(db) == pytest.approx(0.5)


def test_v_optimal_partitions_are_optimal() -> None:
    """The dynamic programme's least error for k buckets equals brute force over every split."""
    import itertools

    from privdb.publish.noisefirst import v_optimal

    y = np.random.default_rng(3).normal(0, 5, 9)

    def sse(a: np.ndarray) -> float:
        return float(((a - a.mean()) ** 2).sum())

    errors, _ = v_optimal(y, 5)
    for k in range(1, 6):
        brute = min(
            sum(sse(y[a:b]) for a, b in itertools.pairwise((0, *cuts, len(y))))
            for cuts in itertools.combinations(range(1, len(y)), k - 1)
        )
        assert errors[k - 1] == pytest.approx(brute, abs=1e-9)


def test_noisefirst_merges_flat_runs_and_keeps_valid_intervals() -> None:
    frame = pd.DataFrame({"age": np.repeat([10, 50, 80], [300, 300, 300]), "sex": "F", "state": "AL",
                          "name": "x", "note": "x"})  # fmt: skip
    released = release_histograms(frame, _meta(), marginals=[("age",)], bins={"age": 50}, epsilon=0.2,
                                  method="noisefirst", rng=seeded(9))  # fmt: skip
    counts = released.marginals[0][1]
    raw = release_histograms(
        frame, _meta(), marginals=[("age",)], bins={"age": 50}, epsilon=0.2, rng=seeded(9)
    )
    truth = np.zeros(50)
    truth[[5, 25, 40]] = 300
    merged_error = np.abs(counts["count"].to_numpy() - truth).mean()
    assert counts["count"].nunique() < 50  # bins were merged
    assert merged_error < np.abs(raw.marginals[0][1]["count"].to_numpy() - truth).mean() * 1.5
    with pytest.raises(InvalidParameter, match="one 1-D histogram"):
        release_histograms(frame, _meta(), marginals=[("age", "sex")], epsilon=1, method="noisefirst")
