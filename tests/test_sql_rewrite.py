"""The engine SQL: shared twin aggregates, the small-unit shortcut of user-level bounding, and the hidden
per-unit row counts that the shortcut relies on (kept current, never shown, never trusted when stale)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdb.backends.duckdb import DuckDBBackend, unit_rows_column
from privdb.database import Database
from privdb.errors import InvalidParameter, UnknownColumn
from privdb.sql import engine
from privdb.sql.rewrite import engine_sql

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
    db.owner_sql("INSERT INTO people SELECT 0 AS pid, 1.0, 30, 'A', NULL FROM range(50)")
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
    con.execute("INSERT INTO people SELECT 7, 1.0, 30, 'A', 1 FROM range(40)")  # unit 7 claims 1 row each
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


# ---- clamps the engine's own statistics make idle are left out (DuckDBBackend.value_ranges)
ROW_META: dict[str, object] = {
    "columns": {
        "income": {"type": "float", "lower": 0, "upper": 200},
        "age": {"type": "int", "lower": 0, "upper": 100},
    }
}
SUMS = "DP-SELECT 1 SUM(income), SUM(age) FROM people"


def _exact_sums(frame: pd.DataFrame) -> tuple[float, float]:
    """The clamped sums computed outside any engine (the table has no NULL; NaN clamps to the upper bound)."""
    income = frame["income"].astype(float).fillna(200.0)
    return float(income.clip(0, 200).sum()), float(frame["age"].astype(float).clip(0, 100).sum())


def _engine_sums(db: Database) -> tuple[str, tuple[float, float]]:
    _, sql = engine.prepare(db, SUMS)
    row = db.backend.fetch(sql).iloc[0]
    return sql, (float(row["s0"]), float(row["s1"]))


def test_clamps_the_statistics_rule_out_are_left_out_and_return_when_a_write_needs_them(
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame({"income": [10.5, 199.0, 0.0, 50.0], "age": [20, 30, 40, 99]})
    path = tmp_path / "db"
    with Database(path) as db:
        db.backend.load_frame("people", frame)
        db.set_metadata("people", ROW_META)
        sql, sums = _engine_sums(db)
        assert "CASE" not in sql and sums == pytest.approx(_exact_sums(frame))  # nothing to clamp
        # what analysts see never depends on the data: explain shows every clamp
        shown = engine.explain(db, SUMS)["engine_sql"]
        assert all(bound in shown for bound in ("THEN 0.0", "THEN 200.0", "THEN 100.0"))
        db.owner_sql("UPDATE people SET income = 1e12 WHERE age = 20")  # a write through privdb
        frame.loc[0, "income"] = 1e12
        sql, sums = _engine_sums(db)
        assert "THEN 200.0" in sql and "THEN 0.0" not in sql and "THEN 100.0" not in sql
        assert sums == pytest.approx(_exact_sums(frame))
    con = duckdb.connect(str(path / "data.duckdb"))  # another tool writes while privdb is closed
    con.execute("UPDATE people SET age = -7, income = 'nan' WHERE age = 30")
    con.close()
    frame.loc[1, ["age", "income"]] = [-7, np.nan]
    with Database(path) as db:
        sql, sums = _engine_sums(db)
        assert "THEN 0.0" in sql and "THEN 200.0" in sql  # NaN: no trusted upper bound for income
        assert sums == pytest.approx(_exact_sums(frame))


_VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(min_value=-10, max_value=300),
)


@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["insert", "update", "delete"]), _VALUES, st.integers(0, 5)),
        min_size=1,
        max_size=12,
    )
)
@settings(max_examples=60, deadline=None)
def test_statistics_ranges_enclose_every_value_after_any_writes(
    steps: list[tuple[str, float | None, int]],
) -> None:
    """DuckDB's statistics only widen: after any inserts, updates and deletes, every stored value lies in
    the range privdb reads from them (a column with a NaN, or with no value, has none)."""
    backend = DuckDBBackend(None)  # an in-memory DuckDB
    backend.raw("CREATE TABLE t (x DOUBLE, k INTEGER)")
    for i, (op, value, k) in enumerate(steps):
        literal = "NULL" if value is None else f"'{value!r}'::DOUBLE"
        if op == "insert":
            backend.raw(f"INSERT INTO t VALUES ({literal}, {k}), ({i}, {i % 6})")
        elif op == "update":
            backend.raw(f"UPDATE t SET x = {literal} WHERE k = {k}")
        else:
            backend.raw(f"DELETE FROM t WHERE k = {k}")
        values = backend.raw("SELECT x FROM t WHERE x IS NOT NULL")["x"].to_numpy(dtype=float)
        ranges = backend.value_ranges("t")
        if "x" in ranges:
            low, high = ranges["x"]
            assert not np.isnan(values).any()
            assert ((values >= low) & (values <= high)).all()
        assert "k" in ranges or backend.raw("SELECT COUNT(k) AS n FROM t")["n"].iloc[0] == 0
    backend.close()
