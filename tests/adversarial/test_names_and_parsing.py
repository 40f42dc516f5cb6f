"""Issue 13, findings 6 and 7, through the library, the Python API and the command line.

6. A scoped analyst (granted only some tables) never learns the name of a table outside the grant: not from a
   suggestion ("did you mean …?"), not from a "known: …" list, not from whether a refusal says the table does
   not exist. Two neighbouring setups differ only in tables eve may not see (one holds ``secret_patients``
   and ``payroll``, the other neither); every query eve can send ends the same way on both, on every path.
7. A query nested too deeply, or too long, is a free ``parse_error`` with one message, never an
   ``internal_error`` (a ``RecursionError``), whatever construct nests and whichever check finds it; every
   stage after parsing copes with the deepest query the limits admit.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import privdb
from adversarial.neighbours import PEOPLE_META, Neighbours, neighbours, people, same_outcome
from privdb.api import Connection
from privdb.backends.base import find_table
from privdb.cli import app
from privdb.database import Database
from privdb.errors import Forbidden, ParseError, PrivdbError, UnknownTable
from privdb.sql import engine
from privdb.sql.front.dpselect.parse import parse_dp_select
from privdb.sql.front.limits import MAX_DEPTH, MAX_QUERY_LENGTH, MAX_TREE_DEPTH

HIDDEN = ("secret_patients", "payroll")  # tables outside eve's grant, in one setup only
GRANT = ["people", "ghost"]  # ghost: granted, but there is no such table in either setup

# engine.py resolves the table against the analyst's visible tables (find_table(..., visible=...)) and
# Database.visible_tables describes only those: until that change (described in the report of finding 6)
# the cases below that need it are expected to fail
SCOPED = hasattr(Database, "table_names")
needs_scoped_lookup = pytest.mark.xfail(
    not SCOPED, strict=True, reason="needs authorize to look names up with find_table(visible=…)"
)

TABLE_QUERIES = [
    "DP-SELECT 1 COUNT(*) FROM secret_patients",  # outside the grant; exists in one setup
    "DP-SELECT 1 COUNT(*) FROM secret_patient",  # a typo of it
    "DP-SELECT 1 COUNT(*) FROM SECRET_PATIENTS",
    "DP-SELECT 1 COUNT(*) FROM payrol",
    "DP-SELECT 1 COUNT(*) FROM payroll WHERE nosuch > 1",  # refused before its columns are looked at
    "DP-SELECT 1 disease FROM secret_patients",  # a record release
    "DP-SELECT 1 COUNT(*) FROM nosuch",  # nowhere
    "DP-SELECT 1 COUNT(*) FROM people JOIN secret_patients USING (age)",  # other places a name can stand
    "DP-SELECT 1 COUNT(*) FROM people, payroll",
    "DP-SELECT 1 COUNT(*) FROM people WHERE age IN (SELECT age FROM secret_patients)",
    "DP-SELECT 1 COUNT(*) FROM people WHERE EXISTS (SELECT 1 FROM payrol)",
    "DP-SELECT 1 COUNT(*) FROM main.secret_patients",
    "DP-SELECT 1 secret_patients.age, COUNT(*) FROM people GROUP BY 1",
    "DP-SELECT 1 COUNT(*) FROM peple",  # a typo of the table eve may query
    pytest.param("DP-SELECT 1 COUNT(*) FROM ghost", marks=needs_scoped_lookup),  # granted, absent
    "DP-SELECT 1 COUNT(*) FROM people",  # answers
]


def make_setup(path: Path, hidden: tuple[str, ...]) -> Database:
    """``people`` (granted to eve) and the ``hidden`` tables, with the same metadata."""
    db = Database(path)
    db.backend.load_frame("people", people())
    db.set_metadata("people", PEOPLE_META)
    for name in hidden:
        db.backend.load_frame(name, people(60, seed=5))
        db.set_metadata(name, PEOPLE_META)
    db.grant("eve", epsilon=1_000, delta=1e-3, tables=GRANT)
    db.grant("olga", epsilon=1_000, delta=1e-3)  # every table
    return db


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    base = tmp_path_factory.mktemp("names")
    made = Neighbours(make_setup(base / "without", ()), make_setup(base / "with", HIDDEN))
    yield made
    made.close()


def _observe(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        value = call()
    except PrivdbError as err:
        return ("error", err.code, err.message)
    if isinstance(value, dict):  # an explanation: which table, what it costs
        return ("explained", value["table"], value["epsilon"])
    return ("answered", tuple(value.columns), len(value.rows))


def _leaks(query: str, seen: tuple[Any, ...]) -> list[str]:
    """Hidden table names in an outcome that the query did not name itself."""
    text = " ".join(str(part) for part in seen).lower()
    return [name for name in HIDDEN if name in text and name[:6] not in query.lower()]


def _paths(db: Database) -> dict[str, Callable[[str], tuple[Any, ...]]]:
    conn = Connection(db, "eve")  # the Python API, embedded (shares db: not closed here)
    return {
        "engine.run": lambda q: _observe(lambda: engine.run(db, "eve", q)),
        "engine.explain": lambda q: _observe(lambda: engine.explain(db, q, "eve")),
        "engine.prepare": lambda q: _observe(
            lambda: {"table": engine.prepare(db, q, "eve")[0].table.name, "epsilon": None}
        ),
        "Connection.sql": lambda q: _observe(lambda: conn.sql(q)),
        "Connection.explain": lambda q: _observe(lambda: conn.explain(q)),
    }


@pytest.mark.parametrize("query", TABLE_QUERIES)
def test_scoped_analyst_gets_one_outcome_whatever_tables_hide(pair: Neighbours, query: str) -> None:
    for name in _paths(pair.without):
        first = _paths(pair.without)[name](query)
        second = _paths(pair.with_)[name](query)
        assert first == second, f"{name}: {query}\n  without: {first}\n  with:    {second}"
        assert not _leaks(query, second), (name, query, second)
        assert first[:2] not in (("error", "internal_error"), ("error", "query_failed")), first


@needs_scoped_lookup
@pytest.mark.parametrize("query", ["DP-SELECT 1 COUNT(*) FROM ghost", "DP-SELECT 1 COUNT(*) FROM GHOST"])
def test_a_granted_table_that_does_not_exist_names_nothing_else(pair: Neighbours, query: str) -> None:
    first, second = (_observe(lambda db=db: engine.run(db, "eve", query)) for db in pair.both())
    assert first == second and not _leaks(query, second), (first, second)


@needs_scoped_lookup
def test_refusals_outside_the_grant_are_one_message_with_suggestions_from_the_grant(pair: Neighbours) -> None:
    """A table outside the grant, existing or not, granted-but-absent or a typo: ``forbidden``, one message
    naming only what eve wrote, suggesting only the tables she may query."""
    queries = [
        "DP-SELECT 1 COUNT(*) FROM secret_patients",
        "DP-SELECT 1 COUNT(*) FROM secret_patient",
        "DP-SELECT 1 COUNT(*) FROM SECRET_PATIENTS",
        "DP-SELECT 1 COUNT(*) FROM payrol",
        "DP-SELECT 1 COUNT(*) FROM payroll WHERE nosuch > 1",
        "DP-SELECT 1 disease FROM secret_patients",
        "DP-SELECT 1 COUNT(*) FROM nosuch",
        "DP-SELECT 1 COUNT(*) FROM peple",
        "DP-SELECT 1 COUNT(*) FROM ghost",
    ]
    seen = {q: _observe(lambda q=q: engine.run(pair.with_, "eve", q)) for q in queries}
    for query, (kind, code, message) in seen.items():
        assert (kind, code) == ("error", "forbidden"), (query, message)
        assert "is not among the tables you may query" in message
    assert "did you mean 'people'?" in seen["DP-SELECT 1 COUNT(*) FROM peple"][2]
    # the existing and the absent table get the same words, but for the name eve wrote
    exists = seen["DP-SELECT 1 COUNT(*) FROM payroll WHERE nosuch > 1"][2]
    absent = seen["DP-SELECT 1 COUNT(*) FROM nosuch"][2]
    assert exists.replace("'payroll'", "'X'") == absent.replace("'nosuch'", "'X'")


def test_tables_lists_only_the_grant(pair: Neighbours) -> None:
    listed = [Connection(db, "eve").tables() for db in pair.both()]
    assert listed[0] == listed[1] and [t["name"] for t in listed[0]] == ["people"]


def test_owner_and_analysts_of_every_table_still_get_every_suggestion(pair: Neighbours) -> None:
    with pytest.raises(UnknownTable, match="did you mean 'secret_patients'"):
        engine.explain(pair.with_, "DP-SELECT 1 COUNT(*) FROM secret_patient")  # the owner
    with pytest.raises(UnknownTable, match="did you mean 'secret_patients'"):
        engine.run(pair.with_, "olga", "DP-SELECT 1 COUNT(*) FROM secret_patient")  # granted every table
    assert engine.run(pair.with_, "olga", "DP-SELECT 1 COUNT(*) FROM secret_patients").rows


@pytest.mark.parametrize(
    "args",
    [
        ["query", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM secret_patient"],
        ["query", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM peple"],
        ["query", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM secret_patients", "--format", "json"],
        ["explain", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM secret_patients"],
        ["explain", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM payrol", "--format", "json"],
        pytest.param(
            ["query", "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM ghost"], marks=needs_scoped_lookup
        ),
    ],
)
def test_the_command_line_ends_the_same_way(pair: Neighbours, args: list[str]) -> None:
    runs = [CliRunner().invoke(app, [*args[:1], "--db", str(db.path), *args[1:]]) for db in pair.both()]
    seen = [(r.exit_code, r.stdout.strip(), r.stderr.strip()) for r in runs]
    assert seen[0] == seen[1], seen
    query = next(a for a in args if a.startswith("DP-SELECT"))
    assert seen[0][0] == 2 and "error [forbidden]" in seen[0][2] and not _leaks(query, seen[1]), seen


def test_explain_as_an_analyst_on_the_command_line(pair: Neighbours) -> None:
    ok = CliRunner().invoke(
        app, ["explain", "--db", str(pair.with_.path), "--analyst", "eve", "DP-SELECT 1 COUNT(*) FROM people"]
    )
    assert ok.exit_code == 0 and "people" in ok.stdout, ok.output
    owner = CliRunner().invoke(
        app, ["explain", "--db", str(pair.with_.path), "DP-SELECT 1 COUNT(*) FROM secret_patients"]
    )
    assert owner.exit_code == 0, owner.output  # the owner explains any table


def _attached_setup(path: Path, other: str) -> Database:
    """``ext`` attached from an SQLite file (granted to eve) whose source table has since been dropped; the
    file also holds ``other``, a table nobody was told about."""
    path.mkdir(parents=True)
    file = path / "source.db"
    with sqlite3.connect(file) as con:
        con.execute("CREATE TABLE src (age INTEGER)")
        con.execute(f"CREATE TABLE {other} (x INTEGER)")
        con.executemany("INSERT INTO src VALUES (?)", [(i % 90,) for i in range(200)])
    db = make_setup(path / "db", ())
    db.attach(
        "ext", f"sqlite:///{file}", "src", {"columns": {"age": {"type": "int", "lower": 0, "upper": 100}}}
    )
    db.grant("eve", epsilon=1_000, delta=1e-3, tables=["people", "ext"])
    db.close()
    with sqlite3.connect(file) as con:
        con.execute("DROP TABLE src")
    return Database(path / "db")


@needs_scoped_lookup
def test_an_attached_engine_never_names_its_own_tables_to_an_analyst(tmp_path: Path) -> None:
    dbs = [_attached_setup(tmp_path / "a", "hidden_alpha"), _attached_setup(tmp_path / "b", "hidden_beta")]
    try:
        for query in ["DP-SELECT 1 COUNT(*) FROM ext", "DP-SELECT 1 COUNT(*) FROM EXT WHERE age > 3"]:
            first, second = (_observe(lambda db=db, q=query: engine.run(db, "eve", q)) for db in dbs)
            assert first == second and "hidden" not in str(first), (first, second)
            assert first[:2] == ("error", "engine_unavailable"), first
        listed = [Connection(db, "eve").tables() for db in dbs]
        assert listed[0] == listed[1]
        with pytest.raises(UnknownTable, match="hidden_alpha"):  # the owner is told what the file holds
            engine.explain(dbs[0], "DP-SELECT 1 COUNT(*) FROM ext")
    finally:
        for db in dbs:
            db.close()


def test_find_table_with_a_visible_scope() -> None:
    names = ["people", "secret_patients"]
    assert find_table("PEOPLE", names, visible=["people"]) == "people"
    assert find_table("Secret_Patients", names) == "secret_patients"  # no scope: every name
    refusals = []
    for table in ("secret_patients", "secret_patient", "nosuch", "ghost"):
        with pytest.raises(Forbidden) as err:
            find_table(table, names, visible=["people", "ghost"])
        refusals.append(err.value.message.replace(repr(table), "'X'"))
        assert "secret" not in err.value.message.replace(repr(table), "")
    assert len(set(refusals)) == 1
    with pytest.raises(UnknownTable, match="did you mean 'secret_patients'"):
        find_table("secret_patient", names)


# ---------------------------------------------------------------- 7. nesting and length

DEEP = 3000
WHERE = "DP-SELECT 1 COUNT(*) FROM people WHERE "
TOO_DEEP = {
    "parentheses": WHERE + "(" * DEEP + "age > 1" + ")" * DEEP,
    "functions": WHERE + "abs(" * DEEP + "age" + ")" * DEEP + " > 1",
    "case": WHERE + "CASE WHEN " * DEEP + "age > 1" + " THEN true END" * DEEP,
    "not": WHERE + "NOT " * DEEP + "age > 1",
    "unary minus": WHERE + "- " * DEEP + "age > 1",
    "signs": WHERE + "+-" * DEEP + "age > 1",
    "tilde": WHERE + "~ " * DEEP + "age > 1",
    "brackets": WHERE + "[" * DEEP + "1" + "]" * DEEP + " = age",
    "braces": WHERE + "{'a': " * DEEP + "1" + "}" * DEEP + " = age",
    "interval": WHERE + "born > " + "INTERVAL " * DEEP + "'1' DAY",
    "subqueries": WHERE + "age IN " + "(SELECT age FROM people WHERE age IN " * 1000 + "(1)" + ")" * 1000,
    "casts": WHERE + "age" + "::INT" * DEEP + " > 1",
    "dots": WHERE + "age" + ".x" * DEEP + " > 1",
    "indexes": WHERE + "age" + "[1]" * DEEP + " > 1",
    "is not null": WHERE + "age" + " IS NOT NULL" * DEEP,
    "at time zone": WHERE + "born" + " AT TIME ZONE 'UTC'" * DEEP + " IS NULL",
    "alternating operators": WHERE + " - ".join(f"age + {i}" for i in range(DEEP)) + " > 1",
    "keys": "DP-SELECT 1 DELTA 1e-6 "
    + "abs(" * DEEP
    + "age"
    + ")" * DEEP
    + " AS k, COUNT(*) FROM people GROUP BY k",
    "aggregate": "DP-SELECT 1 SUM(" + "(" * DEEP + "income" + ")" * DEEP + ") FROM people",
    "mixed": WHERE + "(NOT -abs(CASE WHEN [" * 400 + "1" + "][1] > 0 THEN 1 END))" * 400 + " > 0",
    "just past the limit": WHERE + "(" * (MAX_DEPTH + 1) + "age > 1" + ")" * (MAX_DEPTH + 1),
    "casts past the limit": WHERE + "(" * MAX_DEPTH + "age::INT > 1" + ")" * MAX_DEPTH,
    "tree past the limit": WHERE + "age" + "::INT" * MAX_TREE_DEPTH + " > 1",
}


def _too_deep(message: str) -> bool:
    return message.startswith(f"the query nests more than {MAX_DEPTH} levels deep")


@pytest.fixture(scope="module")
def people_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    made = neighbours(tmp_path_factory.mktemp("deep"))
    yield made
    made.close()


@pytest.mark.parametrize("name", list(TOO_DEEP))
def test_too_deep_is_one_free_parse_error(people_pair: Neighbours, name: str) -> None:
    query = TOO_DEEP[name]
    before = [db.budget("eve").epsilon_spent for db in people_pair.both()]
    seen = same_outcome(people_pair, query)
    assert seen[:2] == ("error", "parse_error") and _too_deep(seen[2]), seen
    assert [db.budget("eve").epsilon_spent for db in people_pair.both()] == before  # free
    with pytest.raises(ParseError) as err:
        engine.explain(people_pair.with_, query)  # the owner's explain: the same refusal
    assert err.value.message == seen[2]


def test_a_recursion_error_anywhere_in_parsing_is_the_same_parse_error() -> None:
    query = WHERE + "(" * 8 + "age > 1" + ")" * 8  # within the limits: only a tiny stack makes it fail
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        with pytest.raises(ParseError) as err:
            parse_dp_select(query)
    finally:
        sys.setrecursionlimit(limit)
    assert _too_deep(err.value.message)
    assert parse_dp_select(query).epsilon == 1


AT_THE_LIMIT = [
    WHERE + "(" * MAX_DEPTH + "age > 1" + ")" * MAX_DEPTH,
    WHERE + "abs(" * MAX_DEPTH + "age" + ")" * MAX_DEPTH + " > 1",
    WHERE + "round(" * MAX_DEPTH + "income" + ", 1)" * MAX_DEPTH + " > 1",
    WHERE + "CASE WHEN " * MAX_DEPTH + "age > 1" + " THEN true END" * MAX_DEPTH,
    WHERE + "CASE WHEN age > 1 THEN " * MAX_DEPTH + "true" + " ELSE false END" * MAX_DEPTH,
    WHERE + "NOT " * MAX_DEPTH + "age > 1",
    WHERE + "NOT (" * (MAX_DEPTH // 2) + "age > 1" + ")" * (MAX_DEPTH // 2),
    WHERE + "(age + " * MAX_DEPTH + "1" + ")" * MAX_DEPTH + " > 1",
    WHERE + "age BETWEEN " + "(age + " * MAX_DEPTH + "1" + ")" * MAX_DEPTH + " AND 100",
    # long chains are flat, not deep; but privdb.sql.front.expr.render writes each link in its own
    # parentheses,
    # ((((a = 0) OR (a = 1)) OR …), which explain's pretty-printer reads back recursively
    WHERE + " OR ".join(f"age = {i}" for i in range(60)),  # chains: explain falls back to plain SQL
    WHERE + " + ".join(["age"] * 120) + " > 1",
    WHERE + " || ".join(["disease"] * 120) + " = 'x'",
    "DP-SELECT 1 DELTA 1e-6 " + "abs(" * MAX_DEPTH + "age" + ")" * MAX_DEPTH + " AS k, COUNT(*) FROM people "
    "GROUP BY k",
    "DP-SELECT 1 age FROM people WHERE " + "(" * MAX_DEPTH + "age > 30" + ")" * MAX_DEPTH,
]


@pytest.mark.parametrize("query", AT_THE_LIMIT)
def test_the_deepest_admitted_queries_pass_every_later_stage(people_pair: Neighbours, query: str) -> None:
    parsed = parse_dp_select(query)
    assert parsed.normalized and parsed.select.copy() == parsed.select
    assert sum(1 for _ in parsed.select.walk()) > 1
    seen = same_outcome(people_pair, query)  # plan, rewrite, bind, run, noise
    assert seen[0] == "answered", seen
    for asker in (None, "eve"):  # explain writes the engine SQL out and reads it back (pretty-printed)
        assert _observe(lambda asker=asker: engine.explain(people_pair.with_, query, asker))[0] == "explained"


def test_long_queries_are_refused_with_the_limit_named(people_pair: Neighbours) -> None:
    pad = "DP-SELECT 1 COUNT(*) FROM people -- "
    at_limit = pad + "x" * (MAX_QUERY_LENGTH - len(pad))
    assert parse_dp_select(at_limit).epsilon == 1
    seen = same_outcome(people_pair, at_limit + "x")
    assert seen[:2] == ("error", "parse_error"), seen
    assert f"more than the limit of {MAX_QUERY_LENGTH:,}" in seen[2]
    huge = WHERE + " OR ".join(f"age = {i}" for i in range(20_000))
    assert same_outcome(people_pair, huge)[:2] == ("error", "parse_error")


def test_the_command_line_refuses_deep_and_long_queries_with_exit_2(people_pair: Neighbours) -> None:
    for query in (TOO_DEEP["parentheses"], TOO_DEEP["casts"], "DP-SELECT 1 " + "x" * MAX_QUERY_LENGTH):
        runs = [
            CliRunner().invoke(app, ["query", "--db", str(db.path), "--analyst", "eve", query])
            for db in people_pair.both()
        ]
        assert runs[0].exit_code == runs[1].exit_code == 2, runs[0].output
        assert runs[0].stderr == runs[1].stderr and runs[0].stderr.startswith("error [parse_error]")


def test_the_python_api_refuses_them_the_same_way(people_pair: Neighbours) -> None:
    conn = privdb.connect(people_pair.with_.path, analyst="eve")
    try:
        with pytest.raises(ParseError) as err:
            conn.sql(TOO_DEEP["functions"])
        assert _too_deep(err.value.message)
        with pytest.raises(ParseError):
            conn.explain(TOO_DEEP["not"])
    finally:
        conn.close()
