"""Contribution bounding is said, not silent: ``covers`` on every answer, a noisy count of the units over the
bound (its ε share taken from the query's ε), ``explain`` showing it before any spend, and ``privdb tune``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.cli import app
from privdb.database import Database
from privdb.mechanisms import Geometric
from privdb.publish.tune import NOISE_REACH, _kept_shares, bins
from privdb.sql.engine import explain, prepare, run
from privdb.sql.plan.truncation import TRUNCATION_SHARE

PEOPLE, BOUND = 20_000, 3
VISITS_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": BOUND,
    "max_groups": 2,
    "columns": {
        "pid": {"type": "int"},
        "stay": {"type": "int", "lower": 0, "upper": 20},
        "ward": {"type": "int", "values": [0, 1, 2]},
    },
}
PLAIN_META: dict[str, Any] = {"columns": VISITS_META["columns"]}


def visits(seed: int = 26) -> pd.DataFrame:
    """20,000 people with 1–14 visits each (about 150,000 rows); later visits are longer stays, so the
    bounded average differs from the table's."""
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 15, size=PEOPLE)
    pid = np.repeat(np.arange(PEOPLE), n)
    order = np.concatenate([np.arange(k) for k in n])
    stay = np.minimum(20, order + rng.integers(0, 4, size=pid.size))
    return pd.DataFrame({"pid": pid, "stay": stay, "ward": rng.integers(0, 3, size=pid.size)})


def truth(frame: pd.DataFrame, where: pd.Series | None = None) -> int:
    """Units whose kept rows exceed the bound (ungrouped)."""
    rows = frame if where is None else frame[where]
    return int((rows.groupby("pid").size() > BOUND).sum())


@pytest.fixture(scope="module")
def visits_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    db = Database(tmp_path_factory.mktemp("visits"))
    db.backend.load_frame("visits", visits())
    db.set_metadata("visits", VISITS_META)
    db.backend.load_frame("plain", visits())
    db.set_metadata("plain", PLAIN_META)
    db.grant("alice", epsilon=1_000, delta=1e-3)
    db.noise_source = seeded(5)
    return db


def test_answer_says_rows_were_dropped_and_estimate_covers_truth(visits_db: Database) -> None:
    frame = visits()
    result = run(visits_db, "alice", "DP-SELECT 1 COUNT(*), AVG(stay) FROM visits")
    out = result.to_dict()
    assert out["covers"].startswith("the data after contribution bounding (at most 3 rows per pid")
    assert all(a["covers"].startswith(out["covers"]) for a in out["accuracy"])
    assert "stay clamped to [0, 20]" in out["accuracy"][1]["covers"]
    cut = out["truncation"]
    true = truth(frame)
    assert true > 10_000  # most people have more than 3 visits
    # the geometric noise at ε/20 = 0.05: P(|Z| > 400) = 2·e^(−0.05·400)/(1+e^(−0.05)) < 1e-8
    assert abs(cut["units_over_bound"] - true) <= 400
    assert cut["ci95"][0] <= cut["units_over_bound"] <= cut["ci95"][1]
    assert cut["ci95"][1] - cut["ci95"][0] < 200
    assert cut["epsilon"] == pytest.approx(1 / TRUNCATION_SHARE)
    assert cut["note"].startswith("contribution bounding dropped rows")
    # the query's other shares split the rest: the whole costs exactly the ε written
    assert result.epsilon_spent == 1.0
    assert sum(a["epsilon"] for a in out["accuracy"]) + cut["epsilon"] <= 1.0
    assert sum(a["epsilon"] for a in out["accuracy"]) == pytest.approx(1 - 1 / TRUNCATION_SHARE)
    # and the bounded count is far from the table's: the reason the label matters
    assert out["rows"][0][0] < 0.5 * len(frame)


@pytest.mark.parametrize(
    ("query", "mask"),
    [
        ("DP-SELECT 1 MEDIAN(stay) FROM visits WHERE stay < 3", "lt3"),  # its own query (no noisy sums)
        ("DP-SELECT 1 COUNT(*) FROM visits WHERE stay < 3", "lt3"),  # the statistics query's column
        ("DP-SELECT 1 COUNT(DISTINCT ward) FROM visits", None),
    ],
)
def test_estimate_follows_the_where(visits_db: Database, query: str, mask: str | None) -> None:
    frame = visits()
    true = truth(frame, frame["stay"] < 3 if mask else None)
    cut = run(visits_db, "alice", query).to_dict()["truncation"]
    assert abs(cut["units_over_bound"] - true) <= 400  # false failure < 1e-8 (as above)


def test_grouped_counts_units_over_rows_or_groups(visits_db: Database) -> None:
    frame = visits()
    per = frame.groupby("pid").agg(rows=("ward", "size"), groups=("ward", "nunique"))
    true = int(((per["rows"] > BOUND) | (per["groups"] > 2)).sum())
    out = run(visits_db, "alice", "DP-SELECT 1 ward, SUM(stay) FROM visits GROUP BY ward").to_dict()
    assert out["truncation"]["max_groups"] == 2
    assert abs(out["truncation"]["units_over_bound"] - true) <= 400
    assert "in at most 2 groups" in out["covers"]


def test_no_privacy_unit_no_share_and_split_unchanged(visits_db: Database) -> None:
    out = run(visits_db, "alice", "DP-SELECT 1 COUNT(*), AVG(stay) FROM plain").to_dict()
    assert out["covers"] == "the data"
    assert "truncation" not in out
    assert [a["epsilon"] for a in out["accuracy"]] == [0.5, 0.5]
    assert out["accuracy"][0]["covers"] == "the data"
    assert out["accuracy"][1]["covers"] == "the data, stay clamped to [0, 20]"
    plan, _ = prepare(visits_db, "DP-SELECT 1 COUNT(*) FROM plain")
    assert plan.truncation_epsilon == 0.0
    assert "truncation" not in explain(visits_db, "DP-SELECT 1 COUNT(*) FROM plain")


def test_explain_shows_the_share_without_spending(visits_db: Database) -> None:
    before = visits_db.budget("alice").epsilon_remaining
    plan = explain(visits_db, "DP-SELECT 2 COUNT(*) FROM visits", analyst="alice")
    assert plan["truncation"]["possible"] is True
    assert plan["truncation"]["epsilon"] == pytest.approx(0.1)
    assert plan["truncation"]["epsilon_share"] == pytest.approx(1 / TRUNCATION_SHARE)
    assert plan["truncation"]["ci95_half_width"] == pytest.approx(30, abs=1)
    assert plan["columns"][0]["epsilon"] == pytest.approx(1.9)
    assert plan["covers"].startswith("the data after contribution bounding")
    assert visits_db.budget("alice").epsilon_remaining == before
    shown = CliRunner().invoke(
        app, ["explain", "--db", str(visits_db.path), "DP-SELECT 2 COUNT(*) FROM visits"]
    )
    assert shown.exit_code == 0, shown.output
    assert "truncation" in shown.stdout and "(5% of the query's)" in shown.stdout


def test_cli_table_prints_the_note(tmp_path: Path) -> None:
    db = Database(tmp_path / "db")
    db.backend.load_frame("visits", visits())
    db.set_metadata("visits", VISITS_META)
    db.grant("alice", epsilon=10)
    db.close()
    shown = CliRunner().invoke(
        app, ["query", "--db", str(tmp_path / "db"), "--analyst", "alice", "DP-SELECT 1 COUNT(*) FROM visits"]
    )
    assert shown.exit_code == 0, shown.output
    assert "note: contribution bounding dropped rows" in " ".join(shown.stdout.split())


# ---- privdb tune -------------------------------------------------------------------------------------------


def _tune_db(tmp_path: Path) -> Path:
    db = Database(tmp_path / "db")
    db.backend.load_frame("visits", visits())
    db.set_metadata("visits", VISITS_META)
    db.backend.load_frame("plain", visits())
    db.set_metadata("plain", PLAIN_META)
    db.grant("alice", epsilon=10)
    db.close()
    return tmp_path / "db"


def test_tune_histogram_charged_and_suggests_a_bound(tmp_path: Path) -> None:
    path = _tune_db(tmp_path)
    shown = CliRunner().invoke(
        app, ["tune", "--db", str(path), "visits", "--epsilon", "1", "--format", "json"]
    )
    assert shown.exit_code == 0, shown.output
    out = json.loads(shown.stdout)
    assert out["privacy_unit"] == "pid" and out["current_max_contributions"] == BOUND
    units = {b["low"]: b["units"] for b in out["bins"] if b["high"] == b["low"]}
    true = visits().groupby("pid").size().value_counts()
    # geometric noise at ε = 1: P(|Z| > 25) < 1e-10 per bin
    assert all(abs(units[k] - int(true.get(k, 0))) <= 25 for k in range(1, 17))
    # 1–14 rows uniformly: a bound of 10 keeps 95/105 = 90.5% of the rows, 9 keeps 90/105 = 85.7%
    assert out["suggested_max_contributions"] == 10
    db = Database(path)
    try:
        log = db.ledger.budget("(owner)", db.name)
        assert float(log.epsilon_spent) == pytest.approx(1.0)
    finally:
        db.close()
    table = CliRunner().invoke(app, ["tune", "--db", str(path), "visits"])
    assert table.exit_code == 0, table.output
    assert "suggested max_contributions: 10" in table.stdout and "charged ε=0.1" in table.stdout


def test_tune_refuses_analysts_and_bad_input(tmp_path: Path) -> None:
    path = _tune_db(tmp_path)
    db = Database(path)
    token = db.grant("bob", epsilon=1)
    spent_before = db.ledger.budget("(owner)", db.name).epsilon_spent
    db.close()
    cases = [
        (["tune", "--db", str(path), "visits", "--token", token], "unauthorized"),
        (["tune", "--db", str(path), "plain"], "no privacy_unit"),
        (["tune", "--db", str(path), "visitz"], "unknown_table"),
        (["tune", "--db", str(path), "visits", "--epsilon", "-1"], "epsilon"),
        (["tune", "--db", str(path), "visits", "--coverage", "1.5"], "coverage"),
        (["tune", "visits"], "--db"),
    ]
    for args, words in cases:
        shown = CliRunner().invoke(app, args)
        assert shown.exit_code == 2, (args, shown.output)
        lines = shown.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], (args, shown.stderr)
    db = Database(path)
    try:
        assert (
            db.ledger.budget("(owner)", db.name).epsilon_spent == spent_before
        )  # refused before the read: nothing spent
    finally:
        db.close()


def test_gaussian_answers_keep_the_estimate_on_the_geometric_mechanism(visits_db: Database) -> None:
    """USING GAUSSIAN: the statistics get Gaussian noise at the rest of ε; the estimate stays geometric
    at ε/20, charged plainly beside the zCDP part (never more than the ε written)."""
    result = run(visits_db, "alice", "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM visits")
    out = result.to_dict()
    assert out["truncation"]["mechanism"] == "geometric"
    assert out["truncation"]["epsilon"] == pytest.approx(0.05)
    assert out["composition"]["epsilon_plain"] == pytest.approx(1.0)  # ε/20 plain + the Gaussian part
    assert result.epsilon_spent <= 1.0


def test_a_noise_spike_in_an_empty_bin_of_large_units_does_not_set_the_bound() -> None:
    """Deterministic: the true histogram of the test table, plus a spike just inside the noise's reach in the
    bin of 2^19 rows per unit (noise alone goes that far with probability ≤ 1e-6 over all bins)."""
    edges = bins()
    sizes = visits().groupby("pid").size().value_counts()
    units = np.zeros(len(edges))
    for n, count in sizes.items():
        units[next(i for i, (lo, hi) in enumerate(edges) if hi is None or lo <= int(n) <= hi)] += count
    for epsilon in (1.0, 0.1):
        noise = Geometric(epsilon=epsilon, sensitivity=1)
        spiked = units.copy()
        big = next(i for i, (_, hi) in enumerate(edges) if hi == 2**19)
        spiked[big] = noise.half_width(1e-6 / len(edges)) - 1
        shares = _kept_shares(edges, spiked, noise.half_width(NOISE_REACH / len(edges)))
        suggested = next(hi for (_, hi), s in zip(edges, shares, strict=True) if s is not None and s >= 0.9)
        assert suggested == 10
