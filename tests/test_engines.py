"""Tables that stay in another engine (issue 8): the course's SQLite workflow end to end, and the same
clamped, bounded aggregates from SQLite as from DuckDB on the same data (the noise is added afterwards by
privdb, so comparing the engine's statistics is comparing with the noise turned off)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from pgfixture import postgres_cluster
from privdb.database import Database
from privdb.errors import EngineUnavailable, PrivdbError
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 2,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 1000},
        "city": {"type": "category", "values": ["Bern", "Basel", "Chur"]},
    },
}


def _people(n: int, seed: int) -> pd.DataFrame:
    """Units of 1–4 rows, each unit in one city (so which groups a unit keeps is not random)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, n)
    pid = np.repeat(np.arange(n), sizes)
    return pd.DataFrame(
        {
            "pid": pid,
            "age": rng.integers(-5, 110, len(pid)),  # some outside the bounds: clamped
            "income": rng.uniform(-100, 1200, len(pid)).round(2),
            "city": np.array(["Bern", "Basel", "Chur"])[rng.integers(0, 3, n)][pid],
        }
    )


def _sqlite_file(path: Path, frame: pd.DataFrame) -> Path:
    """As the course builds it: plain sqlite3, CREATE TABLE and parameterised INSERTs."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE people (pid INTEGER, age INTEGER, income REAL, city TEXT)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", frame.itertuples(index=False, name=None))
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_cluster() as url:
        yield url


def _postgres_table(url: str, frame: pd.DataFrame, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {name}")
        con.execute(f"CREATE TABLE {name} (pid BIGINT, age INTEGER, income DOUBLE PRECISION, city TEXT)")
        with con.cursor().copy(f"COPY {name} (pid, age, income, city) FROM STDIN") as copy:
            for row in frame.itertuples(index=False, name=None):
                copy.write_row(row)


@pytest.fixture
def both(tmp_path: Path, postgres: str) -> Iterator[Database]:
    frame = _people(800, seed=3)
    db = Database(tmp_path / "db")
    db.backend.load_frame("duck", frame)
    db.set_metadata("duck", META)
    db.attach(
        "lite", f"sqlite:///{_sqlite_file(tmp_path / 'people.db', frame)}", source="people", metadata=META
    )
    table = f"people_{abs(hash(str(tmp_path)))}"
    _postgres_table(postgres, frame, table)
    db.attach("pg", postgres, source=table, metadata=META)
    db.grant("eve", epsilon=100, delta=1e-3)
    db.noise_source = seeded(4)
    yield db
    db.close()


QUERIES = [
    "DP-SELECT 1 COUNT(*) FROM {t}",
    "DP-SELECT 1 COUNT(*), SUM(income), AVG(age) FROM {t} WHERE age > 30 AND city IN ('Bern', 'Chur')",
    "DP-SELECT 1 city, COUNT(*), SUM(income), VARIANCE(age) FROM {t} GROUP BY city",
    "DP-SELECT 1 city, COUNT(*) FROM {t} WHERE age BETWEEN 20 AND 25 OR income < 0 GROUP BY city",
    "DP-SELECT 1 COUNT(*), SUM(age) FROM {t} WHERE city LIKE 'B%' AND NOT city LIKE '%l'",
    "DP-SELECT 1 CORR(age, income), REGR_SLOPE(income, age) FROM {t}",
    "DP-SELECT 1 city, MEDIAN(age) FROM {t} GROUP BY city",
    # a float grid: each value at its nearest grid point (FLOOR(z + 0.5)), ties clamped onto both bounds
    "DP-SELECT 1 MEDIAN(income), QUANTILE(income, 0.9), MIN(income) FROM {t}",
    # computed forms proven total on every engine (privdb.sql.front.expr.portable)
    "DP-SELECT 1 SUM(CASE WHEN age > 30 THEN income * 2 ELSE 0 END), AVG(income / 12) FROM {t}",
    "DP-SELECT 1 SUM(CAST(age AS INT) // 7), SUM(ABS(income - 500) + SIGN(age - 50)), AVG(-age) FROM {t}",
    "DP-SELECT 1 SUM(FLOOR(income / 3) - CEIL(income / 7)), SUM(GREATEST(age, 18)), SUM(LEAST(income, age)) "
    "FROM {t}",
    "DP-SELECT 1 SUM(income * income / 1000), AVG(income / (age + 1)), SUM(COALESCE(age, 0) * 3) FROM {t}",
    # a unit's rows share one city, so the group a unit keeps (max_groups 1) is not drawn at random
    "DP-SELECT 1 CASE WHEN city IN ('Bern', 'Chur') AND 1 + 1 = 2 THEN 'east' ELSE 'west' END AS g, "
    "COUNT(*), SUM(income) FROM {t} GROUP BY g",
    "DP-SELECT 1 city, SUM(CASE WHEN city = 'Bern' THEN age ELSE NULLIF(age, 40) END) FROM {t} "
    "WHERE age + 1 > 30 AND age * 2 < 150 GROUP BY city",
]


DIALECTS = {"duck": "duckdb", "lite": "sqlite", "pg": "postgres", "big": "spark"}


def engine_statistics(db: Database, query: str, dialect: str) -> list[pd.DataFrame]:
    """What the engine returns for a DP-SELECT before any noise (the statistics and histograms), sorted."""
    plan, sql = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    backend, _ = db.backend_for(plan.table.name)
    assert backend.dialect == dialect
    parts = [backend.fetch(sql)] if sql else []
    parts += [backend.fetch(h) for h in histogram_queries(db, plan).values()]
    return [p.sort_values(list(p.columns)).reset_index(drop=True) for p in parts]


@pytest.mark.parametrize("other", ["lite", "pg"])
@pytest.mark.parametrize("query", QUERIES)
def test_engines_return_the_same_statistics_as_duckdb(both: Database, query: str, other: str) -> None:
    frames = [engine_statistics(both, query.format(t=t), DIALECTS[t]) for t in ("duck", other)]
    for duck, lite in zip(*frames, strict=True):
        pd.testing.assert_frame_equal(duck, lite, check_dtype=False, rtol=1e-9)


def test_a_quantile_on_tied_values_is_the_same_answer_on_every_engine(both: Database) -> None:
    """Issue 26: 15% of incomes lie above the bound 1000 and are clamped onto it, a point mass holding
    the 0.9-quantile. With the same seeded noise DuckDB, SQLite and PostgreSQL release the same answers
    and intervals (their histograms are equal, and the choice is made by privdb from them)."""
    released = []
    for t in ("duck", "lite", "pg"):
        both.noise_source = seeded(9)
        res = engine.run(both, "eve", f"DP-SELECT 1 QUANTILE(income, 0.9), MEDIAN(income) FROM {t}")
        released.append((res.rows, [a["ci95"] for a in res.accuracy]))
    assert released[0] == released[1] == released[2]
    assert released[0][0][0][0] > 500  # the 0.9-quantile is the clamped top (1000) up to a rank error


def test_the_course_workflow_on_an_attached_sqlite_file(both: Database) -> None:
    res = engine.run(both, "eve", "DP-SELECT 1 city, COUNT(*) FROM lite GROUP BY city")
    assert [r[0] for r in res.rows] == ["Bern", "Basel", "Chur"]
    assert res.epsilon_spent == 1
    assert {t["name"] for t in both.tables()} == {"duck", "lite", "pg"}
    released = engine.run(both, "eve", "DP-SELECT 1 city, age FROM pg WHERE city = 'Bern' LIMIT 5")
    assert len(released.rows) == 5 and all(r[0] == "Bern" for r in released.rows)


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("DP-SELECT 1 COUNT(*) FROM lite WHERE 1 / (age - 37) > 0", "SQLite engine cannot run 1 / "),
        # a float column may hold ±inf or 1e308 (PostgreSQL raises on overflow): not portable in WHERE
        ("DP-SELECT 1 COUNT(*) FROM pg WHERE income * 2 > 10", "PostgreSQL engine cannot run income"),
        # halves round differently (PostgreSQL: to even), and PostgreSQL has no fmod: DuckDB only
        ("DP-SELECT 1 SUM(ROUND(income)) FROM pg", "PostgreSQL engine cannot run this query"),
        ("DP-SELECT 1 SUM(age % 7) FROM lite", "SQLite engine cannot run this query"),
        # 2^-1074-ish products could underflow to 0, which PostgreSQL raises: refused by the bounds
        ("DP-SELECT 1 SUM(income * income * income * income * 1e-300) FROM pg", "cannot run this query"),
        ("DP-SELECT 1 COUNT(*) FROM pg WHERE CAST(city AS INTEGER) > 0", "PostgreSQL engine cannot run CAST"),
        # a LIKE pattern must be a checked text literal: refused by the expression language, every engine
        ("DP-SELECT 1 COUNT(*) FROM pg WHERE city LIKE 5", "a LIKE pattern must be a text literal"),
        ("DP-SELECT 1 COUNT(*) FROM lite WHERE nosuch > 1", "no column"),
    ],
)
def test_what_sqlite_cannot_run_safely_is_refused_for_free(both: Database, query: str, needle: str) -> None:
    with pytest.raises(PrivdbError, match=needle):
        engine.run(both, "eve", query)
    assert both.budget("eve").epsilon_spent == 0


def test_attach_errors_are_clear(tmp_path: Path) -> None:
    with Database(tmp_path / "db") as db:
        with pytest.raises(PrivdbError, match="does not exist"):
            db.attach("t", f"sqlite:///{tmp_path / 'missing.db'}")
        with pytest.raises(PrivdbError, match="unsupported engine URL"):
            db.attach("t", "oracle://x")
        path = _sqlite_file(tmp_path / "p.db", _people(5, seed=1))
        with pytest.raises(PrivdbError, match="no table 'nosuch'"):
            db.attach("t", f"sqlite:///{path}", source="nosuch")


def test_privdb_attach_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from privdb.cli import app

    path = _sqlite_file(tmp_path / "p.db", _people(50, seed=2))
    (tmp_path / "m.yaml").write_text(
        "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
    )
    runner = CliRunner()
    done = runner.invoke(app, ["attach", "people", "--db", str(tmp_path / "db"), "--engine", f"sqlite:///{path}",
                               "--metadata", str(tmp_path / "m.yaml")])  # fmt: skip
    assert done.exit_code == 0, done.output
    runner.invoke(app, ["grant", "eve", "--db", str(tmp_path / "db"), "--epsilon", "1"])
    asked = runner.invoke(app, ["query", "--db", str(tmp_path / "db"), "--analyst", "eve",
                                "DP-SELECT 1 AVG(age) FROM people", "--format", "json"])  # fmt: skip
    assert asked.exit_code == 0, asked.output


def test_conformance_of_an_attached_postgres_table(tmp_path: Path, postgres: str) -> None:
    """Eight counts, all named ``count`` by PostgreSQL: once an internal error (AttributeError)."""
    from typer.testing import CliRunner

    from privdb.api import connect
    from privdb.cli import app

    frame = _people(60, seed=8)  # ages -5…109 and incomes -100…1200: outside their bounds
    table = f"people_conf_{abs(hash(str(tmp_path)))}"
    _postgres_table(postgres, frame, table)
    (tmp_path / "m.yaml").write_text(
        "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
        "      income: {type: float, lower: 0, upper: 1000}\n"
        "      city: {type: category, values: [Bern, Basel]}\n"
    )
    done = CliRunner().invoke(app, ["attach", "people", "--db", str(tmp_path / "db"), "--engine", postgres,
                                    "--source", table, "--metadata", str(tmp_path / "m.yaml")])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "internal error" not in done.output and "above the declared upper bound" in done.output
    with connect(tmp_path / "db") as conn:
        found = {(f.column, f.kind): f for f in conn.conformance("people")}
    expected = {
        ("age", "below_lower"): int((frame.age < 0).sum()),
        ("age", "above_upper"): int((frame.age > 100).sum()),
        ("income", "below_lower"): int((frame.income < 0).sum()),
        ("income", "above_upper"): int((frame.income > 1000).sum()),
        ("city", "outside_domain"): int((frame.city == "Chur").sum()),
    }
    assert {k: f.count for k, f in found.items()} == expected
    assert found[("city", "outside_domain")].examples == ("Chur",)


def test_a_dropped_postgres_connection_is_opened_again_before_anything_is_spent(
    both: Database, postgres: str
) -> None:
    import psycopg

    engine.run(both, "eve", "DP-SELECT 1 COUNT(*) FROM pg")  # the connection is open
    with psycopg.connect(postgres, autocommit=True) as admin:  # the server drops privdb's session
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )
    spent = both.budget("eve").epsilon_spent
    res = engine.run(both, "eve", "DP-SELECT 1 city, COUNT(*) FROM pg GROUP BY city")
    assert len(res.rows) == 3 and both.budget("eve").epsilon_spent == spent + 1


def test_an_unreachable_postgres_server_refuses_queries_for_free(tmp_path: Path) -> None:
    frame = _people(50, seed=6)
    db = Database(tmp_path / "db")
    db.grant("eve", epsilon=5)
    with postgres_cluster() as url:
        _postgres_table(url, frame, "people")
        db.attach("pg", url, source="people", metadata=META)
        engine.run(db, "eve", "DP-SELECT 1 COUNT(*) FROM pg")
    # the cluster is stopped and gone
    with pytest.raises(EngineUnavailable, match="nothing was spent") as err:
        engine.run(db, "eve", "DP-SELECT 1 AVG(income) FROM pg")
    assert "Traceback" not in str(err.value) and db.budget("eve").epsilon_spent == 1
    assert db.log("eve")[-1]["code"] == "engine_unavailable"
    db.close()
