"""Record release, ``DP-SELECT ε col1, col2 FROM t [WHERE …]``: a noisy number of records (ε/10, unless the
relation fixes it), every selected attribute randomised with ε_r/(k·m), numbers inside their bounds; WHERE
on the randomised records (post-processing, audited on neighbouring tables); unbiased frequencies back
through ``Result.estimate_frequencies`` and unbiased means through ``debias_values``; refusals that spend
nothing. Neighbouring-table audits of the number of records are in tests/adversarial/test_record_release.py.

Statistical checks use fixed seeds; each test's false-failure rate is at most 1e-6 (z = 5.3 per value with
a Bonferroni split over at most 10 values; the count noise beyond ``COUNT_1E6`` records has probability
below 1e-7; the audit at confidence 1 − 1e-6).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.result import Result
from privdb.sql import engine
from privdb.sql.release.plan import ReleasePlan
from privdb.sql.release.records import RECORDS_ENTRY, debias_values, randomize_records

Z = 5.3  # two-sided 1.2e-7 per value
# |T − N| for ε = 1 (ε_c = 0.1, m = 1): P(|Z| > k) = 2q^(k+1)/(1 + q), q = e^-0.1, below 1e-7 from k = 160
COUNT_1E6 = 160

META: dict[str, Any] = {
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "name": {"type": "text", "identifier": True},
        "sex": {"type": "category", "values": ["F", "M"]},
        "education": {"type": "category", "values": ["none", "school", "college", "phd"]},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 1000},
        "note": {"type": "text"},
    }
}


def _people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "pid": np.arange(n),
            "name": [f"p{i}" for i in range(n)],
            "sex": rng.choice(["F", "M"], n, p=[0.3, 0.7]),
            "education": rng.choice(["none", "school", "college", "phd"], n, p=[0.1, 0.5, 0.3, 0.1]),
            "age": rng.integers(0, 120, n),  # some above the bound: clamped to 100
            "income": rng.uniform(0, 1200, n),
            "note": ["x"] * n,
        }
    )


def _db(path: Path, frame: pd.DataFrame, meta: dict[str, Any] = META) -> Database:
    db = Database(path)
    db.backend.load_frame("people", frame)
    db.set_metadata("people", meta)
    db.grant("alice", epsilon=100)
    return db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = _db(tmp_path / "db", _people(2000, seed=1))
    database.noise_source = seeded(11)
    yield database
    database.close()


def _release(db: Database, query: str) -> tuple[ReleasePlan, pd.DataFrame]:
    plan, sql = engine.prepare(db, query)
    assert isinstance(plan, ReleasePlan)
    return plan, db.backend.fetch(sql)


def test_release_shape_cost_and_guarantee(db: Database) -> None:
    res = engine.run(db, "alice", "DP-SELECT 1 sex, age AS years FROM people")
    assert res.columns == ["sex", "years"] and abs(len(res.rows) - 2000) <= COUNT_1E6
    assert len(res.rows) != 2000  # add_remove: the number of records is noisy (P(Z = 0) = 0.05)
    assert res.epsilon_spent == 1 and float(db.budget("alice").epsilon_spent) == 1
    assert {r[0] for r in res.rows} <= {"F", "M"}
    assert all(isinstance(r[1], int) and 0 <= r[1] <= 100 for r in res.rows)  # inside the bounds
    assert [a["mechanism"] for a in res.accuracy] == ["randomized_response", "clamped_geometric", "geometric"]
    assert [a["epsilon"] for a in res.accuracy] == pytest.approx([0.45, 0.45, 0.1])
    assert sum(a["epsilon"] for a in res.accuracy[:2]) + res.accuracy[2]["epsilon"] <= 1
    records = res.accuracy[-1]
    assert records["column"] == RECORDS_ENTRY and records["records"] == len(res.rows)
    assert records["sensitivity"] == 1 and records["half_width95"] > 0
    assert "neighbouring relation" in res.to_dict()["guarantee"]
    again = engine.run(db, "alice", "DP-SELECT 1 sex, age AS years FROM people")
    assert again.cached and again.rows == res.rows and float(db.budget("alice").epsilon_spent) == 1


def test_substitute_rows_release_every_record_and_spend_nothing_on_their_number(tmp_path: Path) -> None:
    """Without a privacy unit, substitute neighbours have the same number of rows: it is released as is."""
    db = _db(tmp_path / "s", _people(500, seed=5), {**META, "neighbouring": "substitute"})
    try:
        plan, _ = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert plan.count_public and plan.count_epsilon == 0 and plan.record_epsilon == 1
        assert "one record per unit" in plan.neighbouring and "substitute relation" in plan.guarantee
        res = engine.run(db, "alice", "DP-SELECT 1 sex, age FROM people")
        assert len(res.rows) == 500 and [a["epsilon"] for a in res.accuracy] == [0.5, 0.5, 0.0]
        assert res.accuracy[-1]["mechanism"] == "none"
        unit = {**META, "neighbouring": "substitute", "privacy_unit": "pid", "max_contributions": 3}
        db.set_metadata("people", unit)  # a unit's 1 to 3 records: the number changes, so it is noisy
        plan, _ = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert not plan.count_public and plan.count_epsilon == pytest.approx(0.1)
        assert plan.contributions == 3 and plan.columns[0].epsilon == pytest.approx(0.9 / 6)
    finally:
        db.close()


def test_star_releases_every_releasable_column_and_never_identifiers(db: Database) -> None:
    plan, _ = _release(db, "DP-SELECT 1 * FROM people")
    assert [c.output for c in plan.columns] == ["sex", "education", "age", "income"]
    assert [c.mechanism for c in plan.columns][2:] == ["clamped_geometric", "clamped_laplace"]
    assert all(c.epsilon == pytest.approx(0.9 / 4) for c in plan.columns)
    assert plan.count_epsilon + 4 * plan.columns[0].epsilon <= plan.epsilon


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("DP-SELECT 1 name FROM people", "identifies people"),
        ("DP-SELECT 1 pid, sex FROM people", "identifies people"),
        ("DP-SELECT 1 note FROM people", "no public domain or bounds"),
        ("DP-SELECT 1 sex FROM people WHERE age > 30", "not released"),
        ("DP-SELECT 1 sex, sex FROM people", "selected twice"),
        ("DP-SELECT 1 age + 1 FROM people", "plain columns"),
        ("DP-SELECT 1 DELTA 1e-6 sex FROM people", "needs no DELTA"),
        ("DP-SELECT 1 sex FROM people ORDER BY random()", "released column"),
        ("DP-SELECT 1 * EXCLUDE (age) FROM people", "plain \\*"),
        ("DP-SELECT 1 * REPLACE (name AS sex) FROM people", "plain \\*"),
        ("DP-SELECT 1 sex FROM people WHERE read_csv('/etc/passwd') IS NULL", "not allowed|not in privdb"),
        ("DP-SELECT 1 nosuch FROM people", "no column"),
        ("DP-SELECT 1e-15 sex FROM people", "too small"),
        ("DP-SELECT 1e-9 income FROM people", "too small"),
    ],
)
def test_refusals_spend_nothing(db: Database, query: str, needle: str) -> None:
    with pytest.raises(PrivdbError, match=needle):
        engine.run(db, "alice", query)
    assert db.budget("alice").epsilon_spent == 0


def test_where_order_and_limit_apply_to_the_randomised_records(db: Database) -> None:
    res = engine.run(
        db, "alice", "DP-SELECT 2 sex, age FROM people WHERE sex = 'F' ORDER BY age DESC LIMIT 50"
    )
    assert len(res.rows) == 50 and all(r[0] == "F" for r in res.rows)
    ages = [r[1] for r in res.rows]
    assert ages == sorted(ages, reverse=True)


def test_without_where_the_records_are_those_the_in_memory_engine_returns(db: Database) -> None:
    """No WHERE / ORDER BY / LIMIT: the records skip the in-memory engine, and are the same as through it."""
    plan, fetched = _release(db, "DP-SELECT 1 sex, age AS years, income FROM people")
    filtered, _ = _release(db, "DP-SELECT 1 sex, age AS years, income FROM people WHERE age >= 0")
    direct = randomize_records(plan, fetched, seeded(5))
    through = randomize_records(filtered, fetched, seeded(5))
    assert direct.columns == through.columns == ["sex", "years", "income"]
    assert sorted(direct.rows) == sorted(through.rows) and direct.accuracy == through.accuracy
    assert all(type(v) is t for r in direct.rows for v, t in zip(r, (str, int, float), strict=True))


def test_frequencies_come_back_unbiased_with_the_stated_error(tmp_path: Path) -> None:
    frame = _people(200_000, seed=2)
    db = _db(tmp_path / "big", frame)
    db.noise_source = seeded(12)
    try:
        res = engine.run(db, "alice", "DP-SELECT 2 sex, education FROM people")
        restored = Result.from_dict(res.to_dict())  # what a client gets over JSON
        for column in ("sex", "education"):
            est = restored.estimate_frequencies(column).set_index("value")
            truth = frame[column].value_counts()
            for value, row in est.iterrows():
                # counts of the released records: a uniform sample of the N records, or all of them and
                # dummies; they differ from the true counts by at most |T − N| besides the noise
                allowance = Z * row["std_error"] + COUNT_1E6
                assert abs(row["count"] - truth[value]) <= allowance, (column, value)
            assert est["std_error"].iloc[0] > 0
        with pytest.raises(PrivdbError, match="not released by randomised response"):
            restored.estimate_frequencies("nosuch")
    finally:
        db.close()


def test_released_numbers_stay_in_bounds_and_debias_to_the_clamped_mean(tmp_path: Path) -> None:
    """Released numbers lie inside [L, U], so their mean is pulled toward the middle; ``debias_values``
    (a released bound read as the bound plus the noise's mean overshoot) makes each record unbiased."""
    frame = _people(100_000, seed=3)
    frame["age"] = np.random.default_rng(3).integers(0, 21, len(frame))  # young: mean 10, far from 50
    db = _db(tmp_path / "num", frame)
    db.noise_source = seeded(13)
    try:
        res = engine.run(db, "alice", "DP-SELECT 4 age, income FROM people")
        out = res.to_pandas()
        n = len(out)
        for column, hi in (("age", 100), ("income", 1000)):
            info = next(a for a in res.accuracy if a["column"] == column)
            assert out[column].between(0, hi).all() and info["bounds"] == [0, hi]
            clamped = frame[column].clip(0, hi)
            debiased = debias_values(out[column], info)
            assert info["debiased_lower"] < 0 < hi < info["debiased_upper"]
            grid, q = info["grid"], np.exp(-info["rate"])
            sd = np.sqrt(clamped.var() + 2 * q / (1 - q) ** 2 * grid**2)  # at most the unclamped noise
            # |T − N| dummies (uniform inputs, mean hi/2) or left-out records move the mean by at most this
            dummies = COUNT_1E6 * hi / n
            assert abs(debiased.mean() - clamped.mean()) <= Z * sd / np.sqrt(n) + dummies + grid, column
        age = next(a for a in res.accuracy if a["column"] == "age")
        assert out["age"].mean() - frame["age"].mean() > 10 * Z * age["scale"] / np.sqrt(n)  # biased up
        with pytest.raises(PrivdbError, match="not released with clamped noise"):
            debias_values([1.0], res.accuracy[-1])
    finally:
        db.close()


def test_units_release_at_most_m_records_and_pay_per_record(tmp_path: Path) -> None:
    frame = _people(300, seed=4)
    frame = pd.concat([frame, frame.iloc[:50].assign(name="again")], ignore_index=True)  # 50 units twice
    meta = {**META, "privacy_unit": "pid", "max_contributions": 1}
    db = _db(tmp_path / "u", frame, meta)
    try:
        plan, fetched = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert len(fetched) == 300 and plan.columns[0].epsilon == pytest.approx(0.45)
        meta2 = {**meta, "max_contributions": 2}
        db.set_metadata("people", meta2)
        plan, fetched = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert len(fetched) == 350 and plan.columns[0].epsilon == pytest.approx(0.225)  # ε_r/(k·m)
        assert plan.contributions == 2 and plan.count_epsilon == pytest.approx(0.1)  # sensitivity m
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("query", "epsilon"),
    [
        ("DP-SELECT {eps} sex FROM people WHERE sex = 'F'", 1.0),
        ("DP-SELECT {eps} sex, age FROM people WHERE sex = 'F' AND age > 50", 1.0),
        (
            "DP-SELECT {eps} education, income FROM people "
            "WHERE education IN ('phd', 'none') OR income < 200",
            2.0,
        ),
    ],
)
def test_where_on_released_records_is_post_processing(tmp_path: Path, query: str, epsilon: float) -> None:
    """Substitute neighbours: one record's values changed from one end of every domain to the other. The
    event "a record survives the WHERE" must not separate them by more than e^ε. Row-level substitute
    tables release every record (their number is public), so ``n`` copies of the record are ``n``
    independent releases."""
    low = {"sex": "F", "education": "phd", "age": 100, "income": 0.0}
    high = {"sex": "M", "education": "school", "age": 0, "income": 1000.0}
    text = query.format(eps=epsilon)
    dbs = []
    try:
        draws = []
        for i, record in enumerate((low, high)):
            row = pd.DataFrame([{"pid": 0, "name": "x", "note": "x", **record}])
            db = _db(tmp_path / f"n{i}", row, {**META, "neighbouring": "substitute"})
            dbs.append(db)
            plan, fetched = _release(db, text)
            source = seeded(40 + i)

            def draw(
                n: int, plan: ReleasePlan = plan, fetched: pd.DataFrame = fetched, source: Any = source
            ) -> Any:
                many = fetched.iloc[np.zeros(n, dtype=np.intp)]  # n independent releases of the record
                kept = len(randomize_records(plan, many, source).rows)
                return np.repeat([1.0, 0.0], [kept, n - kept])

            draws.append(draw)
        result = audit(text, draws[0], draws[1], epsilon=epsilon, samples=200_000, confidence=1 - ALPHA)
        assert result.passed, result
    finally:
        for db in dbs:
            db.close()
