"""The engine SQL: shared twin aggregates, the small-unit shortcut of user-level bounding, and the hidden
per-unit row counts that the shortcut relies on (kept current, never shown, never trusted when stale)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from privdb.backends.names import unit_rows_column
from privdb.database import Database
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run.rewrite import engine_sql

HIDDEN = unit_rows_column("pid")


def _people(n_units: int, seed: int) -> pd.DataFrame:
    """Units of 1–6 rows; each unit lives in one state (so which groups it keeps is not random)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, n_units)
    pid = np.repeat(np.arange(n_units), sizes)
    state = np.array(["A", "B", "C"])[rng.integers(0, 3, n_units)][pid]
    return pd.DataFrame(
        {
            "pid": pid,
            "income": rng.uniform(-50, 250, len(pid)).round(2),
            "age": rng.integers(0, 100, len(pid)),
            "state": state,
        }
    )


def _metadata(m: int, g: int) -> dict[str, object]:
    return {
        "privacy_unit": "pid",
        "max_contributions": m,
        "max_groups": g,
        "columns": {
            "pid": {"type": "int", "private_id": True},
            "income": {"type": "float", "lower": 0, "upper": 200},
            "age": {"type": "int", "lower": 0, "upper": 100},
            "state": {"type": "category", "values": ["A", "B", "C"]},
        },
    }


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "db")
    database.backend.load_frame("people", _people(3000, seed=5))
    database.set_metadata("people", _metadata(2, 1))
    database.grant("alice", epsilon=100)
    yield database
    database.close()


QUERIES = [
    "DP-SELECT 1 COUNT(*), SUM(income), AVG(income) FROM people WHERE age > 20",
    "DP-SELECT 1 state, COUNT(*), SUM(income), AVG(age), VARIANCE(income) FROM people GROUP BY state",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(("m", "g"), [(1, 1), (2, 1), (3, 2), (10, 3)])
def test_small_unit_shortcut_gives_the_same_exact_aggregates(
    db: Database, query: str, m: int, g: int
) -> None:
    db.set_metadata("people", _metadata(m, g))
    plan, sql = engine.prepare(db, query)
    assert db.backend.unit_rows("people", "pid") == HIDDEN and HIDDEN in sql
    slow = engine_sql(plan, "people")  # every unit through bounding
    assert HIDDEN not in slow
    key = [c for c in ("k0",) if "GROUP BY" in query]
    fast_frame = (
        db.backend.fetch(sql).sort_values(key).reset_index(drop=True) if key else db.backend.fetch(sql)
    )
    slow_frame = (
        db.backend.fetch(slow).sort_values(key).reset_index(drop=True) if key else db.backend.fetch(slow)
    )
    pd.testing.assert_frame_equal(fast_frame, slow_frame, check_dtype=False, rtol=1e-9)


def test_bounding_caps_each_unit_at_m_rows(db: Database) -> None:
    frame = db.backend.raw("SELECT pid, COUNT(*) AS n FROM people GROUP BY pid")
    _, sql = engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM people")
    assert db.backend.fetch(sql).iloc[0, 0] == pytest.approx(np.minimum(frame["n"], 2).sum())


def test_twin_statistics_are_computed_once_but_noised_apart(db: Database) -> None:
    plan, sql = engine.prepare(db, "DP-SELECT 1 SUM(income), AVG(income) FROM people")
    _, alone = engine.prepare(db, "DP-SELECT 1 SUM(income) FROM people")
    # SUM's sum and AVG's numerator: one engine aggregate, as many as for SUM alone
    assert sql.count("THEN 200.0 ELSE") == alone.count("THEN 200.0 ELSE")
    frame = db.backend.fetch(sql)
    names = [s.name for s in plan.statistics if s.kind == "sum"]
    assert len(names) == 2 and frame[names[0]].iloc[0] == frame[names[1]].iloc[0]
    res = engine.run(db, "alice", "DP-SELECT 1 SUM(income), AVG(income) FROM people")
    total, mean = res.rows[0]
    assert total != pytest.approx(mean * len(_people(3000, seed=5)), rel=1e-12)  # separate noise draws


def test_hidden_count_is_neither_metadata_nor_queryable(db: Database) -> None:
    assert HIDDEN not in db.backend.columns("people")
    assert HIDDEN not in str(db.tables())
    with pytest.raises(UnknownColumn):
        engine.run(db, "alice", f"DP-SELECT 1 COUNT(*) FROM people WHERE {HIDDEN} > 1")
    assert db.budget("alice").epsilon_spent == 0


def test_owner_writes_rebuild_the_counts(db: Database) -> None:
    db.owner_sql("INSERT INTO people (pid, income, age, state) SELECT 0, 1.0, 30, 'A' FROM range(50)")
    sizes = db.backend.raw(
        f"SELECT pid, MIN({HIDDEN}) AS lo, MAX({HIDDEN}) AS hi, COUNT(*) AS n FROM people GROUP BY pid"
    )
    assert (sizes["lo"] == sizes["n"]).all() and (sizes["hi"] == sizes["n"]).all()
    assert db.backend.unit_rows("people", "pid") == HIDDEN


def test_stale_counts_from_outside_privdb_are_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with Database(path) as db:
        db.backend.load_frame("people", _people(500, seed=1))
        db.set_metadata("people", _metadata(1, 1))
    con = duckdb.connect(str(path / "data.duckdb"))  # another tool writes while privdb is closed
    con.execute(  # unit 7's rows claim to be 1 row each, its kept state 1 row
        f"INSERT INTO people (pid, income, age, state, {HIDDEN}) SELECT 7, 1.0, 30, 'A', 1 FROM range(40)"
    )
    con.close()
    with Database(path) as db:
        assert db.backend.unit_rows("people", "pid") is None
        _, sql = engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM people")
        assert HIDDEN not in sql  # every unit bounded
        units = db.backend.raw("SELECT COUNT(DISTINCT pid) FROM people").iloc[0, 0]
        assert db.backend.fetch(sql).iloc[0, 0] == pytest.approx(units)
        db.set_metadata("people", db.metadata("people").to_dict())  # re-declaring rebuilds them
        assert db.backend.unit_rows("people", "pid") == HIDDEN


def test_a_file_may_not_bring_a_reserved_column(tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    pd.DataFrame({"a": [1, 2], "__privdb_x": [3, 4]}).to_csv(source, index=False)
    with Database(tmp_path / "db") as db:
        with pytest.raises(InvalidParameter, match="reserved for privdb"):
            db.load("t", source)
        assert db.backend.tables() == []


def test_dropping_the_unit_removes_the_hidden_count(db: Database) -> None:
    meta = _metadata(1, 1)
    meta.pop("privacy_unit")
    meta["columns"]["pid"] = {"type": "int"}  # type: ignore[index]
    db.set_metadata("people", meta)
    assert HIDDEN not in db.backend.raw("SELECT * FROM people LIMIT 1").columns


# ---- whether a query fails, and what it answers, never depends on the data's types or row order
def test_values_are_clamped_as_double_whatever_the_column_type(tmp_path: Path) -> None:
    """INTEGER, SMALLINT, REAL and DECIMAL columns: sums and products of clamped values are DOUBLE, so no
    value can overflow the column's own type and make the query fail (a failure that would tell whether
    such a row exists)."""
    frame = pd.DataFrame(
        {
            "a": np.array([99_999, 99_999, 5], dtype=np.int32),
            "b": np.array([99_999, 99_999, 7], dtype=np.int32),
            "s": np.array([300, 300, 300], dtype=np.int16),
            "r": np.array([3e38, 3e38, 1.0], dtype=np.float32),
        }
    )
    with Database(tmp_path / "db") as db:
        db.backend.load_frame("t", frame)
        for column in ("d", "e"):  # a salary of 20 million: its square overflows DECIMAL(18)
            db.owner_sql(f"ALTER TABLE t ADD COLUMN {column} DECIMAL(18, 3) DEFAULT 20000000")
        db.set_metadata(
            "t",
            {
                "columns": {
                    "a": {"type": "float", "lower": 0, "upper": 100_000},
                    "b": {"type": "float", "lower": 0, "upper": 100_000},
                    "s": {"type": "int", "lower": 0, "upper": 1000},
                    "r": {"type": "float", "lower": 0, "upper": 1e39},
                    "d": {"type": "float", "lower": 0, "upper": 1e8},
                    "e": {"type": "float", "lower": 0, "upper": 1e8},
                }
            },
        )
        db.grant("alice", epsilon=100)
        for query in (
            "DP-SELECT 1 COVAR_POP(a, b), CORR(a, b) FROM t",
            "DP-SELECT 1 SUM(s), VARIANCE(s) FROM t",
            "DP-SELECT 1 SUM(r), CORR(r, d) FROM t",
            "DP-SELECT 1 CORR(d, e), VARIANCE(d) FROM t",
        ):
            _, sql = engine.prepare(db, query)
            row = db.backend.fetch(sql).iloc[0]
            assert np.isfinite(row.to_numpy(dtype=float)).all(), query
            engine.run(db, "alice", query)  # answered, not query_failed
        _, sql = engine.prepare(db, "DP-SELECT 1 COVAR_POP(a, b) FROM t")
        products = [v for k, v in db.backend.fetch(sql).iloc[0].items() if v > 1e10]
        assert products == [pytest.approx(2 * 99_999.0**2 + 35)]


def test_nan_and_null_keys_add_up_whatever_the_row_order(tmp_path: Path) -> None:
    """NaN and NULL are two groups to the engine and one key (null) in the answer: the answer's statistic
    is their sum, not whichever row the engine happened to return last."""
    from privdb.sql.answer.noise import true_values_by_group

    with Database(tmp_path / "db") as db:
        db.owner_sql("CREATE TABLE t (k DOUBLE, x DOUBLE)")
        db.owner_sql("INSERT INTO t SELECT NULL, 1 FROM range(1000)")
        db.owner_sql("INSERT INTO t SELECT 'nan', 1 FROM range(3)")
        db.set_metadata("t", {"columns": {"x": {"lower": 0, "upper": 1}}})
        plan, sql = engine.prepare(db, "DP-SELECT 1 DELTA 1e-6 k, COUNT(*), SUM(x) FROM t GROUP BY k")
        assert isinstance(plan, Plan)
        frame = db.backend.fetch(sql)
        for order in (frame, frame.iloc[::-1].reset_index(drop=True)):
            groups, truth = true_values_by_group(plan, order)
            assert groups == [(None,)]
            assert [float(v[0]) for v in truth.values()] == [1003.0, 1003.0]


def test_an_aggregate_filter_is_its_case_argument(tmp_path: Path) -> None:
    """``COUNT(*) FILTER (WHERE c)`` aggregates the same rows as ``COUNT(CASE WHEN c THEN 1 END)``, and keeps
    its name as written; at ε = 1000 both are the exact count up to noise of ±0.01."""
    from joinfixtures import people_visits
    from privdb.sql import engine

    db = people_visits(tmp_path / "db")
    res = engine.run(
        db,
        "alice",
        "DP-SELECT 1000 COUNT(*) FILTER (WHERE age > 50), SUM(income) FILTER (WHERE sex = 'F') AS f "
        "FROM people",
    )
    truth = db.owner_sql(
        "SELECT COUNT(*) FILTER (WHERE age > 50) AS n, "
        "SUM(LEAST(income, 200000)) FILTER (WHERE sex = 'F') AS f FROM people"
    )
    assert res.columns == ["COUNT(*) FILTER(WHERE age > 50)", "f"]
    assert abs(res.rows[0][0] - truth["n"].iloc[0]) < 50
    assert abs(res.rows[0][1] - truth["f"].iloc[0]) < 0.01 * truth["f"].iloc[0]


def test_a_lookup_in_a_public_table_keeps_the_small_unit_shortcut(tmp_path: Path) -> None:
    """people ⋈ regions (codes unique): a person has no more rows after the lookup than before, so the stored
    per-person row count still selects the units that need no bounding, and the statistics equal those of
    bounding every unit; with a repeated public key the shortcut is not taken."""
    from joinfixtures import frames, people_visits
    from privdb.sql import engine
    from privdb.sql.plan.types import Plan

    tables = frames(people=400, seed=2)
    tables["people"] = pd.concat([tables["people"], tables["people"].head(30)], ignore_index=True)  # repeats
    db = people_visits(tmp_path / "db", tables)
    query = (
        "DP-SELECT 1 r.name, COUNT(*), SUM(p.income) FROM people p JOIN regions r ON p.region = r.code "
        "GROUP BY r.name"
    )
    plan, fast = engine.prepare(db, query, "alice")
    assert isinstance(plan, Plan) and "__privdb_rows_per_pid" in fast
    assert plan.relation is not None
    slow = engine_sql(
        plan, "people", None, plan.relation.source({"people": '"people"', "regions": '"regions"'})
    )
    assert "__privdb_rows_per_pid" not in slow

    def exact(sql: str) -> pd.DataFrame:
        return db.backend.fetch(sql).sort_values("k0").reset_index(drop=True)

    pd.testing.assert_frame_equal(exact(fast), exact(slow), check_dtype=False)
    tables["regions"] = pd.concat([tables["regions"], tables["regions"].head(1)], ignore_index=True)
    _, repeated = engine.prepare(people_visits(tmp_path / "db2", tables), query, "alice")
    assert "__privdb_rows_per_pid" not in repeated  # code 1 meets two rows: no shortcut
