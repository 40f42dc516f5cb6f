"""Plain SELECTs by analysts over public tables (``public: true``): the rows, free; anything touching a
private table, a table outside the grant, a file or a schema is refused before any data is read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.errors import (
    Forbidden,
    InvalidParameter,
    ParseError,
    PrivdbError,
    RawAccessDenied,
    UnsupportedQuery,
)
from privdb.sql import engine
from privdb.sql.front.limits import MAX_QUERY_LENGTH
from privdb.sql.public import answer as public
from privdb.sql.public.answer import MAX_RESULT_ROWS, answer_public, is_plain_select

REGIONS = pd.DataFrame({"code": [1, 2, 3], "name": ["North", "South", "East"]})


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "db")
    database.backend.load_frame("regions", REGIONS)
    database.set_metadata("regions", {"public": True, "columns": {"code": {"type": "int"}}})
    database.backend.load_frame("zones", pd.DataFrame({"zone": ["a", "b"]}))
    database.set_metadata("zones", {"public": True})
    database.backend.load_frame(
        "people",
        pd.DataFrame({"pid": range(6), "region": [1, 2, 1, 3, 1, 2], "age": [30, 41, 52, 23, 35, 67]}),
    )
    database.set_metadata(
        "people", {"privacy_unit": "pid", "columns": {"age": {"type": "int", "lower": 0, "upper": 100}}}
    )
    database.grant("alice", epsilon=5, delta=1e-6)
    database.grant("sam", epsilon=5, tables=["people", "zones"])  # scoped: regions is outside the grant
    yield database
    database.close()


# ---------------------------------------------------------------- what counts as a plain SELECT


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("SELECT * FROM regions", True),
        ("  -- a comment\n  select 1", True),
        ("FROM regions", True),
        ("WITH r AS (SELECT * FROM regions) SELECT * FROM r", True),
        ("WITH r AS (SELECT * FROM people) DP-SELECT 1 COUNT(*) FROM r", False),
        ("DP-SELECT 1 COUNT(*) FROM people", False),
        ("SELECT 'unterminated", False),
        ("PRAGMA database_list", False),
        ("COPY regions TO 'x.csv'", False),
        ("SELECT " + "1 + " * 50_000 + "1", False),  # too long: the DP-SELECT parser gives the length error
    ],
)
def test_is_plain_select(text: str, plain: bool) -> None:
    assert is_plain_select(text) is plain


# ---------------------------------------------------------------- public tables are read, free


def test_an_analyst_reads_a_public_table_free(db: Database) -> None:
    before = db.budget("alice")
    res = answer_public(db, "alice", "SELECT code, name FROM regions ORDER BY code DESC")
    assert res.columns == ["code", "name"]
    assert res.rows == [[3, "East"], [2, "South"], [1, "North"]]
    assert (res.epsilon_spent, res.delta_spent, res.accuracy) == (0.0, 0.0, [])
    assert res.extra == {"public": True}
    assert res.budget == {"epsilon_remaining": 5.0, "delta_remaining": 1e-6}
    assert db.budget("alice") == before
    assert db.ledger.spends("alice", db.name) == []
    assert res.to_dict()["public"] is True


@pytest.mark.parametrize(
    "text",
    [
        "FROM regions WHERE code > 1",
        "SELECT r.name, z.zone FROM regions AS r CROSS JOIN zones AS z WHERE r.code = 1",
        "WITH r AS (SELECT * FROM regions) SELECT COUNT(*) AS n FROM r",
        "SELECT name FROM regions WHERE code IN (SELECT MAX(code) FROM regions)",
        "SELECT name FROM regions UNION ALL SELECT zone FROM zones",
        "WITH people AS (SELECT * FROM regions) SELECT name FROM people",  # a CTE named like a private table
        "WITH regions AS (SELECT * FROM regions WHERE code = 1) SELECT name FROM regions",
        "SELECT 1 + 1 AS two",
    ],
)
def test_queries_over_public_tables_only_run(db: Database, text: str) -> None:
    res = answer_public(db, "alice", text)
    assert res.rows and res.epsilon_spent == 0


def test_values_are_json_ready(db: Database) -> None:
    res = answer_public(db, "alice", "SELECT 1.5 AS d, DATE '2024-01-02' AS day, 'nan'::DOUBLE AS x")
    assert res.rows == [[1.5, "2024-01-02", None]]


# ---------------------------------------------------------------- private tables are refused


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM people",
        "SELECT * FROM regions JOIN people ON code = region",
        "SELECT * FROM regions, people",
        "SELECT name FROM regions WHERE code IN (SELECT region FROM people)",
        "SELECT (SELECT COUNT(*) FROM people) AS n",
        "WITH p AS (SELECT * FROM people) SELECT * FROM p",
        "WITH regions AS (SELECT * FROM people) SELECT * FROM regions",
        "SELECT name FROM regions UNION SELECT CAST(age AS VARCHAR) FROM people",
        "FROM PEOPLE",
    ],
)
def test_a_select_touching_a_private_table_is_refused(db: Database, text: str) -> None:
    with pytest.raises(RawAccessDenied) as refused:
        answer_public(db, "alice", text)
    assert refused.value.message == (
        "table 'people' is not public: a plain SELECT would return raw rows; analysts ask with "
        "DP-SELECT, e.g. DP-SELECT 0.5 COUNT(*) FROM people; plain SELECT reads only public tables "
        "(metadata public: true)"
    )
    assert db.budget("alice").epsilon_spent == 0


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM range(10)",
        "SELECT * FROM regions, LATERAL read_csv('/etc/passwd')",
        "SELECT * FROM regions WHERE name IN (SELECT * FROM read_text('/etc/passwd'))",
    ],
)
def test_table_functions_are_refused(db: Database, text: str) -> None:
    with pytest.raises(UnsupportedQuery, match="table functions"):
        answer_public(db, "alice", text)


@pytest.mark.parametrize(
    ("text", "error", "needle"),
    [
        ("SELECT * FROM main.regions", UnsupportedQuery, "without a schema"),
        ("SELECT * FROM memory.main.regions", UnsupportedQuery, "without a schema"),
        ("SELECT * FROM '/etc/passwd'", PrivdbError, "no table"),
        ("SELECT * INTO copy FROM regions", UnsupportedQuery, "INTO"),
        ("SELECT 1; SELECT 2", UnsupportedQuery, "one statement"),
        ("SELECT * FROM", ParseError, "."),
        ("SELECT nosuch FROM regions", ParseError, "nosuch"),
        ("SELECT " + "(" * 40 + "1" + ")" * 40, ParseError, "nests more than"),
        ("SELECT 1 " + " " * MAX_QUERY_LENGTH, ParseError, "characters long"),
    ],
)
def test_other_refusals(db: Database, text: str, error: type[PrivdbError], needle: str) -> None:
    with pytest.raises(error, match=needle):
        answer_public(db, "alice", text)


def test_the_sandbox_reads_no_files_and_keeps_its_settings(db: Database) -> None:
    """Behind the checks: even SQL that reached the sandbox could read no file nor unlock it."""
    con = public._sandbox(db, {"regions": db.backend_for("regions")}, lambda: None)
    try:
        assert con.execute("SELECT COUNT(*) FROM regions").fetchone() == (3,)
        assert con.execute("SHOW TABLES").fetchall() == [("regions",)]
        for sql in (
            "SELECT * FROM read_csv('/etc/passwd')",
            "SET enable_external_access = true",
            "SET lock_configuration = false",
            "ATTACH '/tmp/x.duckdb'",
            "INSTALL httpfs",
        ):
            with pytest.raises(duckdb.Error):
                con.execute(sql)
    finally:
        con.close()


def test_a_scoped_analyst_reads_only_granted_public_tables(db: Database) -> None:
    assert answer_public(db, "sam", "SELECT zone FROM zones").rows == [["a"], ["b"]]
    messages = []
    for table in ("regions", "nosuch"):
        with pytest.raises(Forbidden) as refused:
            answer_public(db, "sam", f"SELECT * FROM {table}")
        messages.append(refused.value.message.replace(table, "T"))
    assert messages[0] == messages[1]
    assert "regions" not in messages[1]
    with pytest.raises(RawAccessDenied):
        answer_public(db, "sam", "SELECT * FROM people")


def test_an_unknown_analyst_is_refused(db: Database) -> None:
    with pytest.raises(PrivdbError, match="unknown analyst") as refused:
        answer_public(db, "mallory", "SELECT 1")
    assert refused.value.code == "unauthorized"


# ---------------------------------------------------------------- limits


def test_results_are_cut_at_ten_thousand_rows(db: Database) -> None:
    db.owner_sql("CREATE TABLE numbers AS SELECT range AS i FROM range(10050)")
    db.set_metadata("numbers", {"public": True})
    res = answer_public(db, "alice", "SELECT i FROM numbers ORDER BY i")
    assert len(res.rows) == MAX_RESULT_ROWS and res.rows[-1] == [MAX_RESULT_ROWS - 1]
    assert res.extra == {"public": True, "truncated": True}
    assert "truncated" not in answer_public(db, "alice", "SELECT i FROM numbers LIMIT 10000").extra


def test_public_tables_of_more_than_a_million_rows_are_refused(db: Database) -> None:
    db.owner_sql("CREATE TABLE big AS SELECT range AS i FROM range(1000001)")
    db.set_metadata("big", {"public": True})
    with pytest.raises(UnsupportedQuery, match="more than 1,000,000 rows"):
        answer_public(db, "alice", "SELECT COUNT(*) FROM big")


def test_the_query_timeout_applies(db: Database) -> None:
    db.owner_sql("CREATE TABLE wide AS SELECT range AS i FROM range(200000)")
    db.set_metadata("wide", {"public": True})
    db.query_timeout = 0.3
    with pytest.raises(UnsupportedQuery, match="ran longer than"):
        answer_public(db, "alice", "SELECT SUM((a.i * b.i) % 7) FROM wide a, wide b")


def test_a_public_table_has_no_privacy_unit(db: Database, tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("pid,code\n1,2\n")
    with pytest.raises(InvalidParameter, match="a public table has no privacy unit"):
        db.load("lookup", tmp_path / "r.csv", {"public": True, "privacy_unit": "pid"})
    with pytest.raises(InvalidParameter, match="a public table has no privacy unit"):
        db.load(
            "lookup",
            tmp_path / "r.csv",
            {"public": True, "columns": {"pid": {"type": "int", "private_id": True}}},
        )
    assert "lookup" not in db.table_names()


def test_an_attached_public_sqlite_table_is_copied_with_its_types(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "codes.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE codes (code, label, weight)")
    con.executemany("INSERT INTO codes VALUES (?, ?, ?)", [(1, "one", 0.5), (2, "two", None), (3, 3, 1.5)])
    con.commit()
    con.close()
    db.attach("codes", f"sqlite:///{path}", metadata={"public": True})
    res = answer_public(db, "alice", "SELECT code, label, weight, code + 1 AS next FROM codes ORDER BY code")
    assert res.rows == [[1, "one", 0.5, 2], [2, "two", None, 3], [3, "3", 1.5, 4]]


# ---------------------------------------------------------------- public tables in a DP-SELECT's joins

CODES = pd.DataFrame({"code": [1, 2, 3, 4]})  # code 4: a public key no person has


@pytest.fixture
def joined(tmp_path: Path) -> Iterator[tuple[Database, duckdb.DuckDBPyConnection]]:
    """people (a privacy unit, two rows per pid at most) with the public regions, zones and codes, in privdb
    and in a plain DuckDB holding the same rows (the SQL truth)."""
    people = pd.DataFrame(
        {
            "pid": [0, 0, 1, 2, 3, 4, 5, 5],
            "region": [1, 1, 2, 1, 3, 1, 2, 3],
            "age": [30, 31, 41, 52, 23, 35, 67, 8],
        }
    )
    zones = pd.DataFrame({"zone": ["a", "b"]})
    database = Database(tmp_path / "db")
    truth = duckdb.connect()
    for name, frame in (("people", people), ("regions", REGIONS), ("zones", zones), ("codes", CODES)):
        database.backend.load_frame(name, frame)
        truth.register(f"{name}_frame", frame)
        truth.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
        if name != "people":
            database.set_metadata(name, {"public": True})
    database.set_metadata(
        "zones", {"public": True, "columns": {"zone": {"type": "category", "values": ["a", "b"]}}}
    )
    database.set_metadata(
        "people",
        {
            "privacy_unit": "pid",
            "max_contributions": 4,  # ≥ every pid's rows × 2 zones: bounding keeps every row
            "max_groups": 3,
            "columns": {"age": {"type": "int", "lower": 0, "upper": 100}, "region": {"type": "int"}},
        },
    )
    database.grant("eve", epsilon=100_000)
    yield database, truth
    truth.close()
    database.close()


@pytest.mark.parametrize(
    "query",
    [
        "COUNT(*) FROM people p CROSS JOIN zones z",
        "COUNT(*), COUNT(p.age) FROM people p, zones z WHERE p.age < 60",
        "z.zone, COUNT(*) FROM zones z CROSS JOIN people p GROUP BY z.zone",
        "z.zone, COUNT(*) FROM people p, zones z WHERE p.age > 30 GROUP BY z.zone",
        "g.code, COUNT(p.pid) FROM people p RIGHT JOIN (SELECT DISTINCT code FROM codes) AS g "
        "ON p.region = g.code GROUP BY g.code",
        "g.code, COUNT(p.age) FROM people p RIGHT JOIN codes g ON p.region = g.code AND p.age > 30 "
        "WHERE g.code > 0 GROUP BY 1",
        "r.name, COUNT(p.pid) FROM people p RIGHT JOIN (SELECT DISTINCT name, code FROM regions) AS r "
        "ON p.region = r.code AND p.age > 30 GROUP BY r.name",
    ],
)
def test_cross_and_right_joins_equal_plain_sql_at_a_huge_epsilon(
    joined: tuple[Database, duckdb.DuckDBPyConnection], query: str
) -> None:
    """At ε = 1000 a count's Laplace noise has scale below 0.01, so it rounds to SQL's count (a false
    failure below 1e-20 per value); every public key is a row (code 4, matched by no one, with COUNT 0 as
    in SQL), and the same rows come back."""
    db, truth = joined
    db.noise_source = seeded(26)
    answer = engine.run(db, "eve", f"DP-SELECT 1000 {query}")
    expected = truth.execute(f"SELECT {query}").fetchall()
    got = sorted(tuple(round(v) if isinstance(v, float) else v for v in row) for row in answer.rows)
    want = sorted(tuple(0 if v is None else v for v in row) for row in expected)
    assert got == want


def test_a_dp_select_of_public_tables_only_is_exact_and_free(tmp_path: Path) -> None:
    """Issue 26: noise on a public table protects no one; the DP-SELECT is answered as its plain SELECT,
    spending nothing (``exact``), grouped keys and TOP included; forms plain SELECT does not answer
    (MEDIAN) keep the DP path; a private table in the FROM keeps it too."""
    import pandas as pd

    from privdb.database import Database
    from privdb.sql import engine

    with Database(tmp_path / "db") as db:
        db.backend.load_frame("regions", pd.DataFrame({"c": ["a", "b", "c", "a"], "w": [1.0, 2.0, 3.0, 4.0]}))
        db.set_metadata(
            "regions",
            {
                "public": True,
                "columns": {"c": {"type": "text"}, "w": {"type": "float", "lower": 0, "upper": 10}},
            },
        )
        db.backend.load_frame("people", pd.DataFrame({"c": ["a", "b"], "x": [1.0, 2.0]}))
        db.set_metadata(
            "people", {"columns": {"c": {"type": "text"}, "x": {"type": "float", "lower": 0, "upper": 5}}}
        )
        db.grant("eve", epsilon=10, delta=1e-6)
        cases = {
            "DP-SELECT 1 COUNT(*), SUM(w) FROM regions": [[4, 10.0]],
            "DP-SELECT 1 c, COUNT(*) FROM regions GROUP BY c ORDER BY c": [["a", 2], ["b", 1], ["c", 1]],
            "DP-SELECT .5 TOP 1 c, AVG(w) AS a FROM regions GROUP BY c ORDER BY a DESC": [["c", 3.0]],
            "DP-SELECT ACCURACY 1 COUNT(*) FROM regions WHERE w > 1": [[3]],
        }
        first = next(iter(cases))
        engine.explain(db, first, "eve")  # an explained shape is not kept: its run is still exact
        for query, rows in cases.items():
            result = engine.run(db, "eve", query)
            assert result.rows == rows and result.epsilon_spent == 0 and result.extra["exact"] is True, query
        assert db.budget("eve").epsilon_spent == 0
        assert engine.run(db, "eve", "DP-SELECT 1 MEDIAN(w) FROM regions").epsilon_spent == 1
        joined = engine.run(db, "eve", "DP-SELECT 1 COUNT(*) FROM people JOIN regions r ON people.c = r.c")
        assert joined.epsilon_spent == 1 and "exact" not in joined.extra
