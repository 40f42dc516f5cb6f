"""Prepared query shapes (privdb.sql.plan.prepared): a query asked again at another ε reuses its parse,
relation
and resolution, and gets exactly what a fresh prepare gives — plan, engine SQL, answers for a seed,
refusals and charges — and a change of metadata, grants, attachments or tables is seen at the next query,
also when another process makes it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.front.query import MAX_EPSILON
from privdb.sql.plan.prepared import shape_of, shapes
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries
from sqlfixtures import TAX_METADATA, make_db

# one of each form the planner treats differently
QUERIES = [
    "DP-SELECT {} COUNT(*) FROM people WHERE age > 30",
    "DP-SELECT {} state, COUNT(*), AVG(income) FROM people GROUP BY state",
    "DP-SELECT {} SUM(salary), COUNT(salary) FROM tax_office WHERE postcode = 1001",
    "DP-SELECT {} DELTA 1e-6 profession, COUNT(*) FROM tax_office GROUP BY profession",
    "DP-SELECT {} DELTA 1e-6 USING GAUSSIAN sex, COUNT(*), SUM(income) FROM people GROUP BY sex",
    "DP-SELECT {} MEDIAN(age), MODE(education) FROM people",
    "DP-SELECT {} VARIANCE(income), COUNT(DISTINCT state) FROM people WHERE sex = 'F'",
    "DP-SELECT {} education, COUNT(*) AS n FROM people GROUP BY education HAVING n > 10 ORDER BY n DESC "
    "LIMIT 3",
    "DP-SELECT {} COUNT(*) FILTER (WHERE age < 20), AVG(age) FROM people WHERE state IN ('CA', 'NY')",
    "DP-SELECT {} age / 10 AS decade, COUNT(*) FROM people GROUP BY age / 10",
    "DP-SELECT {} COUNT(*) FROM (SELECT pid, age FROM people WHERE income > 1000) AS p WHERE age > 20",
    "DP-SELECT {}\n  CORR(age, income) FROM people",
]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = make_db(tmp_path / "db", people=3_000)
    yield database
    database.close()


def _fresh(db: Database, text: str, analyst: str | None = "alice") -> tuple[Any, str]:
    shapes(db).clear()
    return engine.prepare(db, text, analyst)


def _facts(db: Database, plan: Any, sql: str) -> dict[str, Any]:
    """Everything of a plan that reaches the engine or the analyst."""
    assert isinstance(plan, Plan)
    return {
        "sql": sql,
        "histograms": histogram_queries(db, plan),
        "statistics": plan.statistics,
        "aggregates": plan.aggregates,
        "threshold": plan.threshold,
        "domains": plan.domains,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "normalized": plan.query.normalized,
        "text": plan.query.text,
        "outputs": plan.resolved.outputs,
    }


def _outcome(call: Any) -> Any:
    try:
        return ("answer", call())
    except PrivdbError as err:
        return ("refused", err.code, str(err))


@pytest.mark.parametrize("query", QUERIES)
def test_a_kept_shape_plans_exactly_as_a_fresh_prepare(db: Database, query: str) -> None:
    kept = shapes(db)
    fresh = _facts(db, *_fresh(db, query.format("2.5")))
    explained = engine.explain(db, query.format("2.5"), "alice")
    kept.clear()
    engine.prepare(db, query.format("1"), "alice")  # keeps the shape
    hits = kept.hits
    again = _facts(db, *engine.prepare(db, query.format("2.5"), "alice"))
    assert kept.hits == hits + 1
    assert again == fresh
    assert engine.explain(db, query.format("2.5"), "alice") == explained


@pytest.mark.parametrize("query", QUERIES[:6])
def test_a_kept_shape_answers_as_a_fresh_prepare_for_the_same_seed(tmp_path: Path, query: str) -> None:
    """Two identical databases with the same history, one planning afresh and one from a kept shape: the
    same noise draws give the same answer, charge (zCDP's too), budget left and accuracy."""
    with make_db(tmp_path / "a", people=3_000) as a, make_db(tmp_path / "b", people=3_000) as b:
        for database in (a, b):
            engine.run(database, "alice", query.format("1"))  # b keeps the shape; a forgets it
        shapes(a).clear()
        a.noise_source, b.noise_source = seeded(11), seeded(11)
        hits = shapes(b).hits
        first = engine.run(a, "alice", query.format("0.75")).to_dict()
        second = engine.run(b, "alice", query.format("0.75")).to_dict()
        assert shapes(b).hits == hits + 1 and shapes(a).hits == 0
        assert first == second


@pytest.mark.parametrize("literal", ["0", "0.0", "1e400", "2000", "1000.5", "00"])
def test_refused_epsilons_are_refused_alike_from_a_kept_shape(db: Database, literal: str) -> None:
    query = QUERIES[0]
    fresh = _outcome(lambda: _fresh(db, query.format(literal)))
    engine.prepare(db, query.format("1"), "alice")
    kept = _outcome(lambda: engine.prepare(db, query.format(literal), "alice"))
    assert fresh[0] == "refused" and kept == fresh
    before = db.budget("alice").epsilon_remaining
    with pytest.raises(PrivdbError) as refused:
        engine.run(db, "alice", query.format(literal))
    assert refused.value.code == fresh[1] and db.budget("alice").epsilon_remaining == before


def test_charged_failures_stay_charged_from_a_kept_shape(db: Database) -> None:
    """A query stopped by the time limit after reading (charged, no detail) is stopped and charged alike."""
    query = "DP-SELECT {} state, COUNT(*) FROM people GROUP BY state"
    db.query_timeout = 1e-6  # any engine read takes longer
    results = []
    for eps in ("1", "0.5"):  # the first keeps the shape, the second uses it
        before = db.budget("alice").epsilon_remaining
        outcome = _outcome(lambda e=eps: engine.run(db, "alice", query.format(e)).to_dict())
        results.append((outcome[:2], float(before - db.budget("alice").epsilon_remaining)))
    assert results[0][0] == results[1][0] == ("refused", "query_failed")
    assert shapes(db).hits == 1
    assert results[0][1] == pytest.approx(1.0) and results[1][1] == pytest.approx(0.5)


def test_a_metadata_change_is_seen_at_the_next_query(db: Database) -> None:
    query = "DP-SELECT {} SUM(salary) FROM tax_office"
    engine.prepare(db, query.format("1"), "alice")
    narrow = {"columns": dict(TAX_METADATA["columns"], salary={"type": "int", "lower": 0, "upper": 1000})}
    db.set_metadata("tax_office", narrow)
    plan, _ = engine.prepare(db, query.format("2"), "alice")
    assert isinstance(plan, Plan) and plan.statistics[0].sensitivity == 1000
    assert _facts(db, plan, "") == _facts(db, _fresh(db, query.format("2"))[0], "")


def test_changes_by_another_process_are_seen_at_the_next_query(db: Database) -> None:
    """Another server worker or the owner's command on the directory: a second Database on the same files
    (it never opens the data, as a read-only worker could not change it)."""
    query = "DP-SELECT {} SUM(salary) FROM tax_office"
    engine.prepare(db, query.format("1"), "alice")
    with Database(db.path) as other:
        spec = other.catalog.metadata("tax_office")
        assert spec is not None
        spec["columns"]["salary"]["upper"] = 2000
        other.catalog.set_metadata("tax_office", spec)
        plan, _ = engine.prepare(db, query.format("2"), "alice")
        assert isinstance(plan, Plan) and plan.statistics[0].sensitivity == 2000
        other.grant("alice", tables=["people"])  # no longer tax_office
    fresh = _outcome(lambda: _fresh(db, query.format("3")))
    engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM people", "alice")
    assert fresh[:2] == ("refused", "forbidden")
    assert _outcome(lambda: engine.prepare(db, query.format("3"), "alice")) == fresh


def test_a_table_change_by_the_owner_is_seen_at_the_next_query(db: Database) -> None:
    query = "DP-SELECT {} AVG(age) FROM tax_office WHERE postcode = 1001"
    engine.prepare(db, query.format("1"), "alice")
    db.owner_sql("ALTER TABLE tax_office DROP COLUMN postcode")
    fresh = _outcome(lambda: _fresh(db, query.format("2")))
    engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM people", "alice")
    misses = shapes(db).misses
    assert fresh[0] == "refused"
    assert _outcome(lambda: engine.prepare(db, query.format("2"), "alice")) == fresh
    assert shapes(db).misses == misses + 1


def test_shapes_are_per_analyst_and_the_owner(db: Database) -> None:
    db.grant("bob", epsilon=10, tables=["people"])
    query = "DP-SELECT {} COUNT(*) FROM tax_office"
    engine.prepare(db, query.format("1"), "alice")
    engine.prepare(db, query.format("1"), None)  # the owner's explain
    refused = _outcome(lambda: engine.prepare(db, query.format("2"), "bob"))
    assert refused[:2] == ("refused", "forbidden")


def test_attached_tables_and_other_forms_are_never_kept(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "lite.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (age INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i % 90,) for i in range(200)])
    con.commit()
    con.close()
    db.attach(
        "lite", f"sqlite:///{path}", "t", {"columns": {"age": {"type": "int", "lower": 0, "upper": 90}}}
    )
    kept = shapes(db)
    kept.clear()
    for text in [
        "DP-SELECT 1 COUNT(*) FROM lite WHERE age > 3",  # an attached engine's table
        "DP-SELECT ACCURACY 50 COUNT(*) FROM people",  # no ε literal
        "WITH p AS (SELECT * FROM people) DP-SELECT 1 COUNT(*) FROM p",  # not the plain form
        "dp-select 1 COUNT(*) FROM people",
        "DP-SELECT 1 * FROM people",  # a record release
        "DP-SELECT 1e-1COUNT(*) FROM people",
    ]:
        _outcome(lambda t=text: engine.prepare(db, t, "alice"))
    assert len(kept) == 0


def test_the_shape_takes_out_only_the_epsilon_literal() -> None:
    one = shape_of("DP-SELECT 1 COUNT(*) FROM t", "a")
    other = shape_of("DP-SELECT 0.25e-3 COUNT(*) FROM t", "a")
    assert one is not None and other is not None and one[0] == other[0] and other[1] == "0.25e-3"
    assert shape_of("DP-SELECT 1 COUNT(*) FROM t", "b") != one
    assert shape_of("DP-SELECT 1 COUNT(*) FROM u", "a") != one
    for text in [
        "DP-SELECT -1 COUNT(*) FROM t",
        "DP-SELECT 1\u00a0COUNT(*) FROM t",
        " DP-SELECT 1,2",
        "DP-SELECT .5 COUNT(*) FROM t",  # the parse reads "." as a token of its own, and refuses it
        "DP-SELECT 0E\u0660 COUNT(*) FROM t",  # a digit, but not an ASCII one
        "DP-SELECT \u0661 COUNT(*) FROM t",
    ]:
        assert shape_of(text, "a") is None


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"\A[0-9]{1,6}(\.[0-9]{0,6})?([eE][+-]?[0-9]{1,3})?\Z"))
def test_the_parse_reads_every_shape_literal_as_its_float(literal: str) -> None:
    """What makes a shape sound: whatever the literal's digits, the parse reads ε as float(literal) and the
    rest alike (or refuses it with the one ε message, which the kept path gives too)."""
    text = f"DP-SELECT {literal} COUNT(*) FROM t WHERE x > 1"
    found = shape_of(text, None)
    assert found is not None and found[1] == literal
    reference = parse_dp_select("DP-SELECT 1 COUNT(*) FROM t WHERE x > 1")
    if not 0 < float(literal) <= MAX_EPSILON:
        with pytest.raises(PrivdbError, match="epsilon") as refused:
            parse_dp_select(text)
        assert refused.value.code == "invalid_parameter"
        return
    query = parse_dp_select(text)
    assert query.epsilon == float(literal)
    assert query.select == reference.select and query.delta == reference.delta
