"""DP-SELECT end to end on DuckDB: answers, budgets, stored answers, keys, bounding, the notes' queries."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import privdb
from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from sqlfixtures import make_db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = make_db(tmp_path / "db", people=20_000)
    database.noise_source = seeded(31)
    yield database
    database.close()


def truth(db: Database, sql: str) -> float:
    return float(db.backend.raw(sql).iloc[0, 0])


# ---------------------------------------------------------------- the notes' worked SQL on tax_office


@pytest.mark.parametrize(
    ("dp", "raw"),
    [
        (
            "DP-SELECT 50 COUNT(*) FROM tax_office WHERE age > 50",
            "SELECT COUNT(*) FROM tax_office WHERE age > 50",
        ),
        (
            "DP-SELECT 50 COUNT(salary) FROM tax_office WHERE age < 70",
            "SELECT COUNT(salary) FROM tax_office WHERE age < 70",
        ),
        (
            "DP-SELECT 50 SUM(salary) FROM tax_office WHERE postcode = 1001",
            "SELECT SUM(salary) FROM tax_office WHERE postcode = 1001",
        ),
    ],
)
def test_notes_queries_on_tax_office(db: Database, dp: str, raw: str) -> None:
    """The notes' SELECT COUNT/SUM … WHERE, as DP-SELECT: close to the truth at a large ε."""
    res = engine.run(db, "alice", dp)
    value = res.rows[0][0]
    lo, hi = res.accuracy[0]["ci95"]
    assert lo <= value <= hi
    assert abs(value - truth(db, raw)) <= 3 * (hi - lo)


def test_avg_on_tax_office_is_clipped_to_bounds(db: Database) -> None:
    res = engine.run(db, "alice", "DP-SELECT 1 AVG(salary) FROM tax_office WHERE age > 30")
    assert 0 <= res.rows[0][0] <= 500_000
    lo, hi = res.accuracy[0]["ci95"]
    assert 0 <= lo <= hi <= 500_000


# ---------------------------------------------------------------- budget and the result JSON


def test_result_shape_and_budget_goes_down_by_exactly_epsilon(db: Database) -> None:
    res = engine.run(db, "alice", "DP-SELECT 0.3 state, COUNT(*) AS n FROM people GROUP BY state")
    out = res.to_dict()
    assert out["columns"] == ["state", "n"]
    assert len(out["rows"]) == 50
    assert out["epsilon_spent"] == 0.3 and out["delta_spent"] == 0.0
    assert out["budget"]["epsilon_remaining"] == pytest.approx(99.7)
    acc = out["accuracy"][0]
    assert acc["column"] == "n" and acc["mechanism"] in ("laplace", "geometric")
    assert acc["scale"] > 0 and len(acc["ci95"]) == 2
    json.dumps(out)  # serialisable
    assert db.budget("alice").epsilon_spent == pytest.approx(0.3)


def test_repeating_a_query_returns_the_stored_answer_for_free(db: Database) -> None:
    first = engine.run(db, "alice", "DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 30")
    again = engine.run(db, "alice", "dp-select 0.5  count(*) from people where age>30")
    assert again.rows == first.rows and again.cached and again.epsilon_spent == 0
    assert db.budget("alice").epsilon_spent == pytest.approx(0.5)
    other_eps = engine.run(db, "alice", "DP-SELECT 0.25 COUNT(*) FROM people WHERE age > 30")
    assert not other_eps.cached


def test_budget_exhaustion_refuses_and_spends_nothing(db: Database) -> None:
    db.grant("bob", epsilon=1.0)
    engine.run(db, "bob", "DP-SELECT 0.6 COUNT(*) FROM people")
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "bob", "DP-SELECT 0.6 SUM(income) FROM people")
    assert err.value.code == "budget_exhausted" and "0.4" in err.value.message
    assert float(db.budget("bob").epsilon_remaining) == pytest.approx(0.4)


def test_a_cast_that_fails_on_some_rows_does_not_fail_the_query(db: Database) -> None:
    """Whether a query fails must not depend on the data (it would tell whether such a row exists):
    the failing rows drop out instead (TRY in the engine SQL)."""
    res = engine.run(db, "alice", "DP-SELECT 0.5 COUNT(*) FROM people WHERE CAST(state AS INTEGER) > 3")
    assert abs(res.rows[0][0]) < 40  # no state is a number: about zero rows, plus noise


def test_engine_failure_after_reading_is_charged_without_detail(db: Database) -> None:
    """A query stopped by the time limit had read data: its cost stands, and the message has no data."""
    db.backend.raw("CREATE TABLE big AS SELECT i AS x, i % 1000 AS g FROM range(6000000) t(i)")
    db.set_metadata("big", {"columns": {"x": {"type": "int", "lower": 0, "upper": 10}, "g": {"type": "int"}}})
    db.query_timeout = 1e-6  # any query takes longer: the limit is enforced however the timing falls
    before = float(db.budget("alice").epsilon_remaining)
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "alice", "DP-SELECT 0.5 DELTA 1e-6 x % 7 + g AS k, SUM(x) FROM big GROUP BY x % 7 + g")
    assert err.value.code == "query_failed" and "limit" in err.value.message
    assert float(db.budget("alice").epsilon_remaining) == pytest.approx(before - 0.5)
    last = db.log("alice")[-1]  # charged, no answer: the log says it failed, not that it was answered
    assert (last["outcome"], last["code"], last["epsilon"]) == ("failed", "query_failed", 0.5)
    assert db.log("alice", outcome="failed") == [last]


def test_explain_spends_nothing_and_reports_the_plan(db: Database) -> None:
    plan = engine.explain(db, "DP-SELECT 1 sex, COUNT(*), AVG(income) FROM people GROUP BY sex")
    assert plan["epsilon"] == 1 and db.budget("alice").epsilon_spent == 0
    kinds = [s["kind"] for s in plan["statistics"]]
    assert kinds == ["rows", "sum", "nonnull"]
    eps = [s["epsilon"] for s in plan["statistics"]]
    # people has a privacy unit: ε/20 pays for the truncation estimate, COUNT and AVG share the rest
    assert eps == pytest.approx([0.475, 0.2375, 0.2375])  # AVG splits its half
    assert plan["truncation"]["epsilon"] == pytest.approx(0.05)
    assert sum(eps) + plan["truncation"]["epsilon"] == pytest.approx(1.0)
    sums = next(s for s in plan["statistics"] if s["kind"] == "sum")
    assert sums["sensitivity"] == 500_000  # one person: income in [0, 500000]
    assert "THEN 500000.0" in plan["engine_sql"]  # income clamped to its bound


def test_variance_with_wide_bounds_answers_with_an_honest_interval(db: Database) -> None:
    res = engine.run(db, "alice", "DP-SELECT 0.2 VARIANCE(income), STDDEV(income) FROM people WHERE age > 90")
    variance, stddev = res.rows[0]
    v_lo, v_hi = res.accuracy[0]["ci95"]
    s_lo, s_hi = res.accuracy[1]["ci95"]
    # the sample variance of n values reaches ((U − L)/2)²·n/(n − 1): at most twice the cap (issue 26)
    cap = 2 * 250_000**2
    assert 0 <= v_lo <= v_hi <= cap and 0 <= variance <= cap
    assert 0 <= s_lo <= s_hi <= cap**0.5 and 0 <= stddev <= cap**0.5
    assert res.accuracy[0]["method"].startswith("noisy sum of squares")
    true_var = truth(db, "SELECT VAR_SAMP(income) FROM people WHERE age > 90")
    assert v_lo <= true_var <= v_hi


# ---------------------------------------------------------------- group keys


def test_public_domain_keys_are_all_released_even_empty_ones(db: Database) -> None:
    res = engine.run(
        db, "alice", "DP-SELECT 1 state, COUNT(*) FROM people WHERE state IN ('CA', 'NY') GROUP BY state"
    )
    assert [r[0] for r in res.rows] == list(db.metadata("people").column("state").values or [])
    counts = {r[0]: r[1] for r in res.rows}
    assert abs(counts["TX"]) < 20  # empty group: pure noise, released anyway


def test_multi_column_group_by_releases_the_cartesian_product(db: Database) -> None:
    res = engine.run(db, "alice", "DP-SELECT 1 sex, education, COUNT(*) FROM people GROUP BY sex, education")
    assert len(res.rows) == 2 * 6
    assert {(r[0], r[1]) for r in res.rows} == {
        (s, e)
        for s in ("F", "M")
        for e in ("none", "primary", "secondary", "bachelor", "master", "doctorate")
    }


def test_expression_keys_get_a_domain_derived_from_public_bounds(db: Database) -> None:
    res = engine.run(
        db,
        "alice",
        "DP-SELECT 1 FLOOR(age / 10) AS decade, COUNT(*) FROM people GROUP BY decade ORDER BY decade",
    )
    assert [r[0] for r in res.rows] == [float(d) for d in range(11)]


def test_private_keys_need_delta_and_pass_a_threshold(db: Database) -> None:
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "alice", "DP-SELECT 1 profession, COUNT(*) FROM tax_office GROUP BY profession")
    assert err.value.code == "invalid_parameter" and "DELTA" in err.value.message
    assert db.budget("alice").epsilon_spent == 0
    # three people, one per profession: counts of 1 never pass a threshold set for δ = 1e-6
    res = engine.run(
        db, "alice", "DP-SELECT 1 DELTA 1e-6 profession, COUNT(*) FROM tax_office GROUP BY profession"
    )
    assert res.rows == [] and res.delta_spent == 1e-6
    # frequent keys pass: state without its declared domain
    meta = db.metadata("people").to_dict()
    del meta["columns"]["state"]["values"]
    db.set_metadata("people", meta)
    res = engine.run(db, "alice", "DP-SELECT 1 DELTA 1e-6 state, COUNT(*) FROM people GROUP BY state")
    assert 30 <= len(res.rows) <= 50 and all(n > 20 for _, n in res.rows)
    # a bounded int column is a public domain: every age 0..100 is released, no threshold
    res = engine.run(
        db, "alice", "DP-SELECT 1 age, COUNT(*) FROM people WHERE age BETWEEN 30 AND 32 GROUP BY age"
    )
    assert [r[0] for r in res.rows] == list(range(101)) and res.delta_spent == 0


def test_order_by_and_limit_apply_to_the_noisy_rows(db: Database) -> None:
    res = engine.run(
        db, "alice", "DP-SELECT 5 state, COUNT(*) AS n FROM people GROUP BY state ORDER BY n DESC LIMIT 3"
    )
    assert len(res.rows) == 3
    ns = [r[1] for r in res.rows]
    assert ns == sorted(ns, reverse=True)


# ---------------------------------------------------------------- bounding


def test_privacy_unit_bounds_each_persons_contribution(tmp_path: Path) -> None:
    db = make_db(tmp_path / "u", people=5000, repeat_share=0.2)
    db.noise_source = seeded(3)
    try:
        rows = truth(db, "SELECT COUNT(*) FROM people")
        units = truth(db, "SELECT COUNT(DISTINCT pid) FROM people")
        assert rows > units
        res = engine.run(db, "alice", "DP-SELECT 50 COUNT(*) FROM people")
        assert abs(res.rows[0][0] - units) < 1  # each person counts once (max_contributions: 1)
        capped = engine.run(db, "alice", "DP-SELECT 50 SUM(income) FROM people")
        plan = engine.explain(db, "DP-SELECT 1 SUM(income) FROM people")
        assert plan["statistics"][0]["sensitivity"] == 500_000
        assert capped.rows[0][0] <= truth(db, "SELECT SUM(LEAST(income, 500000)) FROM people") + 1
    finally:
        db.close()


def test_substitute_neighbours_double_grouped_sensitivities(tmp_path: Path) -> None:
    db = make_db(tmp_path / "s", people=1000)
    try:
        meta = db.metadata("people").to_dict()
        meta["neighbouring"] = "substitute"
        db.set_metadata("people", meta)
        plan = engine.explain(db, "DP-SELECT 1 COUNT(*), SUM(age) FROM people")
        assert [s["sensitivity"] for s in plan["statistics"]] == [1, 100]  # m, m·max(U − L, B)
        plan = engine.explain(db, "DP-SELECT 1 sex, COUNT(*), SUM(age) FROM people GROUP BY sex")
        assert [s["sensitivity"] for s in plan["statistics"]] == [2, 200]  # 2m, 2m·B
    finally:
        db.close()


# ---------------------------------------------------------------- statistics of the answers


@pytest.mark.slow
def test_noisy_answers_are_unbiased_with_declared_spread_and_95_coverage(db: Database) -> None:
    """2,000 answers to the same plan (fresh noise each): unbiased, spread as declared, 95% ± 2% coverage."""
    plan, sql = engine.prepare(
        db, "DP-SELECT 0.5 COUNT(*), SUM(income), AVG(income) FROM people WHERE age > 30"
    )
    frame = db.backend.fetch(sql)
    true_count = frame["s0"].iloc[0]
    true_sum = frame["s1"].iloc[0]
    source = seeded(77)
    reps = 2000
    counts, sums, covered = np.empty(reps), np.empty(reps), np.zeros(3)
    true_avg = frame["s2"].iloc[0] / frame["s3"].iloc[0]  # AVG has its own sum (s2) and count (s3)
    for i in range(reps):
        answer = add_noise(plan, frame, source)
        counts[i], sums[i] = answer.rows[0][0], answer.rows[0][1]
        for j, target in enumerate((true_count, true_sum, true_avg)):
            lo, hi = answer.accuracy[j]["ci95"]
            covered[j] += lo <= target <= hi
    count_mech = plan.statistics[0].mechanism()
    sum_mech = plan.statistics[1].mechanism()
    # unbiased within 5 standard errors (false failure ≈ 6e-7)
    assert abs(counts.mean() - true_count) < 5 * math.sqrt(count_mech.variance() / reps)
    assert abs(sums.mean() - true_sum) < 5 * math.sqrt(sum_mech.variance() / reps)
    assert counts.var() == pytest.approx(count_mech.variance(), rel=0.15)
    assert sums.var() == pytest.approx(sum_mech.variance(), rel=0.15)
    assert 0.93 <= covered[0] / reps <= 0.97 and 0.93 <= covered[1] / reps <= 0.97
    assert covered[2] / reps >= 0.93  # the ratio's interval is conservative


# ---------------------------------------------------------------- the Python API


def test_python_api(tmp_path: Path) -> None:
    make_db(tmp_path / "api", people=1000).close()
    with privdb.connect(tmp_path / "api", analyst="alice") as conn:
        res = conn.sql("DP-SELECT 1 sex, COUNT(*) AS n FROM people GROUP BY sex")
        frame = res.to_pandas()
        assert list(frame.columns) == ["sex", "n", "n_ci95_low", "n_ci95_high"] and len(frame) == 2
        assert conn.budget()["epsilon_remaining"] == pytest.approx(99)
        assert {t["name"] for t in conn.tables()} == {"people", "tax_office"}
        with pytest.raises(PrivdbError) as err:
            conn.owner_sql("SELECT * FROM people")
        assert err.value.code == "raw_access_denied"
        with pytest.raises(PrivdbError) as err:
            conn.sql("SELECT * FROM people")
        assert err.value.code == "raw_access_denied"
        assert "n" in res._repr_html_()
    with privdb.connect(tmp_path / "api") as owner:
        assert len(owner.owner_sql("SELECT * FROM people LIMIT 3")) == 3
        token = owner.grant("carol", epsilon=2)
        assert len(token) > 20
        assert owner.budget_of("carol")["epsilon_total"] == 2
