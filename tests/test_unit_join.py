"""A join of a one-row-per-person table with a many-rows table on the unit (issue 30, J1): the many side is
aggregated per unit before the join (privdb.sql.run.eager) exactly when the query's keys and conditions read
the one side and its aggregates the many side, and its statistics equal the join-then-bound form's for any
data — bounds binding, and even a person with two rows where the metadata declares one.
"""

from __future__ import annotations

import pandas as pd
import pytest

from joinfixtures import frames, people_visits
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.run import targets
from privdb.sql.run.rewrite import engine_sql

EAGER = "AS m ON o.u = m.u"  # the join of the one side's rows to the many side's per-unit aggregates
J1 = "DP-SELECT 50 p.sex, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid"


def _bound_binding(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Visits over the bound (person 1: 12 visits of 3 kinds, m = 5, G = 2), and person 2 twice in people
    with one sex (the declared one row per person broken: the bound must still hold, the answer may differ
    from plain SQL but not between the two forms)."""
    people, visits = tables["people"], tables["visits"]
    extra_visits = pd.DataFrame({"pid": 1, "cost": [400.0, 900.0] * 6, "kind": ["gp", "dentist", "lab"] * 4})
    twice = people[people["pid"] == 2]
    return {
        **tables,
        "people": pd.concat([people, twice], ignore_index=True),
        "visits": pd.concat([visits, extra_visits], ignore_index=True),
    }


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    return people_visits(tmp_path_factory.mktemp("unit_join"), _bound_binding(frames(people=800, seed=5)))


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
    """Before noise, on data where the bounds bind and people breaks its declaration: equal."""
    plan, _ = engine.prepare(db, query)
    eager = targets.statistics_sql(db, plan)
    _, source, unit_rows, from_ = targets.plan_target(db, plan)
    joined = engine_sql(plan, source, unit_rows, from_)
    assert EAGER in eager and EAGER not in joined
    key_cols = [c for c in ("k0",) if "k0" in eager]
    frames_ = [db.backend.fetch(sql).sort_values(key_cols or ["t_over"]).reset_index(drop=True)
               for sql in (eager, joined)]  # fmt: skip
    pd.testing.assert_frame_equal(frames_[0], frames_[1], check_dtype=False, rtol=1e-9)
    assert frames_[0]["t_over"].sum() > 0  # the bounds bind (person 1 at least)
