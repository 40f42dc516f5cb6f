"""The query log (issue 15): paging and filters in the library, the CLI (`privdb log`) and the HTTP API, and
who sees what: the owner everyone's entries, an analyst only their own, also when a filter names someone else.

The filtered, paged log is checked against the whole log filtered in the test, for every combination of the
filters on a log of answers and refusals by two analysts on two tables.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import privdb
from privdb.cli import app
from privdb.cli.log import parse_since
from privdb.database import Database
from privdb.errors import Forbidden, InvalidParameter, PrivdbError
from privdb.sql import engine
from serverfixtures import Server, make_server_db

runner = CliRunner()

QUERIES = [  # (analyst, query): answers on both tables, refusals of several kinds
    ("alice", "DP-SELECT 0.1 COUNT(*) FROM people"),
    ("bob", "DP-SELECT 0.1 AVG(age) FROM people"),
    ("alice", "DP-SELECT 0.1 COUNT(*) FROM secret WHERE age > 30"),
    ("bob", "DP-SELECT 0.1 COUNT(*) FROM secret"),  # bob's grant is people only: refused
    ("alice", "DP-SELECT 0.1 COUNT(*) FROM"),  # parse error
    ("alice", "DP-SELECT 0.2 sex, COUNT(*) FROM people GROUP BY sex"),
    ("bob", "DP-SELECT 99 COUNT(*) FROM people"),  # over budget
    ("alice", "DP-SELECT 0.1 SUM(income) FROM people_extra"),  # unknown table (names no table we filter on)
]


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("log") / "db"
    tokens = make_server_db(path, people=500)
    with Database(path) as db:
        for analyst, query in QUERIES:
            with contextlib.suppress(PrivdbError):
                engine.run(db, analyst, query)
    return path, tokens


def _expected(entries: list[dict[str, Any]], analyst: str | None, table: str | None, outcome: str | None,
              since: float | None) -> list[dict[str, Any]]:  # fmt: skip
    def names(query: str) -> set[str]:
        return set("".join(c if c.isalnum() or c == "_" else " " for c in query.lower()).split())

    return [
        e
        for e in entries
        if (analyst is None or e["analyst"] == analyst)
        and (table is None or table in names(e["query"]))
        and (outcome is None or e["outcome"] == outcome)
        and (since is None or e["time"] >= since)
    ]


def test_filters_and_paging_run_in_sql_and_agree_with_the_whole_log(
    logged: tuple[Path, dict[str, str]],
) -> None:
    path, _ = logged
    with Database(path) as db:
        everything = db.log()
        assert len(everything) == len(QUERIES)
        assert [e["query"] for e in everything] == [q for _, q in QUERIES]  # time order, as written
        assert {e["outcome"] for e in everything} == {"answered", "refused"}
        since = everything[4]["time"]
        for analyst, table, outcome, start in itertools.product(
            (None, "alice", "bob", "carol"),
            (None, "people", "SECRET"),
            (None, "answered", "failed", "refused", "interrupted"),
            (None, since),
        ):
            want = _expected(everything, analyst, table and table.lower(), outcome, start)
            got = db.log(analyst, table=table, outcome=outcome, since=start)
            assert got == want, (analyst, table, outcome, start)
            assert db.log_count(analyst, table=table, outcome=outcome, since=start) == len(want)
            assert db.log(analyst, table=table, outcome=outcome, since=start, newest_first=True) == want[::-1]
        for limit, offset in itertools.product((1, 2, 3, 100), (0, 1, 5, 8, 20)):
            assert db.log(limit=limit, offset=offset) == everything[offset : offset + limit]
            assert (
                db.log(limit=limit, offset=offset, newest_first=True)
                == everything[::-1][offset : offset + limit]
            )
        assert db.log(offset=3) == everything[3:]


def test_log_filters_are_checked(logged: tuple[Path, dict[str, str]]) -> None:
    path, _ = logged
    with Database(path) as db:
        with pytest.raises(InvalidParameter, match="outcome must be one of answered, failed, refused"):
            db.log(outcome="charged")
        with pytest.raises(InvalidParameter, match="not a table name"):
            db.log(table="peo*")  # never a GLOB pattern
        for limit, offset in ((0, 0), (None, -1), (None, 2**70)):  # 2**70: past SQLite's integers
            with pytest.raises(InvalidParameter, match="limit must be"):
                db.log(limit=limit, offset=offset)


def test_an_analyst_connection_sees_only_its_own_entries(logged: tuple[Path, dict[str, str]]) -> None:
    path, tokens = logged
    with privdb.connect(path, token=tokens["bob"]) as bob:
        own = bob.log()
        assert own and {e["analyst"] for e in own} == {"bob"}
        assert bob.log(analyst="bob", outcome="refused") == [e for e in own if e["outcome"] == "refused"]
        for other in ("alice", "nobody"):  # the same refusal whether or not that analyst exists
            with pytest.raises(Forbidden, match="only their own log entries"):
                bob.log(analyst=other)
    with privdb.connect(path) as owner:
        assert {e["analyst"] for e in owner.log()} == {"alice", "bob"}
        assert {e["analyst"] for e in owner.log(analyst="alice", table="secret")} == {"alice"}


def _cli(*args: str) -> Any:
    return runner.invoke(app, ["log", *args])


def test_privdb_log_embedded(logged: tuple[Path, dict[str, str]]) -> None:
    path, tokens = logged
    with Database(path) as db:
        everything = db.log()
    result = _cli("--db", str(path), "--format", "json", "--limit", "3", "--offset", "2")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == everything[::-1][2:5]  # newest first, as `git log`
    result = _cli("--db", str(path), "--format", "json", "--limit", "3", "--reverse")
    assert json.loads(result.stdout) == everything[:3]  # the oldest first, on request
    result = _cli("--db", str(path), "--format", "json", "--status", "refused", "--table", "people")
    assert json.loads(result.stdout) == _expected(everything, None, "people", "refused", None)
    result = _cli("--db", str(path), "--limit", "2", "--newest-first")
    assert result.exit_code == 0
    assert "people_extra" in result.stdout and "entries 1–2; --offset 2 for more" in result.stdout
    result = _cli("--db", str(path), "--format", "csv", "--analyst", "bob")
    assert result.stdout.splitlines()[0] == "time,analyst,query,epsilon,delta,outcome,code"
    assert len(result.stdout.splitlines()) == 1 + sum(e["analyst"] == "bob" for e in everything)
    # an analyst's token on --db is the analyst's view
    result = _cli("--db", str(path), "--token", tokens["bob"], "--analyst", "alice")
    assert result.exit_code == 2 and "only their own log entries" in result.stderr
    for bad, needle in (
        (["--since", "last tuesday"], "neither a date nor an age"),
        (["--status", "charged"], "'charged' is not one of"),
        (["--limit", "0"], "greater than or equal to 1"),
    ):
        result = _cli("--db", str(path), *bad)
        said = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stderr).split())  # the usage box wraps at its width
        assert result.exit_code == 2 and needle in said, result.stderr
        assert "Traceback" not in result.output


def test_parse_since() -> None:
    assert parse_since("90m", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("2d", now=1e6) == 1e6 - 2 * 86_400
    assert parse_since("2025-05-01T12:00:00+00:00") == 1746100800.0
    assert parse_since("2025-05-01") == parse_since("2025-05-01T00:00")


def test_log_over_the_server(logged: tuple[Path, dict[str, str]]) -> None:
    path, tokens = logged
    with Database(path) as db:
        everything = db.log()
    server = Server(path).start()
    try:
        with privdb.connect(server.url, token=tokens["owner"]) as owner:
            assert owner.log() == everything
            assert owner.log(limit=2, offset=3, newest_first=True) == everything[::-1][3:5]
            assert owner.log(analyst="alice", table="people", outcome="answered") == _expected(
                everything, "alice", "people", "answered", None
            )
            assert owner.log(since=everything[5]["time"]) == everything[5:]
        with privdb.connect(server.url, token=tokens["alice"]) as alice:
            assert alice.log() == _expected(everything, "alice", None, None, None)
            with pytest.raises(Forbidden):
                alice.log(analyst="bob", table="people")
        headers = {"Authorization": f"Bearer {tokens['owner']}"}
        response = httpx.get(
            server.url + "/v1/log", params={"limit": 2, "outcome": "refused"}, headers=headers
        )
        assert response.headers["X-Total-Count"] == str(sum(e["outcome"] == "refused" for e in everything))
        assert len(response.json()) == 2
        response = httpx.get(
            server.url + "/v1/log", params={"since": "2000-01-01T00:00:00Z"}, headers=headers
        )
        assert response.json() == everything
        bob = {"Authorization": f"Bearer {tokens['bob']}"}
        response = httpx.get(server.url + "/v1/log", params={"analyst": "alice"}, headers=bob)
        assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
        response = httpx.get(server.url + "/v1/log", params={"outcome": "maybe"}, headers=bob)
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_parameter"
        # the CLI over the server: an analyst's token, their own entries only
        result = _cli("--url", server.url, "--token", tokens["bob"], "--format", "json")
        assert result.exit_code == 0 and {e["analyst"] for e in json.loads(result.stdout)} == {"bob"}
        result = _cli("--url", server.url, "--token", tokens["bob"], "--analyst", "alice")
        assert result.exit_code == 2 and "only their own log entries" in result.stderr
    finally:
        server.stop()
