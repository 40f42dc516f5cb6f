"""Named query parameters (privdb.sql.front.parameters): BigQuery's ``@name`` bound as literals before the
query is read, through the library, the HTTP API's ``"parameters"`` and the CLI's ``--param``; a missing or
unused value is refused, free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from privdb.database import Database
from privdb.errors import InvalidParameter, PrivdbError
from privdb.sql import engine
from privdb.sql.front.parameters import bind_parameters
from zetasql_check import corpus_database

QUERY = (
    "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1) "
    "ANON_PERCENTILE_CONT(dval, 0.4 CLAMPED BETWEEN @lower AND @upper) FROM units_shared"
)


def test_values_are_written_in_as_literals() -> None:
    text = "SELECT @a, @B, '@a', \"x\" FROM t WHERE s = @s AND f = @f AND n IS @n AND b = @b"
    bound = bind_parameters(text, {"a": 1, "b": 2.5, "s": "it's", "f": False, "n": None})
    assert (
        bound == "SELECT 1, 2.5, '@a', \"x\" FROM t WHERE s = 'it''s' AND f = FALSE AND n IS NULL AND b = 2.5"
    )
    assert bind_parameters(text, None) == text


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"lower": 1}, "@upper has no value"),
        ({"lower": 1, "upper": 3, "other": 2}, "@other are not in the query"),
        ({"lower": float("nan"), "upper": 3}, "must be finite"),
        ({"lower": [1], "upper": 3}, "give a number"),
    ],
)
def test_a_missing_unused_or_odd_value_is_refused(values: dict[str, object], words: str) -> None:
    with pytest.raises(InvalidParameter, match=words):
        bind_parameters(QUERY, values)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return corpus_database(tmp_path / "db")


def test_the_library_answers_as_with_the_numbers_written(db: Database) -> None:
    bound = engine.run(db, "a", QUERY, parameters={"lower": 1, "upper": 3})
    written = engine.run(db, "a", QUERY.replace("@lower", "1").replace("@upper", "3"))
    assert written.cached and written.rows == bound.rows  # one question: the stored answer, free
    before = float(db.budget("a").epsilon_spent)
    with pytest.raises(PrivdbError, match="with no value"):
        engine.run(db, "a", QUERY)
    assert float(db.budget("a").epsilon_spent) == before


def test_http_takes_parameters_beside_the_sql(db: Database, tmp_path: Path) -> None:
    from privdb.server.app import create_app

    token = db.grant("b", epsilon=5000.0, delta=0.5)
    db.close()
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(tmp_path / "db")) as client:
        body = {"sql": QUERY, "parameters": {"lower": 1, "upper": 3}}
        answer = client.post("/v1/query", json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        half = client.post("/v1/query", json={"sql": QUERY, "parameters": {"lower": 1}}, headers=headers)
        assert half.status_code == 400 and json.loads(half.text)["error"]["code"] == "invalid_parameter"
        odd = client.post("/v1/query", json={"sql": QUERY, "parameters": {"lower": [1]}}, headers=headers)
        assert odd.status_code in (400, 422) and "error" in json.loads(odd.text)


def test_the_cli_reads_name_value_pairs() -> None:
    from privdb.cli.analyst import _parameters

    assert _parameters(["lower=1", "@upper=2.5", "name=Ann", "on=true", "none=null"]) == {
        "lower": 1, "upper": 2.5, "name": "Ann", "on": True, "none": None,
    }  # fmt: skip
    with pytest.raises(InvalidParameter, match="name=value"):
        _parameters(["lower"])
