"""ZetaSQL's older spelling (WITH ANONYMIZATION, the ANON_ aggregates, CLAMPED BETWEEN, kappa, k_threshold),
the options' NULL and δ = 1, and the JSON reports (issue 39): each read as the newer spelling is, so the
plan is the same, and every refusal comes from the text alone, before any spend."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.dpselect.parse import parse_dp_select
from zetasql_check import corpus_database

OLD = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, {options}) {select} FROM units_shared"
NEW = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, {options}) {select} FROM units_shared"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = corpus_database(tmp_path_factory.mktemp("anon") / "db")
    yield database
    database.close()


def _explain(db: Database, text: str) -> dict[str, object]:
    answer = engine.explain(db, text, analyst="a")
    return {k: v for k, v in answer.items() if k not in ("query", "normalized")}


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)", "SUM(dval, contribution_bounds_per_group => (0, 10))"),
        ("ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)", "AVG(ival, contribution_bounds_per_group => (2, 3))"),
        ("ANON_COUNT(* CLAMPED BETWEEN 0 AND 1)", "COUNT(*, contribution_bounds_per_group => (0, 1))"),
        ("ANON_COUNT(dval)", "COUNT(dval)"),
        (
            "ANON_VAR_POP(dval CLAMPED BETWEEN 2 AND 3)",
            "VAR_POP(dval, contribution_bounds_per_row => (2, 3))",
        ),
        ("ANON_STDDEV_POP(dval)", "STDDEV_POP(dval)"),
        (
            "ANON_PERCENTILE_CONT(dval, 0.4 CLAMPED BETWEEN 1 AND 3)",
            "PERCENTILE_CONT(dval, 0.4, contribution_bounds_per_row => (1, 3))",
        ),
    ],
)
def test_the_older_spelling_is_the_plan_of_the_newer(db: Database, older: str, newer: str) -> None:
    old = OLD.format(options="delta=1e-6, kappa=2", select=older)
    new = NEW.format(options="delta=1e-6, max_groups_contributed=2", select=newer)
    assert _explain(db, old) == _explain(db, new)


def test_k_threshold_stands_for_delta_in_the_older_spelling_only(db: Database) -> None:
    answer = engine.run(db, "a", OLD.format(options="k_threshold=1", select="ANON_SUM(dval)"))
    assert abs(answer.rows[0][0] - 11) < 1
    with pytest.raises(PrivdbError, match="delta or k_threshold"):
        parse_dp_select(OLD.format(options="kappa=1", select="ANON_SUM(dval)"))
    with pytest.raises(PrivdbError, match="k_threshold is an option of SELECT WITH ANONYMIZATION"):
        parse_dp_select(NEW.format(options="k_threshold=1", select="SUM(dval)"))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            OLD.format(options="k_threshold=1", select="SUM(dval) + ANON_QUANTILES(dval, 4)"),
            "array of quantiles",
        ),
        (NEW.format(options="delta=0", select="ANON_SUM(dval)"), "go with SELECT WITH ANONYMIZATION"),
        (OLD.format(options="k_threshold=1", select="ANON_SUM(dval CLAMPED BETWEEN 3 AND 1)"), "lower bound"),
        (OLD.format(options="k_threshold=1", select="ANON_SUM(dval CLAMPED BETWEEN @lo AND @hi)"), "number"),
        (OLD.format(options="k_threshold=1.5", select="ANON_SUM(dval)"), "whole number"),
        ("SELECT WITH ANONYMIZATION OPTIONS() ANON_SUM(dval) FROM units", "needs epsilon"),
        (NEW.format(options="delta=1.5", select="SUM(dval)"), "delta must be in [0, 1]"),
        (NEW.format(options="delta=0", select="SUM(dval, report_format => 'XML')"), "JSON or PROTO"),
        (OLD.format(options="delta=0", select="ANON_SUM(dval WITH REPORT(FORMAT=TEXT))"), "JSON or PROTO"),
        (
            OLD.format(options="delta=0", select="ANON_SUM(dval WITH REPORT(FORMAT=PROTO)).result"),
            "its fields here are value",
        ),
    ],
)
def test_refusals_say_why_and_spend_nothing(db: Database, text: str, words: str) -> None:
    spent = db.budget("a").epsilon_spent
    with pytest.raises(PrivdbError) as refused:
        engine.run(db, "a", text)
    assert words in refused.value.message
    assert db.budget("a").epsilon_spent == spent


def test_null_options_are_unset_and_delta_one_is_legal(db: Database) -> None:
    query = parse_dp_select(NEW.format(options="delta=1, max_groups_contributed=NULL", select="SUM(dval)"))
    assert query.delta == 1.0 and query.bigquery is not None and query.bigquery.max_groups is None
    answer = engine.run(db, "a", NEW.format(options="delta=1", select="SUM(dval)"))  # a total: no δ used
    assert answer.delta_spent == 0.0


@pytest.mark.parametrize(
    "select",
    [
        'SUM(dval, contribution_bounds_per_group => (0, 10), report_format => "JSON")',
        "ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT=JSON))",
    ],
)
def test_a_json_report_is_the_value_and_its_interval(db: Database, select: str) -> None:
    template = OLD if select.startswith("ANON_") else NEW
    answer = engine.run(db, "a", template.format(options="delta=1e-6", select=select))
    report = json.loads(answer.rows[0][0])["result"]
    interval = report["noise_confidence_interval"]
    assert interval["lower_bound"] <= report["value"] <= interval["upper_bound"]
    assert interval["confidence_level"] == 0.95 and abs(report["value"] - 11) < 1


def test_public_groups_release_the_public_keys_only(db: Database) -> None:
    """A RIGHT OUTER JOIN of a public table's keys: every key of it, those no unit has included too; a
    private table there is refused by DP-SELECT's relation check."""
    text = (
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=0, "
        "group_selection_strategy=PUBLIC_GROUPS) ival, "
        "COUNT(*, contribution_bounds_per_group => (0, 1)) AS n FROM units"
        " RIGHT OUTER JOIN (SELECT DISTINCT ival FROM rows_only) USING (ival) GROUP BY ival"
    )
    answer = engine.run(db, "a", text)
    assert sorted(row[0] for row in answer.rows) == [0, 1, 3, 4, 1234]
    with pytest.raises(PrivdbError):
        engine.run(db, "a", text.replace("FROM rows_only", "FROM units_shared"))
    left = text.replace("RIGHT OUTER JOIN", "LEFT JOIN")
    with pytest.raises(PrivdbError, match="public groups are read as"):
        engine.run(db, "a", left)


def test_delta_one_used_by_a_threshold_is_the_budgets_refusal(db: Database) -> None:
    spent = db.budget("a").epsilon_spent
    with pytest.raises(PrivdbError) as refused:
        engine.run(db, "a", NEW.format(options="delta=1", select="ival, COUNT(*) AS n") + " GROUP BY ival")
    assert refused.value.code == "budget_exhausted" and "smaller delta" in refused.value.message
    assert db.budget("a").epsilon_spent == spent
