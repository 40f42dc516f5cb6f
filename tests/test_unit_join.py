"""A join of a one-row-per-person table with a many-rows table on the unit (issue 30, J1): the many side is
aggregated per unit before the join (privdb.sql.run.eager) exactly when the query's keys and conditions read
the one side and its aggregates the many side; its statistics equal the join-then-bound form's where the
bounds bind, and a person with several rows where the metadata declares one still moves them by at most
the bound.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from joinfixtures import VISITS_META, frames, people_visits
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.run import targets
from privdb.sql.run.rewrite import engine_sql

EAGER = "AS m ON o.u = m.u"  # the join of the one side's rows to the many side's per-unit aggregates
J1 = "DP-SELECT 50 p.sex, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid"


def _bound_binding(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Visits over the bound: person 1 has 12 more visits of 3 kinds (m = 5)."""
    extra = pd.DataFrame({"pid": 1, "cost": [400.0, 900.0] * 6, "kind": ["gp", "dentist", "lab"] * 4})
    return {**tables, "visits": pd.concat([tables["visits"], extra], ignore_index=True)}


def _database(path: Path, tables: dict[str, pd.DataFrame]) -> Database:
    db = people_visits(path, tables)
    db.set_metadata("visits", {**VISITS_META, "max_groups": 1})  # J1's: one group per person
    return db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    return _database(tmp_path_factory.mktemp("unit_join"), _bound_binding(frames(people=800, seed=5)))


@pytest.mark.parametrize(
    ("query", "eager"),
    [
        (J1 + " GROUP BY p.sex", True),
        (J1.replace("p.sex, ", "") + " WHERE p.age > 30 AND v.cost < 500", True),
        ("DP-SELECT 50 COUNT(*) FROM visits v JOIN people p ON v.pid = p.pid", True),  # either order
        ("DP-SELECT 50 v.kind, COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid GROUP BY v.kind", False),
        ("DP-SELECT 50 SUM(p.age) FROM people p JOIN visits v ON p.pid = v.pid", False),
        ("DP-SELECT 50 COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid WHERE p.age < v.cost", False),
        ("DP-SELECT 50 COUNT(*) FROM people p LEFT JOIN visits v ON p.pid = v.pid", False),
        ("DP-SELECT 50 COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid AND v.cost > 1", False),
    ],
)
def test_the_many_side_is_aggregated_first_only_where_the_query_allows(
    db: Database, query: str, eager: bool
) -> None:
    plan, _ = engine.prepare(db, query)
    assert (EAGER in targets.statistics_sql(db, plan)) is eager


@pytest.mark.parametrize(
    "query",
    [
        J1 + " GROUP BY p.sex",
        J1.replace("p.sex, ", "") + " WHERE p.age > 30 AND v.cost < 500",
        J1 + " WHERE v.kind <> 'lab' GROUP BY p.sex",
    ],
)
def test_both_forms_compute_the_same_statistics(db: Database, query: str) -> None:
    """Before noise, on data where the bounds bind: equal (each person has one group, so no random choice)."""
    plan, _ = engine.prepare(db, query)
    eager = targets.statistics_sql(db, plan)
    _, source, unit_rows, from_ = targets.plan_target(db, plan)
    joined = engine_sql(plan, source, unit_rows, from_)
    assert EAGER in eager and EAGER not in joined
    assert "o._n <= 1" in eager  # people's stored per-person row counts: one-row persons as they stand
    key_cols = [c for c in ("k0",) if "k0" in eager]
    frames_ = [db.backend.fetch(sql).sort_values(key_cols or ["t_over"]).reset_index(drop=True)
               for sql in (eager, joined)]  # fmt: skip
    pd.testing.assert_frame_equal(frames_[0], frames_[1], check_dtype=False, rtol=1e-9)
    assert frames_[0]["t_over"].sum() > 0  # the bounds bind (person 1 at least)


@pytest.mark.parametrize("group", ["", " GROUP BY p.sex"])
def test_a_person_with_several_one_side_rows_stays_within_the_bound(tmp_path: Path, group: str) -> None:
    """The declaration broken: person 1 has three people rows (two sexes) and 12 visits. Alone in the
    tables, its statistics are at most m = 5 rows and 5 × 1000 in total, over at most G = 1 group."""
    person = pd.DataFrame({"pid": 1, "age": 40, "income": 1.0, "sex": ["F", "M", "F"], "region": 1})
    visits = pd.DataFrame({"pid": 1, "cost": [1000.0] * 12, "kind": "gp"})
    db = _database(tmp_path, {"people": person, "visits": visits, "regions": frames(10)["regions"]})
    plan, _ = engine.prepare(db, (J1 if group else J1.replace("p.sex, ", "")) + group)
    sql = targets.statistics_sql(db, plan)
    assert EAGER in sql and "o._n > 1" in sql  # the person goes through the choice of one row
    got = db.backend.fetch(sql)
    numbers = got.drop(columns=[c for c in ("k0", "t_over") if c in got]).sum()
    assert len(got) == 1  # one group
    if "t_over" in got:
        assert got["t_over"].sum() == 1  # one person over the bound
    assert numbers.max() == pytest.approx(5 * 1000.0)  # the sum: 5 of its 12 visits' worth
    assert numbers.min() == pytest.approx(5.0)  # the count
