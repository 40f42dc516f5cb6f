"""ZetaSQL's arrays of quantiles (issue 39): ANON_QUANTILES / APPROX_QUANTILES as a list answer, its
elements read in the query and in plain SQL around it, its reports, and the refusals (free)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privdb.database import Database
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql import engine
from zetasql_check import corpus_database

OLDER = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=100, delta=1.0) {} FROM units_shared"
NEWER = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=100, delta=1.0) {} FROM units_shared"
ARRAY = "ANON_QUANTILES(dval, 4 CLAMPED BETWEEN 1 AND 3)"


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return corpus_database(tmp_path / "db")


def test_an_array_is_a_list_column_with_each_elements_interval(db: Database) -> None:
    result = engine.run(db, "a", OLDER.format(f"{ARRAY} AS q"))
    assert result.columns == ["q"]
    values = result.rows[0][0]
    assert isinstance(values, list) and len(values) == 5 and all(1 <= v <= 3 for v in values)
    (entry,) = result.accuracy
    assert entry["epsilon"] == pytest.approx(sum(e["epsilon"] for e in entry["elements"]))
    assert len(entry["elements_ci95_rows"][0]) == 5
    assert json.loads(json.dumps(result.to_dict()))["rows"][0][0] == values  # a JSON list
    assert result.to_arrow().schema.field("q").type.value_type is not None  # an Arrow list


def test_the_newer_spelling_reads_elements_and_the_length(db: Database) -> None:
    bounds = "contribution_bounds_per_row => (1, 3)"
    query = NEWER.format(
        f"ARRAY_LENGTH(APPROX_QUANTILES(dval, 4, {bounds})), APPROX_QUANTILES(ival, 4, {bounds})[ORDINAL(5)]"
    )
    result = engine.run(db, "a", query)
    assert result.rows[0][0] == 5 and 1 <= result.rows[0][1] <= 3


def test_plain_sql_reads_the_released_list(db: Database) -> None:
    inner = OLDER.format(f"{ARRAY} AS q")
    query = f"SELECT q[OFFSET(0)], q[ORDINAL(5)], ARRAY_LENGTH(q), q[SAFE_OFFSET(9)] FROM ({inner})"
    first, last, length, beyond = engine.run(db, "a", query).rows[0]
    assert 1 <= first <= 3 and 1 <= last <= 3 and length == 5 and beyond is None


def test_a_report_is_one_per_element(db: Database) -> None:
    inner = OLDER.format(
        "ANON_QUANTILES(dval, 2 CLAMPED BETWEEN 1 AND 3 WITH REPORT(FORMAT=PROTO)).values.values AS r"
    )
    (row,) = engine.run(db, "a", inner).rows
    assert len(row[0]) == 3 and set(row[0][0]) == {"float_value", "noise_confidence_interval"}
    outer = f"SELECT r[OFFSET(1)].noise_confidence_interval.confidence_level FROM ({inner})"
    assert engine.run(db, "a", outer).rows == [[0.95]]


def test_an_expression_over_several_counts_charges_each_once(db: Database) -> None:
    query = (
        "SELECT WITH ANONYMIZATION OPTIONS(epsilon=10, k_threshold=1) "
        "IF(ANON_COUNT(*) > 0, ANON_COUNT(*), ANON_COUNT(1/(ival-1))) "
        "FROM units CROSS JOIN UNNEST([1,2,3]) AS x"
    )
    plan, _ = engine.prepare(db, query, "a")
    assert plan.query.body().count("COUNT(") == 2  # two distinct aggregates, the repeated one once
    assert engine.run(db, "a", query).epsilon_spent == 10.0


@pytest.mark.parametrize(
    ("item", "error", "words"),
    [
        (
            "ANON_QUANTILES(dval, 4 CLAMPED BETWEEN 1 AND 3)[OFFSET(5)]",
            InvalidParameter,
            "index is from 0 to 4",
        ),
        ("ANON_QUANTILES(dval, 0 CLAMPED BETWEEN 1 AND 3)", InvalidParameter, "whole-number literal from 1"),
        (f"{ARRAY} + 1", UnsupportedQuery, "an array of quantiles is read here as"),
        (f"{ARRAY}[2]", UnsupportedQuery, "read an element as"),
        ("ANON_PERCENTILE_CONT(dval, 0.5 CLAMPED BETWEEN @lower AND 3)", InvalidParameter, "query parameter"),
    ],
)
def test_refusals_are_free(db: Database, item: str, error: type[Exception], words: str) -> None:
    before = db.budget("a")
    with pytest.raises(error) as err:
        engine.run(db, "a", OLDER.format(item))
    assert words in str(err.value)
    assert db.budget("a") == before


def test_the_http_answer_carries_the_array_as_a_json_list(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from privdb.server.app import create_app

    database = corpus_database(tmp_path / "db")
    token = database.grant("b", epsilon=100.0, delta=0.5)
    database.close()
    query = OLDER.format(f"{ARRAY} AS q")
    with TestClient(create_app(tmp_path / "db")) as client:
        answer = client.post("/v1/query", json={"sql": query}, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        (values,) = answer.json()["rows"][0]
        assert isinstance(values, list) and len(values) == 5
        outer = f"SELECT ARRAY_LENGTH(q), q[ORDINAL(1)] FROM ({query})"  # the stored answer, free
        again = client.post("/v1/query", json={"sql": outer}, headers={"Authorization": f"Bearer {token}"})
        assert again.json()["rows"] == [[5, values[0]]] and again.json()["epsilon_spent"] == 0.0
