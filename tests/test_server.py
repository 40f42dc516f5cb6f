"""The server on a real loopback port: the API of DESIGN.md, authentication and roles, limits, budgets
under concurrency (one and two worker processes), kill -9 in the middle of a load, and a schemathesis run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import privdb
from privdb.client import RemoteConnection
from privdb.database import Database
from privdb.errors import Forbidden, PrivdbError, RawAccessDenied, Unauthorized, UnknownTable
from serverfixtures import Server, ask_concurrently, make_server_db


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("served") / "db"
    tokens = make_server_db(path, budget=50.0)
    server = Server(path).start()
    yield server, tokens
    server.stop()


def _post(url: str, token: str | None, path: str, body: Any) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.post(url + path, json=body, headers=headers, timeout=30)


def test_analyst_session_over_http_matches_the_embedded_api(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    with privdb.connect(server.url, token=tokens["alice"]) as conn:
        assert isinstance(conn, RemoteConnection)
        before = conn.budget()["epsilon_remaining"]
        res = conn.sql("DP-SELECT 0.5 sex, COUNT(*) FROM people GROUP BY sex")
        assert res.columns == ["sex", "COUNT(*)"] and len(res.rows) == 2
        assert res.accuracy[0]["mechanism"] and res.epsilon_spent == 0.5
        assert conn.budget()["epsilon_remaining"] == pytest.approx(before - 0.5)
        assert conn.explain("DP-SELECT 1 COUNT(*) FROM people")["epsilon"] == 1
        assert {t["name"] for t in conn.tables()} == {"people", "secret"}
        assert any(e["query"].startswith("DP-SELECT 0.5") for e in conn.log())
    with privdb.connect(server.url, token=tokens["bob"]) as bob:
        assert [t["name"] for t in bob.tables()] == ["people"]  # only what was granted
        assert all(e["analyst"] == "bob" for e in bob.log())  # never another analyst's queries


def test_errors_have_design_shapes_and_statuses(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    alice = tokens["alice"]
    cases = [
        (alice, "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM"}, 400, "parse_error"),
        (alice, "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM nosuch"}, 404, "unknown_table"),
        (alice, "/v1/query", {"sql": "SELECT * FROM people"}, 403, "raw_access_denied"),
        (alice, "/v1/query", {"sq": "x"}, 400, "invalid_parameter"),
        (alice, "/v1/query", [1, 2], 400, "invalid_parameter"),
        (None, "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM people"}, 401, "unauthorized"),
        ("nonsense", "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM people"}, 401, "unauthorized"),
        (alice, "/v1/sql", {"sql": "SELECT 1"}, 403, "raw_access_denied"),
        (alice, "/v1/analysts", {"name": "eve", "epsilon": 100}, 403, "raw_access_denied"),
        (tokens["bob"], "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM secret"}, 403, "forbidden"),
        (tokens["owner"], "/v1/query", {"sql": "DP-SELECT 1 COUNT(*) FROM people"}, 403, "forbidden"),
        (alice, "/v1/query", {"sql": "DP-SELECT 1e6 COUNT(*) FROM people"}, 400, None),
    ]
    spent = httpx.get(server.url + "/v1/budget", headers={"Authorization": f"Bearer {alice}"}).json()
    for token, path, body, status, code in cases:
        response = _post(server.url, token, path, body)
        assert response.status_code == status, (path, body, response.text)
        error = response.json()["error"]
        assert set(error) == {"code", "message"} and error["message"]
        assert code is None or error["code"] == code, (body, error)
        assert "Traceback" not in response.text
    after = httpx.get(server.url + "/v1/budget", headers={"Authorization": f"Bearer {alice}"}).json()
    assert after["epsilon_spent"] == spent["epsilon_spent"]  # refusals spend nothing
    assert httpx.get(server.url + "/v1/nowhere").status_code == 404


def test_client_raises_the_same_errors_as_the_library(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    with privdb.connect(server.url, token=tokens["bob"]) as bob:
        with pytest.raises(Forbidden):
            bob.sql("DP-SELECT 1 COUNT(*) FROM secret")
        # bob may query only his tables: whether another table exists is not his to learn
        with pytest.raises(Forbidden, match="nosuch"):
            bob.sql("DP-SELECT 1 COUNT(*) FROM nosuch")
    with (
        privdb.connect(server.url, token=tokens["alice"]) as alice,
        pytest.raises(UnknownTable, match="nosuch"),
    ):
        alice.sql("DP-SELECT 1 COUNT(*) FROM nosuch")  # an analyst of every table is told it does not exist
    with privdb.connect(server.url, token=tokens["bob"]) as bob, pytest.raises(RawAccessDenied):
        bob.owner_sql("SELECT 1")
    with pytest.raises(Unauthorized):
        RemoteConnection(server.url, "wrong").budget()


def test_owner_grants_revokes_loads_and_reads_the_log(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = served
    with privdb.connect(server.url, token=tokens["owner"]) as owner:
        assert isinstance(owner, RemoteConnection)
        carol = owner.grant("carol", epsilon=1.0, tables=["people"])
        with privdb.connect(server.url, token=carol) as conn:
            conn.sql("DP-SELECT 0.25 COUNT(*) FROM people")
        assert owner.budget_of("carol")["epsilon_spent"] == 0.25
        assert any(e["analyst"] == "carol" for e in owner.log())
        everything = owner.log()
        assert owner.log(limit=1, offset=1) == everything[1:2]  # GET /v1/log?limit=&offset= pages
        with pytest.raises(PrivdbError):
            owner.log(limit=0)
        owner.revoke("carol")
        with pytest.raises(Unauthorized, match="revoked"), privdb.connect(server.url, token=carol) as conn:
            conn.budget()
        short = owner.grant("dave", epsilon=1.0, expires_in=0.5)
        time.sleep(1.0)
        with pytest.raises(Unauthorized, match="expired"), privdb.connect(server.url, token=short) as conn:
            conn.budget()
        csv = tmp_path / "t.csv"
        csv.write_text("x,y\n1,a\n2,b\n3,a\n")
        owner.load("small", csv, {"columns": {"x": {"type": "int", "lower": 0, "upper": 5}}})
        assert owner.owner_sql("SELECT SUM(x) AS s FROM small")["s"].iloc[0] == 6
        erin = owner.grant("erin", epsilon=1.0, tables=["people"])  # scoped: explain is scoped too
        with privdb.connect(server.url, token=erin) as conn:
            assert conn.explain("DP-SELECT 1 COUNT(*) FROM people")["table"] == "people"
            with pytest.raises(Forbidden, match="'small'") as refused:
                conn.explain("DP-SELECT 1 SUM(x) FROM small")
            assert "secret" not in refused.value.message  # nothing outside erin's grant is named
            with pytest.raises(Forbidden):  # refused before its columns are looked at
                conn.sql("DP-SELECT 1 SUM(nosuch) FROM small")
        listed = httpx.get(
            server.url + "/v1/analysts", headers={"Authorization": f"Bearer {tokens['owner']}"}
        )
        assert {a["name"] for a in listed.json()} >= {"alice", "bob", "carol", "dave"}
        assert "token" not in json.dumps(listed.json())  # tokens are shown once, never listed


def test_oversized_bodies_get_413(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    big = {"sql": "DP-SELECT 1 COUNT(*) FROM people WHERE " + " OR ".join(["age = 1"] * 2_000_000)}
    response = _post(server.url, tokens["alice"], "/v1/query", big)
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"
    streamed = httpx.post(
        server.url + "/v1/query",
        content=iter([b"x" * 2**20] * 20),  # no Content-Length: counted while it streams
        headers={"Authorization": f"Bearer {tokens['alice']}", "Content-Type": "application/json"},
    )
    assert streamed.status_code == 413


def test_the_page_loads_its_shared_helpers_first_and_every_file_it_names_is_served(
    served: tuple[Server, dict[str, str]],
) -> None:
    server, _ = served
    page = httpx.get(server.url + "/", timeout=30).text
    scripts = re.findall(r'<script src="/static/([^"]+)"', page)
    assert scripts[0] == "common.js" and {"app.js", "surveys.js", "publish.js"} <= set(scripts)
    for name in [*scripts, *re.findall(r'href="/static/([^"]+)"', page)]:
        served_file = httpx.get(server.url + "/static/" + name, timeout=30)
        assert served_file.status_code == 200 and served_file.text, name
    assert httpx.get(server.url + "/static/app.py", timeout=30).status_code == 404  # only the allow-list


def test_cli_speaks_to_the_server(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    out = subprocess.run(
        [sys.executable, "-m", "privdb", "query", "--url", server.url, "DP-SELECT 0.1 COUNT(*) FROM people",
         "--format", "json"],
        env={"PRIVDB_TOKEN": tokens["alice"], "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["epsilon_spent"] == 0.1
    bad = subprocess.run(
        [sys.executable, "-m", "privdb", "query", "--url", server.url, "--token", "wrong",
         "DP-SELECT 1 COUNT(*) FROM people"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and "unauthorized" in bad.stderr and "Traceback" not in bad.stderr


# ---------------------------------------------------------------- budgets under concurrency and faults


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_200_concurrent_queries_against_a_budget_for_50(tmp_path: Path, workers: int) -> None:
    path = tmp_path / "db"
    tokens = make_server_db(path, budget=5.0)  # exactly 50 queries of ε = 0.1
    server = Server(path, workers=workers).start()
    try:
        queries = [f"DP-SELECT 0.1 COUNT(*) FROM people WHERE age > {i}" for i in range(200)]
        results = ask_concurrently(server.url, tokens["alice"], queries, clients=20)
    finally:
        server.stop()
    statuses = [s for _, s, _ in results]
    assert statuses.count(200) == 50 and statuses.count(409) == 150, statuses
    assert all(b["error"]["code"] == "budget_exhausted" for _, s, b in results if s == 409)
    with Database(path) as db:
        budget = db.budget("alice")
        assert budget.epsilon_spent == Fraction(5)  # exactly the budget: not one query over
        assert sum(s.epsilon for s in db.ledger.spends("alice", db.name) if s.state == "committed") == 5


@pytest.mark.slow
def test_kill_9_mid_load_loses_no_spend_and_releases_nothing_unpaid(tmp_path: Path) -> None:
    path = tmp_path / "db"
    tokens = make_server_db(path, people=20_000, budget=1000.0)
    server = Server(path).start()
    answered: list[str] = []
    stop = threading.Event()

    def client(worker: int) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=10) as http:
            for i in range(10_000):
                if stop.is_set():
                    return
                age = worker * 10_000 + i
                query = f"DP-SELECT 0.01 state, COUNT(*) FROM people WHERE age > {age} GROUP BY state"
                try:
                    response = http.post(server.url + "/v1/query", json={"sql": query})
                except httpx.HTTPError:
                    return
                if response.status_code == 200:
                    answered.append(query)

    threads = [threading.Thread(target=client, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    time.sleep(3.0)
    server.kill()  # kill -9, mid-load
    stop.set()
    for t in threads:
        t.join()
    assert len(answered) > 10
    restarted = Server(path).start()
    try:
        with privdb.connect(restarted.url, token=tokens["owner"]) as owner:
            log = owner.log()
            spent = owner.budget_of("alice")["epsilon_spent"]
    finally:
        restarted.stop()
    logged = {e["query"]: e for e in log}
    for query in answered:  # every answer that left the server has its spend committed in the ledger
        entry = logged.get(" ".join(query.split()))  # the log shows the query as written
        assert entry is not None and entry["outcome"] == "answered", query
    charged = [e for e in log if e["outcome"] in ("answered", "interrupted")]
    assert sum(e["epsilon"] for e in charged) == pytest.approx(spent)  # log and ledger agree
    assert len([e for e in charged if e["outcome"] == "interrupted"]) <= 8  # at most one in flight per client


@pytest.mark.slow
def test_schemathesis_finds_no_server_error(tmp_path: Path) -> None:
    path = tmp_path / "db"
    tokens = make_server_db(path)
    server = Server(path).start()
    try:
        _schemathesis(server, tokens, tmp_path)
    finally:
        server.stop()


def _schemathesis(server: Server, tokens: dict[str, str], workdir: Path) -> None:
    for who in ("alice", "owner"):
        run = subprocess.run(
            [str(Path(sys.executable).parent / "schemathesis"), "run", server.url + "/openapi.json",
             "--checks", "not_a_server_error", "--max-examples", "15",
             "-H", f"Authorization: Bearer {tokens[who]}", "--generation-deterministic"],
            capture_output=True, text=True, check=False, timeout=600, cwd=workdir,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


# ---------------------------------------------------------------- surveys of the local model


@pytest.mark.parametrize("protocol", ["coin", "krr", "oue", "olh"])
def test_survey_collects_randomised_batches_and_estimates_unbiasedly(
    served: tuple[Server, dict[str, str]], protocol: str
) -> None:
    """People's devices randomise (privdb.local's client side); the server only ever sees reports. The
    estimate's interval covers the truth (z = 5.3 per value: false failure ≤ 1e-6 over the tests)."""
    from conftest import seeded
    from privdb.local.survey import Survey

    server, tokens = served
    owner = {"Authorization": f"Bearer {tokens['owner']}"}
    domain = ["no", "yes"] if protocol == "coin" else ["A", "B", "C", "D", "E"]
    spec: dict[str, Any] = {"name": f"s_{protocol}", "protocol": protocol, "domain": domain, "open": True}
    if protocol != "coin":
        spec["epsilon"] = 2.0
    made = httpx.post(server.url + "/v1/surveys", json=spec, headers=owner)
    assert made.status_code == 200, made.text
    collect = {"Authorization": f"Bearer {made.json()['collect_token']}"}
    survey = Survey(made.json()["spec"])
    truth = np.repeat(np.arange(len(domain)), [4000, 2500, 2000, 1000, 500][: len(domain)])
    if protocol == "coin":
        truth = np.repeat([0, 1], [6000, 4000])
    reports = survey.protocol.randomizer(rng=seeded(9)).randomize(truth)
    for lo in range(0, len(truth), 1000):  # a survey that grows batch by batch (the owner's import)
        batch = _as_json(protocol, reports, lo, lo + 1000, domain)
        added = httpx.post(server.url + f"/v1/surveys/{spec['name']}/responses", json={"responses": batch},
                           headers=owner)  # fmt: skip
        assert added.status_code == 200, added.text
    estimate = httpx.get(
        server.url + f"/v1/surveys/{spec['name']}", headers={"Authorization": f"Bearer {tokens['alice']}"}
    )
    body = estimate.json()
    assert body["n"] == len(truth)
    counts = np.bincount(truth, minlength=len(domain))
    for row, true in zip(body["estimates"], counts, strict=True):
        assert abs(row["count"] - true) <= 5.3 * row["std_error"], (protocol, row, true)
    wrong = httpx.post(server.url + f"/v1/surveys/{spec['name']}/responses", json={"responses": ["nope"]},
                       headers=collect)  # fmt: skip
    assert wrong.status_code == 400 and "nope" not in wrong.text  # never echoes a response
    stranger = httpx.post(server.url + f"/v1/surveys/{spec['name']}/responses", json={"responses": batch},
                          headers={"Authorization": f"Bearer {tokens['alice']}"})  # fmt: skip
    assert stranger.status_code == 403


def _as_json(protocol: str, reports: Any, lo: int, hi: int, domain: list[str]) -> list[Any]:
    if protocol == "oue":
        return [[domain[i] for i in reports.report(j)] for j in range(lo, hi)]
    if protocol == "olh":
        return [[int(reports.a[j]), int(reports.b[j]), int(reports.y[j])] for j in range(lo, hi)]
    return [domain[int(v)] for v in np.asarray(reports)[lo:hi]]


def test_the_log_pages(tmp_path: Path) -> None:
    """Issue 15: ``GET /v1/log?limit=&offset=`` ignored ``limit``. The library pages the time-ordered log
    (the server test above pages it over HTTP); a bad page is a clear error."""
    from privdb.database import Database
    from privdb.errors import InvalidParameter

    db = Database(tmp_path / "db")
    db.grant("alice", epsilon=10)
    for i in range(5):
        db.catalog.log_refusal("alice", f"DP-SELECT {i} nonsense", "parse_error")
    everything = db.log("alice")
    assert [e["query"] for e in db.log("alice", limit=2, offset=1)] == [e["query"] for e in everything[1:3]]
    assert db.log("alice", offset=4) == everything[4:]
    with pytest.raises(InvalidParameter):
        db.log("alice", limit=0)
    db.close()


def test_the_log_shows_the_query_as_written(tmp_path: Path) -> None:
    """Issue 15: the log showed privdb's normal form ("DP-SELECT 0.2 DELTA 0.0 SELECT …"), not valid SQL; it
    shows what the analyst wrote (whitespace folded)."""
    from joinfixtures import people_visits
    from privdb.sql import engine

    db = people_visits(tmp_path / "db")
    query = "DP-SELECT 0.2   sex, COUNT(*)\n FROM people GROUP BY sex"
    engine.run(db, "alice", query)
    assert db.log("alice")[-1]["query"] == "DP-SELECT 0.2 sex, COUNT(*) FROM people GROUP BY sex"
    db.close()
