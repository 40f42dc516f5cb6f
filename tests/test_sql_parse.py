"""DP-SELECT parsing and validation: every supported form, and bad input → the right error, nothing spent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import sqlglot

from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.front.limits import MAX_DEPTH, nesting
from sqlfixtures import make_db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = make_db(tmp_path_factory.mktemp("parse") / "db", people=2000)
    yield database
    database.close()


SUPPORTED = [
    "DP-SELECT 0.5 COUNT(*) FROM people",
    "dp-select 0.5 count(*) from people",
    "DP-SELECT 1e-1 COUNT(age) FROM people",
    "DP-SELECT 0.5 SUM(income), AVG(income) AS mean FROM people WHERE age > 30",
    "DP-SELECT 0.5 VARIANCE(income), VAR(age), STDDEV(income) FROM people",
    "DP-SELECT 0.5 COUNT(*) FROM people WHERE state IN ('CA', 'NY') AND NOT sex = 'F'",
    "DP-SELECT 0.5 COUNT(*) FROM people WHERE age BETWEEN 20 AND 30 OR education LIKE 'b%'",
    "DP-SELECT 0.5 COUNT(*) FROM people WHERE lower(state) = 'ca' AND age * 2 + 1 > abs(-40)",
    "DP-SELECT 0.5 state, COUNT(*) AS n FROM people GROUP BY state ORDER BY n DESC LIMIT 5",
    "DP-SELECT 0.5 FLOOR(age / 10) AS decade, AVG(income) FROM people GROUP BY FLOOR(age / 10)",
    "DP-SELECT 0.5 sex, education, COUNT(*) FROM people GROUP BY sex, education",
    "DP-SELECT 0.5 DELTA 1e-6 profession, COUNT(*) FROM tax_office GROUP BY profession",
    "DP-SELECT 0.5 COUNT(*) FROM people -- a comment",
    "/* leading comment */ DP-SELECT 0.5 COUNT(*) FROM people",
    "DP-SELECT 0.5 COUNT(*) FROM people WHERE state = 'Zoë ☃'",
    "DP-SELECT 0.5 state, COUNT(*) FROM people GROUP BY 1 ORDER BY 2",
]


@pytest.mark.parametrize("query", SUPPORTED)
def test_supported_forms_plan_without_spending(db: Database, query: str) -> None:
    before = db.budget("alice").epsilon_remaining
    plan = engine.explain(db, query)
    assert plan["epsilon"] == pytest.approx(parse_dp_select(query).epsilon)
    assert db.budget("alice").epsilon_remaining == before


BAD = [
    ("", "parse_error"),
    ("   ", "parse_error"),
    ("-- only a comment", "parse_error"),
    ("DP-SELECT -1 COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT 0 COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT nan COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT inf COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT 1e400 COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT 1e9 COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT 1 DELTA 2 COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT COUNT(*) FROM people", "invalid_parameter"),
    ("DP-SELECT 1", "parse_error"),
    ("DP-SELECT 1 COUNT(* FROM people", "parse_error"),
    ("SELECT * FROM people", "raw_access_denied"),
    ("SELECT COUNT(*) FROM people", "raw_access_denied"),
    ("DROP TABLE people", "parse_error"),
    ("DP-SELECT 1 COUNT(*) FROM people; DROP TABLE people", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE 1 = 1; DELETE FROM people", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM nope", "unknown_table"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE agee > 3", "unknown_column"),
    ("DP-SELECT 1 SUM(wealth) FROM people", "unknown_column"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN tax_office t ON p.age = t.age", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT * FROM people LIMIT 5)", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE age > (SELECT AVG(age) FROM people)", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) OVER () FROM people", "unsupported_query"),
    ("DP-SELECT 1 age, COUNT(*) FROM people GROUP BY state", "unsupported_query"),
    ("DP-SELECT 1 pid FROM people GROUP BY pid", "unsupported_query"),
    ("DP-SELECT 1 SUM(income) OVER () FROM people", "unsupported_query"),
    ("DP-SELECT 1 SUM(income / (age - 30)) FROM people", "unsupported_query"),
    ("DP-SELECT 1 SUM(DISTINCT income) FROM people", "unsupported_query"),
    ("DP-SELECT 1 STRING_AGG(state, ',') FROM people", "unsupported_query"),
    ("DP-SELECT 1 QUANTILE(age, 2) FROM people", "invalid_parameter"),
    ("DP-SELECT 1 SUM(state) FROM people", "unsupported_query"),
    ("DP-SELECT 1 SUM(pid) FROM people", "unsupported_query"),
    ("DP-SELECT 1 pid, COUNT(*) FROM people GROUP BY pid", "unsupported_query"),
    ("DP-SELECT 1 profession, COUNT(*) FROM tax_office GROUP BY profession", "invalid_parameter"),
    ("DP-SELECT 1 SUM(postcode) FROM tax_office", "invalid_parameter"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE read_csv('/etc/passwd') IS NOT NULL", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE getenv('HOME') = 'x'", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE age > 'old'", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE age IN (1, 'x')", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE age + state > 3", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE age > (SELECT AVG(age) FROM people)", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people ORDER BY income", "unsupported_query"),
    ("DP-SELECT 1 COUNT(*) FROM people UNION SELECT 1", "unsupported_query"),
]


@pytest.mark.parametrize(("query", "code"), BAD)
def test_bad_queries_get_the_right_code_and_change_nothing(db: Database, query: str, code: str) -> None:
    before = db.budget("alice")
    rows_before = db.backend.raw("SELECT COUNT(*) AS n FROM people")["n"].iloc[0]
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "alice", query)
    assert err.value.code == code, err.value.message
    assert "Traceback" not in err.value.message
    assert db.budget("alice") == before
    assert db.backend.raw("SELECT COUNT(*) AS n FROM people")["n"].iloc[0] == rows_before
    assert set(db.backend.tables()) == {"people", "tax_office"}


def test_parse_errors_point_at_the_spot() -> None:
    with pytest.raises(PrivdbError) as err:
        parse_dp_select("DP-SELECT nan COUNT(*) FROM t")
    assert "line 1" in err.value.message and "^^^" in err.value.message


@pytest.mark.parametrize(
    ("query", "message"),
    [
        # a reserved word as a column's name: the fix, not sqlglot's "Required keyword … missing for …"
        (
            "DP-SELECT 1 age, COUNT(*) FROM people GROUP BY limit",
            "'limit' is a reserved word of SQL; if it names a column, quote it with double quotes: \"limit\""
            " (line 1, column 48)\n  DP-SELECT 1 age, COUNT(*) FROM people GROUP BY limit\n"
            + " " * 49
            + "^^^^^",
        ),
        (
            "DP-SELECT 1 COUNT(*)\nFROM people WHERE select = 1",
            "'select' is a reserved word of SQL; if it names a column, quote it with double quotes: "
            '"select" (line 2, column 19)',
        ),
        (
            "DP-SELECT 1 COUNT(*) FROM people UNION SELECT COUNT(*) FROM people",
            "UNION: DP-SELECT answers one SELECT (set operations are not supported); run the parts as "
            "separate DP-SELECT queries and combine their answers",
        ),
        (
            "DP-SELECT 1 COUNT(*) FROM people INTERSECT SELECT COUNT(*) FROM people",
            "INTERSECT: DP-SELECT answers",
        ),
        ("DP-SELECT 1 COUNT(*) FROM people EXCEPT SELECT COUNT(*) FROM people", "EXCEPT: DP-SELECT answers"),
        (
            "DP-SELECT 1 PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY income) FROM people",
            "PERCENTILE_CONT(…) WITHIN GROUP (ORDER BY …) is not supported; write QUANTILE(income, 0.9)",
        ),
        (
            "DP-SELECT 1 percentile_disc(0.25) WITHIN GROUP (ORDER BY age DESC) FROM people",
            "write QUANTILE(age, 0.75)",
        ),
    ],
)
def test_newcomers_sql_gets_a_message_that_says_what_to_write(db: Database, query: str, message: str) -> None:
    """Issue 27: a reserved word, a set operation and WITHIN GROUP got sqlglot's raw messages; free."""
    before = db.budget("alice")
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "alice", query)
    assert message in err.value.message and "sqlglot" not in err.value.message
    assert db.budget("alice") == before


def test_a_quoted_reserved_word_is_a_column(tmp_path: Path) -> None:
    with Database(tmp_path / "db") as database:
        database.backend.raw("SELECT 1")  # opens the database
        database.backend.load_frame("t", pd.DataFrame({"limit": [i % 5 for i in range(100)]}))
        database.set_metadata("t", {"columns": {"limit": {"type": "int", "lower": 0, "upper": 4}}})
        database.grant("a", epsilon=10)
        result = engine.run(database, "a", 'DP-SELECT 1 "limit", COUNT(*) FROM t GROUP BY "limit"')
        assert len(result.to_pandas()) == 5


def test_normalised_text_ignores_spacing_case_and_comments() -> None:
    a = parse_dp_select("DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 3")
    b = parse_dp_select("dp-select   0.50  count(*)   from people  where age>3 -- why not")
    assert a.normalized == b.normalized


def test_unknown_analyst_is_unauthorized(db: Database, tmp_path: Path) -> None:
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "mallory", "DP-SELECT 1 COUNT(*) FROM people")
    assert err.value.code == "unauthorized"


def test_nesting_counts_openers_and_prefix_operators_without_recursion() -> None:
    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize
    assert nesting(tokens("SELECT (a + (b)) * [1]")) == 2
    assert nesting(tokens("SELECT a - b - -c")) == 1  # binary minus, then one prefix minus
    assert nesting(tokens("SELECT - - a, NOT NOT b")) == 2
    assert nesting(tokens("SELECT NOT (a), -(b)")) == 2  # the operator and its parenthesis
    assert nesting(tokens("SELECT CASE WHEN a THEN {'x': 1} END")) == 2
    assert nesting(tokens("SELECT " + "(" * 100_000 + ")" * 100_000)) == 100_000  # no recursion


def test_the_nesting_limit_is_exact() -> None:
    def query(depth: int) -> str:
        return "DP-SELECT 1 COUNT(*) FROM people WHERE " + "abs(" * depth + "age" + ")" * depth + " > 1"

    assert parse_dp_select(query(MAX_DEPTH)).epsilon == 1
    with pytest.raises(PrivdbError, match=f"nests more than {MAX_DEPTH} levels") as err:
        parse_dp_select(query(MAX_DEPTH + 1))
    assert err.value.code == "parse_error"
