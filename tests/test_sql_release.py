"""Record release, ``DP-SELECT ε col1, col2 FROM t [WHERE …]``: every selected attribute randomised with
ε/k; WHERE on the randomised records (post-processing, audited on neighbouring tables); unbiased
frequencies back through ``Result.estimate_frequencies``; refusals that spend nothing.

Statistical checks use fixed seeds; each test's false-failure rate is at most 1e-6 (z = 5.3 per value with
a Bonferroni split over at most 10 values; the audit at confidence 1 − 1e-6).
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
from privdb.sql.release import ReleasePlan, randomize_records

Z = 5.3  # two-sided 1.2e-7 per value

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
    assert res.columns == ["sex", "years"] and len(res.rows) == 2000
    assert res.epsilon_spent == 1 and float(db.budget("alice").epsilon_spent) == 1
    assert {r[0] for r in res.rows} <= {"F", "M"}
    assert all(isinstance(r[1], int) for r in res.rows)  # integer bounds: the geometric mechanism
    assert [a["mechanism"] for a in res.accuracy] == ["randomized_response", "geometric"]
    assert [a["epsilon"] for a in res.accuracy] == [0.5, 0.5]
    assert "substitute" in res.to_dict()["guarantee"]
    again = engine.run(db, "alice", "DP-SELECT 1 sex, age AS years FROM people")
    assert again.cached and again.rows == res.rows and float(db.budget("alice").epsilon_spent) == 1


def test_star_releases_every_releasable_column_and_never_identifiers(db: Database) -> None:
    plan, _ = _release(db, "DP-SELECT 1 * FROM people")
    assert [c.output for c in plan.columns] == ["sex", "education", "age", "income"]
    assert all(c.epsilon == pytest.approx(0.25) for c in plan.columns)


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
        ("DP-SELECT 1 sex FROM people WHERE read_csv('/etc/passwd') IS NULL", "not allowed"),
        ("DP-SELECT 1 nosuch FROM people", "no column"),
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
                assert abs(row["count"] - truth[value]) <= Z * row["std_error"], (column, value)
            assert est["std_error"].iloc[0] > 0
        with pytest.raises(PrivdbError, match="not released by randomised response"):
            restored.estimate_frequencies("nosuch")
    finally:
        db.close()


def test_released_numbers_are_unbiased_for_the_clamped_values(tmp_path: Path) -> None:
    frame = _people(100_000, seed=3)
    db = _db(tmp_path / "num", frame)
    db.noise_source = seeded(13)
    try:
        res = engine.run(db, "alice", "DP-SELECT 4 age, income FROM people")
        out = res.to_pandas()
        for column, hi in (("age", 100), ("income", 1000)):
            clamped = frame[column].clip(0, hi)
            scale = next(a["scale"] for a in res.accuracy if a["column"] == column)
            sd = np.sqrt(clamped.var() + 2 * scale**2)  # Laplace variance 2b²
            assert abs(out[column].mean() - clamped.mean()) <= Z * sd / np.sqrt(len(out)), column
    finally:
        db.close()


def test_units_release_at_most_m_records_and_pay_per_record(tmp_path: Path) -> None:
    frame = _people(300, seed=4)
    frame = pd.concat([frame, frame.iloc[:50].assign(name="again")], ignore_index=True)  # 50 units twice
    meta = {**META, "privacy_unit": "pid", "max_contributions": 1}
    db = _db(tmp_path / "u", frame, meta)
    try:
        plan, fetched = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert len(fetched) == 300 and plan.columns[0].epsilon == pytest.approx(0.5)
        meta2 = {**meta, "max_contributions": 2}
        db.set_metadata("people", meta2)
        plan, fetched = _release(db, "DP-SELECT 1 sex, age FROM people")
        assert len(fetched) == 350 and plan.columns[0].epsilon == pytest.approx(0.25)  # ε/(k·m)
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
    event "a record survives the WHERE" must not separate them by more than e^ε."""
    low = {"sex": "F", "education": "phd", "age": 100, "income": 0.0}
    high = {"sex": "M", "education": "school", "age": 0, "income": 1000.0}
    text = query.format(eps=epsilon)
    dbs = []
    try:
        draws = []
        for i, record in enumerate((low, high)):
            row = pd.DataFrame([{"pid": 0, "name": "x", "note": "x", **record}])
            db = _db(tmp_path / f"n{i}", row)
            dbs.append(db)
            plan, fetched = _release(db, text)
            source = seeded(40 + i)

            def draw(
                n: int, plan: ReleasePlan = plan, fetched: pd.DataFrame = fetched, source: Any = source
            ) -> Any:
                many = pd.concat([fetched] * n, ignore_index=True)  # n independent releases of the record
                kept = len(randomize_records(plan, many, source).rows)
                return np.repeat([1.0, 0.0], [kept, n - kept])

            draws.append(draw)
        result = audit(text, draws[0], draws[1], epsilon=epsilon, samples=200_000, confidence=1 - ALPHA)
        assert result.passed, result
    finally:
        for db in dbs:
            db.close()
