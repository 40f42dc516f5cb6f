"""privdb explain per output column (issue 15): mechanism, ε share and 95% ± in the answer's units; a row
for medians; AVG's ± stated at public group sizes, never from the private count; engine SQL only with
--verbose. Real DuckDB databases, the real CLI (CliRunner) and the real server on a loopback port."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.cli import app
from privdb.database import Database
from privdb.sql import engine
from serverfixtures import Server, make_server_db

META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 100_000},
        "city": {"type": "category", "values": ["Bern", "Basel"]},
    }
}
QUERY = (
    "DP-SELECT 2 city, COUNT(*) AS n, AVG(income) AS mean, MEDIAN(age) AS mid, MODE(city) AS top, "
    "SUM(income) / COUNT(*) AS ratio FROM t GROUP BY city"
)


def _db(path: Path, frame: pd.DataFrame) -> Database:
    db = Database(path)
    db.backend.load_frame("t", frame)
    db.set_metadata("t", META)
    db.grant("eve", epsilon=10_000)
    db.noise_source = seeded(8)
    return db


def _even(n: int) -> pd.DataFrame:
    """``n`` rows per city whose incomes are spread evenly over the bounds."""
    return pd.DataFrame(
        {
            "age": np.arange(2 * n) % 100,
            "income": np.tile(np.linspace(0, 100_000, n), 2),
            "city": ["Bern"] * n + ["Basel"] * n,
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = _db(tmp_path / "db", _even(1000))
    yield database
    database.close()


def test_one_entry_per_output_column_with_its_share(db: Database) -> None:
    plan = engine.explain(db, QUERY)
    columns = {c["column"]: c for c in plan["columns"]}
    assert [c["column"] for c in plan["columns"]][:6] == ["city", "n", "mean", "mid", "top", "ratio"]
    assert columns["city"]["mechanism"] == "public domain" and columns["city"]["epsilon"] == 0
    assert columns["ratio"]["mechanism"] == "post-processing" and columns["ratio"]["epsilon"] == 0
    hidden = [c for c in plan["columns"] if c["role"] == "hidden"]
    assert [c["column"].split(" ")[0] for c in hidden] == ["SUM(income)"]  # the ratio's own sum
    # the shares of all columns add up to the query's ε (nothing hidden from the price)
    assert sum(c["epsilon"] for c in plan["columns"]) == pytest.approx(plan["epsilon"])
    assert sum(c["epsilon_share"] for c in plan["columns"]) == pytest.approx(1.0)
    # the existing keys stay
    assert {"engine_sql", "statistics", "aggregates", "order_statistics", "keys", "epsilon"} <= plan.keys()


def test_a_count_states_its_mechanism_s_half_width(db: Database) -> None:
    plan = engine.explain(db, QUERY)
    (count,) = (c for c in plan["columns"] if c["column"] == "n")
    (stat,) = (s for s in plan["statistics"] if s["kind"] == "rows")
    assert count["mechanism"] == "geometric" and count["ci95_half_width"] == stat["ci95_half_width"] > 0


def test_an_average_states_its_half_width_at_public_sizes_and_it_holds(db: Database) -> None:
    """The ± AVG states for 1,000 rows spread over the bounds is what the answers' intervals show on such a
    group: their median half-width within 15% of it (noise moves each interval a little; 200 answers)."""
    plan = engine.explain(db, QUERY)
    (mean,) = (c for c in plan["columns"] if c["column"] == "mean")
    assert mean["ci95_half_width"] is None  # depends on the group's (private) size
    stated = mean["ci95_half_width_at"]
    assert list(stated) == ["100", "1000", "10000"]
    assert stated["100"] > stated["1000"] > stated["10000"] > 0
    halves = []
    for i in range(200):
        res = engine.run(db, "eve", QUERY.replace("DP-SELECT 2", f"DP-SELECT 2 /* {i} */", 1))
        (entry,) = (a for a in res.accuracy if a["column"] == "mean")
        halves += [(b - a) / 2 for a, b in entry["ci95_rows"]]
    assert np.median(halves) == pytest.approx(stated["1000"], rel=0.15)


def test_a_median_gets_a_row_that_matches_its_answer(db: Database) -> None:
    plan = engine.explain(db, QUERY)
    (mid,) = (c for c in plan["columns"] if c["column"] == "mid")
    assert mid["mechanism"] == "exponential" and mid["rank_error95"] > 0
    res = engine.run(db, "eve", QUERY)
    (entry,) = (a for a in res.accuracy if a["column"] == "mid")
    assert mid["rank_error95"] == entry["rank_error95"]
    assert mid["interval_rank_offset"] == entry["interval_rank_offset"]
    assert mid["epsilon_shares"] == entry["epsilon_shares"]
    (top,) = (c for c in plan["columns"] if c["column"] == "top")
    assert top["mechanism"] == "exponential" and top["count_gap95"] > 0


SMOOTH = "DP-SELECT 2 DELTA 1e-6 USING SMOOTH MEDIAN(age) AS mid, QUANTILE(income, 0.9) AS p90 FROM t"


def test_a_smooth_median_says_smooth_sensitivity_and_no_interval(db: Database) -> None:
    """USING SMOOTH (issue 31): the mechanism the answer uses, its δ, and no ± (none is released)."""
    plan = engine.explain(db, SMOOTH)
    mid, p90 = plan["columns"]
    assert mid["mechanism"] == p90["mechanism"] == "smooth_sensitivity"
    assert mid["ci95_half_width"] is None and "rank_error95" not in mid and "no interval" in mid["note"]
    assert mid["epsilon_per_group"] + p90["epsilon_per_group"] == pytest.approx(2.0)
    assert mid["delta_per_group"] + p90["delta_per_group"] == pytest.approx(1e-6)
    assert [o["mechanism"] for o in plan["order_statistics"]] == ["smooth_sensitivity"] * 2
    db.grant("sam", epsilon=10, delta=1e-3)
    res = engine.run(db, "sam", SMOOTH)
    assert [(c["mechanism"], c["ci95"]) for c in res.accuracy] == [("smooth_sensitivity", None)] * 2
    assert mid["beta"] == res.accuracy[0]["beta"]
    db.close()
    shown = CliRunner().invoke(
        app, ["explain", "--db", str(db.path), SMOOTH, "--verbose"], env={"COLUMNS": "200"}
    )
    assert shown.exit_code == 0, shown.output
    assert "none (smooth sensitivity)" in shown.output and "rank ±" not in shown.output


def test_explain_reads_no_data(tmp_path: Path) -> None:
    """The same plan on two databases of different data and the same metadata."""
    plans = []
    for i, n in enumerate((300, 5000)):
        database = _db(tmp_path / f"d{i}", _even(n))
        try:
            plans.append(engine.explain(database, QUERY))
        finally:
            database.close()
    assert plans[0] == plans[1]


def test_the_cli_hides_the_engine_sql_unless_verbose(db: Database) -> None:
    runner = CliRunner()
    base = ["explain", "--db", str(db.path), QUERY]
    db.close()
    short = runner.invoke(app, base, env={"COLUMNS": "200"})
    assert short.exit_code == 0, short.output
    assert "per column" in short.output and "\nengine SQL\n" not in short.output
    assert "SELECT" not in short.output.replace(QUERY, "")
    assert "± " in short.output and "at n = 1,000" in short.output and "rank ± " in short.output
    verbose = runner.invoke(app, [*base, "--verbose"], env={"COLUMNS": "200"})
    assert verbose.exit_code == 0 and "\nengine SQL\n" in verbose.output and "SELECT" in verbose.output
    assert "noisy statistics" in verbose.output
    as_json = runner.invoke(app, [*base, "--format", "json"])
    payload = json.loads(as_json.stdout)
    assert payload["engine_sql"].startswith("SELECT") and len(payload["columns"]) == 7


def test_a_record_release_lists_its_columns(db: Database) -> None:
    plan = engine.explain(db, "DP-SELECT 1 age, city FROM t")
    assert [c["column"] for c in plan["columns"]] == ["age", "city"]
    assert all(c["role"] == "record" and c["epsilon"] > 0 for c in plan["columns"])


def test_the_server_explain_has_the_columns(tmp_path: Path) -> None:
    tokens = make_server_db(tmp_path / "srv", people=500)
    server = Server(tmp_path / "srv").start()
    try:
        reply = httpx.post(
            f"{server.url}/v1/explain",
            json={"sql": "DP-SELECT 1 AVG(age), MEDIAN(age) FROM people"},
            headers={"Authorization": f"Bearer {tokens['alice']}"},
        )
    finally:
        server.stop()
    assert reply.status_code == 200, reply.text
    columns = reply.json()["columns"]
    assert columns[0]["mechanism"].startswith("laplace") and columns[0]["ci95_half_width_at"]["1000"] > 0
    assert columns[1]["mechanism"] == "exponential" and columns[1]["rank_error95"] > 0
    assert "engine_sql" in reply.json()
