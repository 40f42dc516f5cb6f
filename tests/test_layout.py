"""User-level bounding as one scan over a table's stored layout (privdb.sql.run.layout): the answers are the
per-unit bounding's, the stored group choice is one of each unit's values with its rows there, appends redraw
it only for the units they touch, and where the layout cannot stand for the query (a WHERE, an attached or a
stale table) the query keeps the per-unit form."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from joinfixtures import PEOPLE_META as PEOPLE
from privdb.backends.names import unit_choice_column, unit_rows_column
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run import targets
from privdb.sql.run.eager import eager_sql
from privdb.sql.run.layout import split_sql
from privdb.sql.run.rewrite import engine_sql

KINDS = ["gp", "lab", "xray"]
META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 3,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "cost": {"type": "float", "lower": 0, "upper": 100},
        "kind": {"type": "category", "values": KINDS},
        "urgent": {"type": "bool"},
    },
}
ROWS, KEPT = unit_rows_column("pid"), unit_choice_column("pid", "kind")
UNGROUPED = [
    "DP-SELECT 1 COUNT(*) FROM visits",
    "DP-SELECT 1 COUNT(*), SUM(cost), AVG(cost), VARIANCE(cost), COUNT(kind) FROM visits",
]
GROUPED = "DP-SELECT 1 kind, COUNT(*), SUM(cost), AVG(cost) FROM visits GROUP BY kind"


def _visits(n_units: int, seed: int, nulls: bool = True) -> pd.DataFrame:
    """Units of 1–8 rows over the kinds (some NULL), costs beyond the bounds and NULL, a NULL unit."""
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(n_units), rng.integers(1, 9, n_units))
    missing = rng.random(pid.size) < (0.02 if nulls else 0.0)
    kind = rng.choice([*KINDS, None], pid.size, p=[0.3, 0.3, 0.3, 0.1] if nulls else [0.4, 0.3, 0.3, 0.0])
    cost = rng.uniform(-20, 130, pid.size).round(2)
    return pd.DataFrame(
        {
            "pid": pd.array(
                [None if m else int(p) for p, m in zip(pid, missing, strict=True)], dtype="Int64"
            ),
            "cost": np.where(rng.random(pid.size) < 0.05, np.nan, cost),
            "kind": kind,
            "urgent": rng.random(pid.size) < 0.2,
        }
    )


def _database(path: Path, frame: pd.DataFrame) -> Database:
    db = Database(path)
    frame.to_parquet(path.with_suffix(".parquet"))
    db.load("visits", path.with_suffix(".parquet"), META)
    return db


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    with _database(tmp_path / "db", _visits(300, seed=1)) as made:
        yield made


def _both(db: Database, query: str) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """The SQL privdb sends for ``query``, its frame, and the frame of the per-unit form (rewrite.py)."""
    plan, sent = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    _, source, unit_rows, from_ = targets.plan_target(db, plan)
    keys = [f"k{i}" for i in range(len(plan.resolved.keys))]

    def frame(sql: str) -> pd.DataFrame:
        out = db.backend.fetch(sql)
        return out.sort_values(keys, na_position="first").reset_index(drop=True) if keys else out

    return sent, frame(sent), frame(engine_sql(plan, source, unit_rows, from_))


def _numbers(frame: pd.DataFrame, column: str) -> list[Any]:
    """A column's values, a statistic's NULL as 0 (what the noise step reads it as: answer/noise.py)."""
    values = frame[column].tolist()
    if column.startswith("k"):
        return [None if pd.isna(v) else v for v in values]
    return [0.0 if pd.isna(v) else float(v) for v in values]


def _assert_same(one: pd.DataFrame, other: pd.DataFrame) -> None:
    assert sorted(one.columns) == sorted(other.columns)
    for column in one.columns:
        left, right = _numbers(one, column), _numbers(other, column)
        if column.startswith("k"):  # keys (NULL one of them) equal
            assert left == right, column
        else:
            assert left == pytest.approx(right, rel=1e-9, abs=1e-9), column


@pytest.mark.parametrize("query", UNGROUPED)
def test_ungrouped_one_scan_is_the_bounding_answer(db: Database, query: str) -> None:
    sent, one_scan, per_unit = _both(db, query)
    assert ROWS in sent and "GROUP BY" not in sent  # one weighted scan, no grouping by unit
    _assert_same(one_scan, per_unit)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_units=st.integers(0, 60), seed=st.integers(0, 2**16), nulls=st.booleans())
def test_ungrouped_equality_holds_on_any_table(tmp_path: Path, n_units: int, seed: int, nulls: bool) -> None:
    path = tmp_path / f"db-{n_units}-{seed}-{nulls}"
    with _database(path, _visits(n_units, seed, nulls)) as made:
        for query in UNGROUPED:
            _, one_scan, per_unit = _both(made, query)
            _assert_same(one_scan, per_unit)


def _check_choices(db: Database) -> pd.DataFrame:
    """Every unit keeps exactly one of its values (NULL one of them), with its rows there; the rows of its
    other values carry 0. The stored choice per unit."""
    rows = db.backend.raw(f'SELECT pid, kind, "{ROWS}" AS n, "{KEPT}" AS kept FROM visits')
    assert rows["kept"].notna().all()
    for _, unit in rows.groupby("pid", dropna=False):
        assert (unit["n"] == len(unit)).all()
        kept = unit[unit["kept"] > 0]
        assert kept["kind"].nunique(dropna=False) == 1
        assert (kept["kept"] == len(kept)).all()
    chosen = rows[rows["kept"] > 0].drop_duplicates("pid")
    return chosen.set_index("pid")["kind"]


def test_the_stored_choice_is_one_of_each_units_values(db: Database) -> None:
    _check_choices(db)
    assert db.backend.unit_choice("visits", "pid", "urgent") is not None  # booleans are keys too
    assert db.backend.unit_choice("visits", "pid", "cost") is None  # no declared values: never a key


def test_grouped_answer_is_the_bounding_of_the_stored_choice(db: Database) -> None:
    """Each unit in its stored group, weighted min(1, m / its rows there): computed here from the rows."""
    chosen = _check_choices(db)
    sent, one_scan, _ = _both(db, GROUPED)
    assert KEPT in sent and "arg_max" not in sent.lower()
    rows = db.backend.raw(f'SELECT pid, kind, cost, "{KEPT}" AS kept FROM visits WHERE "{KEPT}" > 0')
    rows["w"] = np.minimum(1.0, META["max_contributions"] / rows["kept"])
    rows["c"] = rows["cost"].clip(0, 100) * rows["w"]
    expected = rows.groupby("kind", dropna=False).agg(n=("w", "sum"), s=("c", "sum"))
    for row in one_scan.itertuples():
        key = row.k0 if isinstance(row.k0, str) else np.nan
        want = expected.loc[expected.index.isna()] if key is np.nan else expected.loc[[key]]
        assert row.s0 == pytest.approx(float(want["n"].iloc[0]))
        assert row.s1 == pytest.approx(float(want["s"].iloc[0]))
    units = db.backend.raw(
        "SELECT COUNT(DISTINCT pid) + MAX(CASE WHEN pid IS NULL THEN 1 ELSE 0 END) FROM visits"
    )
    assert len(chosen) == units.iloc[0, 0]


@pytest.mark.parametrize("query", [GROUPED, GROUPED.replace("kind", "urgent")])
def test_the_split_form_of_engines_without_fsum_is_the_one_scans_answer(db: Database, query: str) -> None:
    """Spark's grouped form over the stored choice (units within m in their group as plain rows, the others
    bounded per unit), run here on DuckDB over the same table: the one scan's statistics and count of
    units over the bound."""
    plan, sent = engine.prepare(db, query)
    assert isinstance(plan, Plan) and plan.truncation_epsilon > 0
    _, source, unit_rows, _ = targets.plan_target(db, plan)
    column = "urgent" if "urgent" in query else "kind"
    kept = db.backend.unit_choice(source, "pid", column)
    assert unit_rows is not None and kept is not None
    split = split_sql(plan, source, unit_rows, kept, "duckdb")
    assert "fsum" not in split.lower() and "fsum" in sent.lower()
    one, other = (db.backend.fetch(q).sort_values("k0", na_position="first").reset_index(drop=True)
                  for q in (sent, split))  # fmt: skip
    _assert_same(one, other)


def test_an_append_redraws_only_the_units_it_touches(db: Database, tmp_path: Path) -> None:
    before = _check_choices(db)
    added = pd.DataFrame(
        {
            "pid": pd.array([5, 5, 7, 10_000, None], dtype="Int64"),
            "cost": [1.0, 2.0, 3.0, 4.0, 5.0],
            "kind": ["gp", "lab", "xray", "gp", "lab"],
            "urgent": [False, True, False, False, True],
        }
    )
    added.to_parquet(tmp_path / "more.parquet")
    db.append("visits", tmp_path / "more.parquet")
    after = _check_choices(db)
    touched = {5, 7, 10_000}
    for pid, kind in before.items():
        if pd.notna(pid) and pid not in touched:
            assert after.loc[pid] == kind or (pd.isna(after.loc[pid]) and pd.isna(kind))
    assert 10_000 in after.index
    sent, one_scan, per_unit = _both(db, UNGROUPED[1])
    assert ROWS in sent
    _assert_same(one_scan, per_unit)
    assert KEPT in engine.prepare(db, GROUPED)[1]


def test_the_query_form_stays_where_the_layout_cannot_stand_for_it(db: Database, tmp_path: Path) -> None:
    # a WHERE comes before the bound: each unit's rows after it are not the stored ones
    sent = engine.prepare(db, "DP-SELECT 1 kind, COUNT(*) FROM visits WHERE cost > 5 GROUP BY kind")[1]
    assert KEPT not in sent and "arg_max" in sent.lower()
    assert "GROUP BY" in engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM visits WHERE cost > 5")[1]
    # two keys, or a key that is an expression: no stored choice
    assert (
        KEPT
        not in engine.prepare(db, "DP-SELECT 1 kind, urgent, COUNT(*) FROM visits GROUP BY kind, urgent")[1]
    )
    # an attached table: privdb does not write it, so keeps no layout
    path = tmp_path / "v.sqlite"
    with closing(sqlite3.connect(path)) as lite:
        frame = _visits(50, seed=2, nulls=False).astype({"pid": "int64"}).drop(columns="urgent")
        frame.to_sql("visits", lite, index=False)
    columns = {k: v for k, v in META["columns"].items() if k != "urgent"}  # SQLite stores booleans as int
    db.attach("lite", f"sqlite:///{path}", source="visits", metadata={**META, "columns": columns})
    assert "__privdb" not in engine.prepare(db, "DP-SELECT 1 kind, COUNT(*) FROM lite GROUP BY kind")[1]


def test_a_stale_choice_is_not_trusted(tmp_path: Path) -> None:
    path = tmp_path / "db"
    _database(path, _visits(100, seed=3)).close()
    con = duckdb.connect(str(path / "data.duckdb"))  # another tool adds rows while privdb is closed
    con.execute(f"INSERT INTO visits (pid, cost, kind, \"{KEPT}\") SELECT 1, 1.0, 'gp', 1 FROM range(30)")
    con.close()
    with Database(path) as db:
        assert db.backend.unit_choice("visits", "pid", "kind") is None
        sent = engine.prepare(db, GROUPED)[1]
        assert KEPT not in sent and "arg_max" in sent.lower()


PEOPLE_META = {**PEOPLE, "columns": {c: PEOPLE["columns"][c] for c in ("pid", "age")}}
JOIN = "people p JOIN visits v ON p.pid = v.pid"


@contextmanager
def _people_and_visits(path: Path, ages: np.ndarray) -> Iterator[Database]:
    """``people`` (pids 0–79, then pid 3 again: its declared one row broken) ⋈ ``visits`` (1–8 rows each)."""
    with Database(path) as db:
        db.backend.load_frame("people", pd.DataFrame({"pid": np.r_[np.arange(80), 3], "age": ages}))
        db.set_metadata("people", PEOPLE_META)
        db.backend.load_frame("visits", _visits(90, seed=6, nulls=False))
        db.set_metadata("visits", META)
        yield db


def _eager_of(db: Database, query: str) -> tuple[Plan, str, Mapping[str, str]]:
    plan, sent = engine.prepare(db, query)
    assert isinstance(plan, Plan) and plan.relation is not None
    return plan, sent, targets._sources(db, plan, plan.relation)[1]


def test_the_weighted_join_is_the_eager_forms_answer(tmp_path: Path) -> None:
    """people ⋈ visits with visits unfiltered: one weighted scan of the join for people of one row, the
    eager choice for the rest (two people rows for pid 3); the same numbers as the eager form alone."""
    with _people_and_visits(tmp_path / "db", np.random.default_rng(5).integers(0, 100, 81)) as db:
        for where in ("", " WHERE p.age > 30"):
            plan, sent, sources = _eager_of(
                db, f"DP-SELECT 1 COUNT(*), SUM(v.cost), AVG(v.cost) FROM {JOIN}{where}"
            )
            eager = eager_sql(plan, sources, "duckdb", ROWS)
            assert eager is not None and sent != eager and "m._w" in sent
            _assert_same(db.backend.fetch(sent), db.backend.fetch(eager))


@pytest.mark.parametrize(
    "where", ["", " WHERE p.age > 30", " WHERE v.cost > 10", " WHERE p.age > 30 AND v.urgent"]
)
@pytest.mark.parametrize("grouped", [False, True])
def test_the_split_join_of_engines_without_fsum_is_the_eager_forms_answer(
    tmp_path: Path, where: str, grouped: bool
) -> None:
    """Engines without a compensated sum (Spark) take the plain join aggregate for units of one people row
    and at most m visits, and bound the others (units of up to 8 visits; pid 3 has two people rows, in one
    group); its SQL, run on DuckDB before transpiling, gives the eager form's numbers, WHERE on either
    side."""
    ages = np.random.default_rng(5).integers(0, 100, 80)
    with _people_and_visits(tmp_path / "db", np.r_[ages, ages[3]]) as db:
        select, by = ("p.age // 25 AS band, ", " GROUP BY p.age // 25") if grouped else ("", "")
        query = f"DP-SELECT 1 {select}COUNT(*), SUM(v.cost), AVG(v.cost) FROM {JOIN}{where}{by}"
        plan, _, sources = _eager_of(db, query)
        split = eager_sql(plan, sources, "spark", ROWS, ROWS)
        eager = eager_sql(plan, sources, "spark")
        assert split is not None and eager is not None and "__privdb_o_" in split
        frames = [db.backend.fetch(sql) for sql in (split, eager)]
        if grouped:
            frames = [f.sort_values("k0").reset_index(drop=True) for f in frames]
        _assert_same(*frames)
