"""ZetaSQL's group selection and reports in BigQuery's spelling (issue 39): groups and a total's row released
by the noisy count of distinct privacy units, ``k_threshold`` and ``min_privacy_units_per_group`` raising
the threshold (privdb.sql.plan.selection), and PROTO reports and report fields read in SQL
(privdb.sql.front.bigquery.report). The tables are tests/zetasql_corpus.py's: in ``units`` the groups of
``ival`` hold 3, 3, 2, 1 and 1 units."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from zetasql_check import corpus_database

OLD = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, {options}) {select} FROM units"
NEW = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, {options}) {select} FROM units"
GROUPED = "ival, COUNT(*, contribution_bounds_per_group => (0, 1)) AS n"


@pytest.fixture
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = corpus_database(tmp_path_factory.mktemp("selection") / "db")
    yield database
    database.close()


def _groups(db: Database, text: str) -> dict[object, float]:
    return {row[0]: row[1] for row in engine.run(db, "a", text).rows}


def test_groups_are_selected_by_their_noisy_count_of_units(db: Database) -> None:
    """At ε = 1000 the noisy count of units is the count: the groups of 3 units pass τ ≈ 2 (one unit adds 1
    to a group's count of units), those of 1 do not; DP-SELECT's own rule counts rows (up to 10 a unit)."""
    answer = _groups(db, NEW.format(options="delta=1e-3", select=GROUPED) + " GROUP BY ival")
    assert sorted(answer) == [1, 2] and all(abs(n - 3) < 0.5 for n in answer.values())
    plan = engine.explain(db, NEW.format(options="delta=1e-3", select=GROUPED) + " GROUP BY ival", "a")
    assert [s["kind"] for s in plan["statistics"]][-1] == "distinct_unit"  # type: ignore[index]


@pytest.mark.parametrize(("units", "released"), [(1, [1, 2]), (3, [1, 2]), (4, [])])
def test_min_privacy_units_per_group_raises_the_threshold(
    db: Database, units: int, released: list[int]
) -> None:
    options = f"delta=1e-3, min_privacy_units_per_group={units}"
    assert sorted(_groups(db, NEW.format(options=options, select=GROUPED) + " GROUP BY ival")) == released
    older = OLD.format(options=options, select="ival, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1)")
    assert sorted(_groups(db, older + " GROUP BY ival")) == released


def test_the_threshold_is_raised_to_m(db: Database) -> None:
    def tau(options: str) -> float:
        plan = engine.explain(db, NEW.format(options=options, select=GROUPED) + " GROUP BY ival", "a")
        return float(str(plan["keys"]).split("noisy threshold τ = ")[1].split(" ")[0])

    base = tau("delta=1e-3")  # 1 + t + 1: one unit, the δ term, a grid step
    assert tau("delta=1e-3, min_privacy_units_per_group=5") == 5
    assert tau("delta=1e-3, min_privacy_units_per_group=1") == pytest.approx(base, rel=1e-3)


def test_a_threshold_raised_by_m_spends_only_the_delta_it_needs(db: Database) -> None:
    """At δ = 1 with M = 3, τ = 3 bounds a one-unit group's release probability by q²/(1 + q) per group:
    that is charged (far below any budget's δ at this ε), not δ = 1; M = 1 bounds nothing (refused)."""
    query = NEW.format(options="delta=1, min_privacy_units_per_group=3", select=GROUPED) + " GROUP BY ival"
    answer = engine.run(db, "a", query)
    assert sorted(row[0] for row in answer.rows) == [1, 2]
    assert 0 < answer.delta_spent < 1e-30
    with pytest.raises(PrivdbError) as refused:
        engine.run(db, "a", query.replace("group=3", "group=1"))
    assert refused.value.code == "budget_exhausted"
    plain = engine.run(db, "a", NEW.format(options="delta=1e-3", select=GROUPED) + " GROUP BY ival")
    assert plain.delta_spent == 1e-3  # δ's own τ: δ itself


@pytest.mark.parametrize(
    ("spelling", "options", "rows"),
    [
        (OLD.replace("=1000", "=100"), "delta=1e-220", 0),  # τ past the 10 units: delta_eliminates_row
        (OLD, "k_threshold=100", 0),
        (OLD, "k_threshold=1", 1),
        (NEW, "delta=1e-6", 1),
        (NEW, "delta=1e-6, min_privacy_units_per_group=11", 0),
        (NEW, "delta=0", 1),  # no selection asked: a total is one row, as DP-SELECT's
    ],
)
def test_a_total_is_thresholded_as_zetasql_does_and_spends_no_delta(
    db: Database, spelling: str, options: str, rows: int
) -> None:
    select = "ANON_SUM(dval)" if "ANONYMIZATION" in spelling else "SUM(dval)"
    answer = engine.run(db, "a", spelling.format(options=options, select=select))
    assert len(answer.rows) == rows
    assert answer.delta_spent == 0.0  # the one row reveals no key: post-processing of an ε-DP count


def test_a_proto_report_and_its_fields(db: Database) -> None:
    text = NEW.format(
        options="delta=0",
        select="SUM(dval, contribution_bounds_per_group => (0, 10), report_format => 'PROTO') AS s, "
        "COUNT(*, contribution_bounds_per_group => (0, 1), report_format => 'PROTO').value.int_value AS n",
    )
    s, n = engine.run(db, "a", text).rows[0]
    report = json.loads(s)["value"]
    interval = report["noise_confidence_interval"]
    assert interval["lower_bound"] <= report["float_value"] <= interval["upper_bound"]
    assert abs(report["float_value"] - 13) < 1 and interval["confidence_level"] == 0.95
    assert n == 10  # a count is a whole number: PROTO's int_value, read as a number
    field = OLD.format(
        options="delta=1e-6",
        select="ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT=JSON))"
        ".result.noise_confidence_interval",
    )
    interval = json.loads(engine.run(db, "a", field).rows[0][0])
    assert set(interval) == {"lower_bound", "upper_bound", "confidence_level"}


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ("delta=1e-6, min_privacy_units_per_group=0", "whole number ≥ 1"),
        ("delta=1e-6, min_privacy_units_per_group=2.5", "whole number ≥ 1"),
        (
            "delta=1e-6, min_privacy_units_per_group=2, group_selection_strategy=PUBLIC_GROUPS",
            "PUBLIC_GROUPS",
        ),
    ],
)
def test_selection_refusals_spend_nothing(db: Database, options: str, words: str) -> None:
    spent = db.budget("a").epsilon_spent
    with pytest.raises(PrivdbError, match=words):
        engine.run(db, "a", NEW.format(options=options, select="SUM(dval)"))
    with pytest.raises(PrivdbError, match="cannot go together"):
        engine.run(
            db,
            "a",
            OLD.format(options="k_threshold=2, min_privacy_units_per_group=2", select="ANON_SUM(dval)"),
        )
    assert db.budget("a").epsilon_spent == spent


def test_a_union_all_of_dp_queries_is_their_rows_with_their_intervals(db: Database) -> None:
    first = NEW.format(options="delta=0", select="SUM(dval, contribution_bounds_per_group => (0, 10))")
    second = "DP-SELECT 1 COUNT(*) FROM units"
    answer = engine.run(db, "a", f"{first} UNION ALL {second}")
    assert len(answer.rows) == 2 and answer.epsilon_spent == pytest.approx(1001)
    intervals = answer.accuracy[0]["ci95_rows"]
    assert all(low <= row[0] <= high for row, (low, high) in zip(answer.rows, intervals, strict=True))
    spent = db.budget("a").epsilon_spent
    with pytest.raises(PrivdbError, match="as many columns"):
        engine.run(db, "a", f"{first} UNION ALL DP-SELECT 1 COUNT(*), SUM(ival) FROM units")
    with pytest.raises(PrivdbError, match="not public"):
        engine.run(db, "a", f"{first} UNION ALL SELECT SUM(dval) FROM units")
    assert db.budget("a").epsilon_spent == spent
