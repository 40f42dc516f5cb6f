"""BigQuery's ``SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(…)`` beside DP-SELECT (issue 29).

The corpus (tests/bigquery_examples.py: their documented examples) answers or is refused as expected; where
it answers at ε = 1000 the answer is the plain SQL's (tests/test_truth_oracle.py's comparison: the same
groups, each value within 8 half-widths of its stated 95% interval); each example's plan is the plan of the
DP-SELECT it is read as (explain equal). Then the checks: a query's options never loosen the metadata's,
the privacy unit named must be the table's, and every refusal is free.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bigquery_examples import EXAMPLE_META, EXAMPLES, TABLES, Example, example_frame
from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.bigquery.plan import dp_select_text, translate
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.run.targets import DatabaseTables
from test_truth_oracle import compare

HUGE = 1000.0


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = Database(tmp_path_factory.mktemp("bq") / "db")
    for table in TABLES:
        database.backend.load_frame(table, example_frame())
        database.set_metadata(table, EXAMPLE_META)
    database.backend.load_frame("rows", example_frame().drop(columns=["id"]))
    columns = {k: v for k, v in EXAMPLE_META["columns"].items() if k != "id"}
    database.set_metadata(
        "rows", {**EXAMPLE_META, "privacy_unit": None, "max_contributions": 1, "columns": columns}
    )
    wide = {**EXAMPLE_META, "max_groups": 3}
    database.backend.load_frame("wide", example_frame())
    database.set_metadata("wide", wide)
    database.grant("a", epsilon=1e9, delta=0.5)
    database.noise_source = seeded(29)
    yield database
    database.close()


def _outcome(db: Database, text: str) -> tuple[Any, ...]:
    try:
        result = engine.run(db, "a", text)
    except PrivdbError as err:
        return (err.code, err.message)
    return ("answers", tuple(result.columns))


def _huge(text: str) -> str:
    return re.sub(r"epsilon\s*=\s*[0-9.e+]+", f"epsilon={HUGE:g}", text, count=1)


def _table(text: str) -> str:
    return "view_on_professors" if "FROM view_on_professors" in text else "professors"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"ex{i:02d}" for i in range(len(EXAMPLES))])
def test_each_example_answers_or_is_refused_with_a_reason(db: Database, example: Example) -> None:
    outcome = _outcome(db, example.text)
    assert outcome[0] == example.outcome, (example.text, outcome)
    if example.outcome == "answers":
        assert outcome[1] == example.columns
    else:
        assert example.reason in outcome[1], outcome[1]


def test_the_corpus_counts() -> None:
    """The corpus as the report gives it: how many answer, how many are refused and for what."""
    answers = sum(e.outcome == "answers" for e in EXAMPLES)
    at_huge = sum(e.plain is not None for e in EXAMPLES)
    assert (len(EXAMPLES), answers, at_huge) == (38, 17, 33)


HUGE_EXAMPLES = [e for e in EXAMPLES if e.plain is not None]


@pytest.mark.parametrize("example", HUGE_EXAMPLES, ids=[f"ex{i:02d}" for i in range(len(HUGE_EXAMPLES))])
def test_at_a_huge_epsilon_an_example_is_plain_sql(db: Database, example: Example) -> None:
    assert example.plain is not None
    result = engine.run(db, "a", _huge(example.text))
    truth = db.owner_sql(example.plain.format(t=_table(example.text)))
    problems, _ = compare(result, truth)
    assert not problems, f"{example.text}: " + "; ".join(problems)


def _explain_without_text(db: Database, text: str) -> dict[str, Any]:
    answer = engine.explain(db, text, analyst="a")
    # implicit_bounds: the step before the plan where the query gives no bounds (privdb.sql.implicit)
    return {k: v for k, v in answer.items() if k not in ("query", "normalized", "implicit_bounds")}


@pytest.mark.parametrize("example", HUGE_EXAMPLES, ids=[f"ex{i:02d}" for i in range(len(HUGE_EXAMPLES))])
def test_the_plan_is_the_plan_of_its_dp_select(db: Database, example: Example) -> None:
    text = _huge(example.text)
    dp_select = dp_select_text(translate(parse_dp_select(text), DatabaseTables(db, "a")))
    assert dp_select.startswith("DP-SELECT 1000.0 DELTA 0.01 ")
    assert _explain_without_text(db, text) == _explain_without_text(db, dp_select)


def _spent(db: Database) -> float:
    return float(db.budget("a").epsilon_spent)


HEAD = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6{more}) "


BY_ITEM = "item, COUNT(*) AS n FROM professors GROUP BY item"
BAD_ORDER = "COUNT(*, contribution_bounds_per_group => (5, 1)) AS n FROM professors"
PER_GROUP_VAR = "VAR_POP(quantity, contribution_bounds_per_group => (0, 1)) AS v FROM professors"
MIXED = "AVG(quantity) AS a, VAR_POP(quantity) AS v FROM professors"


@pytest.mark.parametrize(
    ("more", "body", "code", "reason"),
    [
        (", max_groups_contributed=2", BY_ITEM, "invalid_parameter", "max_groups_contributed=1 or less"),
        (", kappa=4", BY_ITEM, "invalid_parameter", "never widen"),
        (", privacy_unit_column=item", BY_ITEM, "invalid_parameter", "privacy_unit_column=id"),
        (", privacy_unit_column=other.id", "COUNT(*) AS n FROM professors", "invalid_parameter",
         "privacy_unit_column=id"),
        (", privacy_unit_column=id", "COUNT(*) AS n FROM rows", "invalid_parameter", "has no privacy unit"),
        (", min_privacy_units_per_group=0", "COUNT(*) AS n FROM professors", "invalid_parameter",
         "whole number"),
        (", report_format=JSON", "COUNT(*) AS n FROM professors", "parse_error", "unknown option"),
        ("", BAD_ORDER, "invalid_parameter", "lower bound must be"),
        ("", PER_GROUP_VAR, "unsupported_query", "contribution_bounds_per_row"),
        ("", MIXED, "unsupported_query", "two queries"),
        ("", "MEDIAN(quantity) AS m FROM professors", "unsupported_query", "PERCENTILE_CONT"),
        ("", "COUNT(*, contribution_bounds_per_group => (2, 3)) AS n FROM rows", "invalid_parameter",
         "include that"),
        ("", "COUNT(*) AS n FROM nowhere", "unknown_table", ""),
    ],
)  # fmt: skip
def test_refusals_say_what_to_change_and_spend_nothing(
    db: Database, more: str, body: str, code: str, reason: str
) -> None:
    before = _spent(db)
    outcome = _outcome(db, HEAD.format(more=more) + body)
    assert outcome[0] == code and reason in outcome[1], outcome
    assert _spent(db) == before


def test_a_smaller_max_groups_contributed_tightens_the_plan(db: Database) -> None:
    """The owner allows 3 groups per professor; a query asking 1 gets a plan where one professor changes
    one group (and its units past 1 group are bounded), a query asking 3 the owner's plan."""
    body = "item, VAR_POP(quantity, contribution_bounds_per_row => (0, 100)) AS v FROM wide GROUP BY item"
    one = engine.explain(db, HEAD.format(more=", max_groups_contributed=1") + body, analyst="a")
    three = engine.explain(db, HEAD.format(more=", max_groups_contributed=3") + body, analyst="a")
    owner = engine.explain(
        db, "DP-SELECT 1 DELTA 1e-6 item, VAR_POP(quantity) AS v FROM wide GROUP BY item", "a"
    )
    assert {s["changed_groups"] for s in one["statistics"]} == {1}
    assert {s["changed_groups"] for s in three["statistics"]} == {3}
    assert "more than 1 groups" in one["truncation"]["what"]
    assert owner["statistics"] == three["statistics"]


def test_query_bounds_narrow_and_never_widen(db: Database) -> None:
    """Bounds wider than the metadata's [0, 100] give the metadata's plan; narrower ones a smaller noise."""
    wide = "AVG(quantity, contribution_bounds_per_group => (-1000, 1000)) AS a FROM professors"
    narrow = "AVG(quantity, contribution_bounds_per_group => (0, 10)) AS a FROM professors"
    none = "AVG(quantity) AS a FROM professors"

    def sensitivities(body: str) -> list[float]:
        return [s["sensitivity"] for s in engine.explain(db, HEAD.format(more="") + body, "a")["statistics"]]

    assert sensitivities(wide) == sensitivities(none)
    assert max(sensitivities(narrow)) < max(sensitivities(none))


def test_a_table_without_a_privacy_unit_clamps_each_row(db: Database) -> None:
    text = HEAD.format(more="").replace("epsilon=1", "epsilon=1000") + (
        "item, SUM(quantity, contribution_bounds_per_group => (0, 50)) AS s FROM rows GROUP BY item"
    )
    truth = db.owner_sql("SELECT item, SUM(LEAST(quantity, 50)) AS s FROM rows GROUP BY item")
    problems, _ = compare(engine.run(db, "a", text), truth)
    assert not problems, problems


def test_dp_select_is_unchanged_and_a_plain_select_still_refused(db: Database) -> None:
    assert _outcome(db, "DP-SELECT 1 COUNT(*) AS n FROM professors") == ("answers", ("n",))
    assert _outcome(db, "SELECT COUNT(*) FROM professors")[0] == "raw_access_denied"


def test_bounds_in_a_where_clause_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PrivdbError, match="select list"):
        parse_dp_select(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1) COUNT(*) AS n FROM t "
            "WHERE f(x, contribution_bounds_per_group => (0, 1))"
        )


def test_a_count_is_a_whole_number_as_bigquerys_int64(db: Database) -> None:
    """COUNT per privacy unit is a noisy sum of each unit's clamped count, released rounded (BigQuery's
    COUNT is an INT64); SUM and AVG stay real."""
    text = HEAD.format(more="") + (
        "item, COUNT(*, contribution_bounds_per_group => (0, 1)) AS n, "
        "AVG(quantity, contribution_bounds_per_group => (0, 100)) AS a FROM professors GROUP BY item"
    )
    result = engine.run(db, "a", text)
    assert result.rows and all(type(row[1]) is int for row in result.rows)
    assert not all(type(row[2]) is int for row in result.rows)
