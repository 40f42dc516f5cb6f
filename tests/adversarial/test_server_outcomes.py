"""Issue 13 over HTTP, on real servers on loopback: findings 6 and 7, and the server's time limit (finding 2).

6. Two servers over neighbouring setups, differing only in tables outside eve's grant: every request eve
   can make about tables (``/v1/query``, ``/v1/explain``, ``/v1/tables``, and the client, which the web page's
   calls mirror) gets the same status, code and message on both, and names nothing outside the grant.
7. A query nested too deeply or too long is 400 ``parse_error`` on both (never 500), spending nothing, with
   the message the library gives.
2. ``--query-timeout``: a slow query is stopped at the limit — the answer is 422 ``query_failed`` (charged),
   the engine's work really stops (the server's CPU goes idle) and no worker stays pinned (the next requests
   are answered at once). Two gaps outside the server's files are pinned down as expected failures: the
   owner's raw SQL has no limit, and the limit applies to each engine query, not to an analyst's whole query.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adversarial.neighbours import PEOPLE_META, people
from privdb.client import RemoteConnection
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.limits import MAX_DEPTH, MAX_QUERY_LENGTH
from serverfixtures import Server

HIDDEN = ("secret_patients", "payroll")
SCOPED = hasattr(Database, "table_names")  # see test_names_and_parsing: engine.py's scoped lookup
needs_scoped_lookup = pytest.mark.xfail(
    not SCOPED, strict=True, reason="needs authorize to look names up with find_table(visible=…)"
)
QUERIES = [
    "DP-SELECT 1 COUNT(*) FROM secret_patients",
    "DP-SELECT 1 COUNT(*) FROM secret_patient",
    "DP-SELECT 1 COUNT(*) FROM Payrol WHERE nosuch > 1",
    "DP-SELECT 1 disease FROM secret_patients",
    "DP-SELECT 1 COUNT(*) FROM nosuch",
    "DP-SELECT 1 COUNT(*) FROM peple",
    pytest.param("DP-SELECT 1 COUNT(*) FROM ghost", marks=needs_scoped_lookup),  # granted, absent
    "DP-SELECT 1 COUNT(*) FROM people",
]
REFUSED = [  # too deep, too long
    "DP-SELECT 1 COUNT(*) FROM people WHERE " + "(" * 3000 + "age > 1" + ")" * 3000,
    "DP-SELECT 1 COUNT(*) FROM people WHERE " + "NOT " * 3000 + "age > 1",
    "DP-SELECT 1 COUNT(*) FROM people WHERE age" + "::INT" * 500 + " > 1",
    "DP-SELECT 1 COUNT(*) FROM people -- " + "x" * MAX_QUERY_LENGTH,
]


def _setup(path: Path, hidden: tuple[str, ...]) -> dict[str, str]:
    with Database(path) as db:
        db.backend.load_frame("people", people())
        db.set_metadata("people", PEOPLE_META)
        for name in hidden:
            db.backend.load_frame(name, people(60, seed=5))
            db.set_metadata(name, PEOPLE_META)
        return {
            "eve": db.grant("eve", epsilon=1_000, delta=1e-3, tables=["people", "ghost"]),
            "owner": db.catalog.add_owner_token(),
        }


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[Server, dict[str, str]]]]:
    base = tmp_path_factory.mktemp("servers")
    made = []
    try:
        for name, hidden in (("without", ()), ("with", HIDDEN)):
            tokens = _setup(base / name, hidden)
            made.append((Server(base / name).start(), tokens))
        yield made
    finally:
        for server, _ in made:
            server.stop()


def _call(server: Server, token: str, method: str, path: str, body: Any = None) -> tuple[Any, ...]:
    response = httpx.request(
        method, server.url + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    payload = response.json()
    if response.status_code != 200:
        return (response.status_code, payload["error"]["code"], payload["error"]["message"])
    if path == "/v1/query":
        return (200, tuple(payload["columns"]), len(payload["rows"]))
    if path == "/v1/explain":
        return (200, payload["table"], payload["epsilon"])
    return (200, payload)


def _leaks(query: str, seen: tuple[Any, ...]) -> list[str]:
    text = " ".join(str(part) for part in seen).lower()
    return [name for name in HIDDEN if name in text and name[:6] not in query.lower()]


@pytest.mark.parametrize("query", QUERIES + REFUSED)
def test_every_table_request_ends_the_same_way_on_both_servers(
    servers: list[tuple[Server, dict[str, str]]], query: str
) -> None:
    for path in ("/v1/query", "/v1/explain"):
        first, second = (
            _call(server, tokens["eve"], "POST", path, {"sql": query}) for server, tokens in servers
        )
        assert first == second, f"{path} {query[:80]}\n  without: {first}\n  with:    {second}"
        assert first[0] != 500 and not _leaks(query, second), (path, second)
        if first[0] != 200:
            assert first[1] in ("forbidden", "parse_error"), first
    raised = []
    for server, tokens in servers:  # the client (and so the CLI's --url) raises the same error
        with RemoteConnection(server.url, tokens["eve"]) as conn:
            try:
                conn.sql(query)
                raised.append(("answered",))
            except PrivdbError as err:
                raised.append((type(err).__name__, err.message))
    assert raised[0] == raised[1]


def test_tables_and_the_page_show_only_the_grant(servers: list[tuple[Server, dict[str, str]]]) -> None:
    listed = [_call(server, tokens["eve"], "GET", "/v1/tables") for server, tokens in servers]
    assert listed[0] == listed[1] and [t["name"] for t in listed[0][1]] == ["people"]
    pages = [httpx.get(server.url + "/").text for server, _ in servers]
    assert pages[0] == pages[1] and not any(name in pages[1] for name in HIDDEN)


def test_the_owner_is_still_told_every_table(servers: list[tuple[Server, dict[str, str]]]) -> None:
    server, tokens = servers[1]
    seen = _call(
        server, tokens["owner"], "POST", "/v1/explain", {"sql": "DP-SELECT 1 COUNT(*) FROM secret_patient"}
    )
    assert seen[:2] == (404, "unknown_table") and "did you mean 'secret_patients'" in seen[2], seen
    names = [t["name"] for t in _call(server, tokens["owner"], "GET", "/v1/tables")[1]]
    assert names == ["payroll", "people", "secret_patients"]


def test_deep_and_long_queries_are_free_and_worded_as_in_the_library(
    servers: list[tuple[Server, dict[str, str]]],
) -> None:
    server, tokens = servers[1]
    budget = _call(server, tokens["eve"], "GET", "/v1/budget")
    for query in REFUSED:
        seen = _call(server, tokens["eve"], "POST", "/v1/query", {"sql": query})
        with Database(server.db, read_only=True) as db, pytest.raises(PrivdbError) as err:
            engine.explain(db, query)  # the library, on the same database: the same refusal
        assert seen == (400, "parse_error", err.value.message), seen
    assert f"characters long, more than the limit of {MAX_QUERY_LENGTH:,}" in seen[2]
    assert _call(server, tokens["eve"], "GET", "/v1/budget") == budget  # nothing spent
    assert f"nested at most {MAX_DEPTH} levels" in httpx.get(server.url + "/openapi.json").text


# ---------------------------------------------------------------- the time limit

TIMEOUT = 0.25  # seconds: --query-timeout of the slow server
SLOW_WHERE = "md5(" * MAX_DEPTH + "name" + ")" * MAX_DEPTH + " = 'x'"  # ~3 s of DuckDB on 2 cores


def _slow_setup(path: Path, rows: int = 2_000_000) -> dict[str, str]:
    with Database(path) as db:
        db.owner_sql(
            f"CREATE TABLE big AS SELECT range AS id, md5(range::VARCHAR) AS name FROM range({rows})"
        )
        db.set_metadata(
            "big", {"columns": {"id": {"type": "int", "lower": 0, "upper": rows}, "name": {"type": "text"}}}
        )
        return {"eve": db.grant("eve", epsilon=1_000), "owner": db.catalog.add_owner_token()}


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("slow") / "db"
    tokens = _slow_setup(path)
    server = Server(path, extra=["--query-timeout", str(TIMEOUT)]).start()
    yield server, tokens
    server.stop()


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process, all its threads (DuckDB's included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _idle_after(server: Server, seconds: float = 1.0) -> float:
    assert server.process is not None
    before = _cpu_seconds(server.process.pid)
    time.sleep(seconds)
    return _cpu_seconds(server.process.pid) - before


def _post(server: Server, token: str, path: str, sql: str) -> tuple[int, str | None, float]:
    started = time.monotonic()
    response = httpx.post(
        server.url + path, json={"sql": sql}, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    error = response.json().get("error") if response.status_code != 200 else None
    return response.status_code, error["code"] if error else None, time.monotonic() - started


def test_a_slow_query_is_stopped_charged_and_its_work_ends(slow: tuple[Server, dict[str, str]]) -> None:
    server, tokens = slow
    budget = httpx.get(server.url + "/v1/budget", headers={"Authorization": f"Bearer {tokens['eve']}"}).json()
    status, code, took = _post(
        server, tokens["eve"], "/v1/query", f"DP-SELECT 0.5 COUNT(*) FROM big WHERE {SLOW_WHERE}"
    )
    assert (status, code) == (422, "query_failed") and took < TIMEOUT + 1.0, (status, code, took)
    spent = httpx.get(server.url + "/v1/budget", headers={"Authorization": f"Bearer {tokens['eve']}"}).json()
    assert spent["epsilon_spent"] == pytest.approx(budget["epsilon_spent"] + 0.5)  # the engine had read data
    assert _idle_after(server) < 0.3  # the interrupted query does not go on in the background


def test_slow_queries_pin_no_worker(slow: tuple[Server, dict[str, str]]) -> None:
    server, tokens = slow
    results: list[tuple[int, str | None, float]] = []

    def one(i: int) -> None:
        sql = f"DP-SELECT 0.01 COUNT(*) FROM big WHERE {SLOW_WHERE} AND id > {i}"
        results.append(_post(server, tokens["eve"], "/v1/query", sql))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(code == "query_failed" and took < TIMEOUT + 2.0 for _, code, took in results), results
    assert _idle_after(server) < 0.3
    started = time.monotonic()
    assert httpx.get(server.url + "/healthz").status_code == 200
    status, _, _ = _post(server, tokens["eve"], "/v1/query", "DP-SELECT 0.01 COUNT(*) FROM big WHERE id < 10")
    assert status == 200 and time.monotonic() - started < 1.0


def test_the_owners_raw_sql_is_bounded_too(slow: tuple[Server, dict[str, str]]) -> None:
    server, tokens = slow
    status, _, took = _post(
        server, tokens["owner"], "/v1/sql", f"SELECT COUNT(*) FROM big WHERE {SLOW_WHERE}"
    )
    assert status != 200 and took < TIMEOUT + 1.0, (status, took)


def test_the_limit_bounds_a_whole_query_not_each_engine_query(tmp_path: Path) -> None:
    _slow_setup(tmp_path / "db", rows=300_000)
    with Database(tmp_path / "db") as db:
        where = "md5(" * 4 + "name" + ")" * 4 + " <> 'x'"
        started = time.monotonic()
        db.owner_sql(f"SELECT COUNT(*) FROM big WHERE {where}")
        one = time.monotonic() - started  # one engine query's time on this machine
        db.query_timeout = 1.5 * one  # each of the four engine queries below fits; together they do not
        query = (
            f"DP-SELECT 1 COUNT(*), MEDIAN(id), QUANTILE(id, 0.1), QUANTILE(id, 0.9) FROM big WHERE {where}"
        )
        started = time.monotonic()
        with contextlib.suppress(PrivdbError):  # stopped at the limit, charged: the time is what is checked
            engine.run(db, "eve", query)
        took = time.monotonic() - started
    assert took < db.query_timeout + 0.5 * one + 0.2, (took, one)
