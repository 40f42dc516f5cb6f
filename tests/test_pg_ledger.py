"""Several hosts, one PostgreSQL ledger (issue 16): two database directories (one per host, the same tables)
and two real ``privdb serve`` processes on different ports share budgets, analysts, tokens, stored answers
and the log in a throw-away PostgreSQL cluster (tests/pgfixture.py). Check-and-spend stays exact across
them under concurrency, and a ``kill -9`` of one server mid-load loses no spend (docs/proofs/ledger.md,
"Several hosts")."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest

import privdb
from pgfixture import fresh_database, postgres_cluster
from privdb.accounting.ledger import Ledger
from privdb.catalog.querylog import LogFilter
from privdb.catalog.store import Catalog
from privdb.catalog.surveys import Collection
from privdb.database import Database
from privdb.errors import BudgetExhausted, Forbidden, InvalidParameter, LimitReached, Unauthorized
from serverfixtures import Server, ask_concurrently, make_server_db


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    with postgres_cluster() as url:
        yield url


@pytest.fixture
def ledger_url(cluster: str) -> str:
    return fresh_database(cluster)


def _two_hosts(tmp_path: Path, ledger: str, **options: Any) -> tuple[Path, Path, dict[str, str]]:
    """Host A's directory, made as make_server_db makes it (its catalog and ledger in ``ledger``), and
    host B's: a copy of A's data file under a directory of the same name (the database's name)."""
    a, b = tmp_path / "a" / "db", tmp_path / "b" / "db"
    tokens = make_server_db(a, ledger=ledger, **options)
    b.mkdir(parents=True)
    shutil.copy(a / "data.duckdb", b / "data.duckdb")
    return a, b, tokens


def test_two_directories_share_analysts_budgets_answers_and_the_log(tmp_path: Path, ledger_url: str) -> None:
    a, b, tokens = _two_hosts(tmp_path, ledger_url, budget=1.0)
    assert not (a / "privdb.sqlite").exists()  # nothing of the catalog or ledger stays in the directory
    query = "DP-SELECT 0.5 COUNT(*) FROM people"
    with (
        privdb.connect(a, token=tokens["alice"], ledger=ledger_url) as on_a,
        privdb.connect(b, token=tokens["alice"], ledger=ledger_url) as on_b,
    ):
        first = on_a.sql(query)
        again = on_b.sql(query)  # the stored answer, on the other host: the same noisy value, free
        assert again.rows == first.rows and on_b.budget()["epsilon_spent"] == 0.5
        on_b.sql("DP-SELECT 0.5 COUNT(*) FROM secret")
        with pytest.raises(BudgetExhausted):  # B's spend counts on A
            on_a.sql("DP-SELECT 0.1 COUNT(*) FROM people WHERE age > 40")
        entries = on_a.log()
        assert [e["outcome"] for e in entries] == ["answered", "answered", "refused"]
        assert [e["query"] for e in on_a.log(table="secret")] == ["DP-SELECT 0.5 COUNT(*) FROM secret"]
        assert len(on_b.log(outcome="refused", limit=5)) == 1
    with Database(b, ledger=ledger_url) as owner_b:  # the owner revokes on B: the token stops working on A
        owner_b.revoke("alice")
    with pytest.raises(Unauthorized, match="revoked"):
        privdb.connect(a, token=tokens["alice"], ledger=ledger_url)
    with pytest.raises(InvalidParameter, match="postgresql://"):
        Database(a, ledger="mysql://nowhere/db")
    with pytest.raises(InvalidParameter, match="cannot open the ledger at 'postgresql://u:\\*\\*\\*@"):
        Database(a, ledger="postgresql://u:secret@127.0.0.1:1/none")  # the password is not shown


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_catalog_surveys_answers_and_columns_on_both_stores(tmp_path: Path, cluster: str, store: str) -> None:
    target = str(tmp_path / "c.sqlite") if store == "sqlite" else fresh_database(cluster)
    Catalog(target).close()
    catalog = Catalog(target)  # opening again: tables and added columns exist already
    catalog.create_survey("s", {"k": 2}, 2)
    with pytest.raises(InvalidParameter, match="exists already"):
        catalog.create_survey("s", {"k": 2}, 2)
    assert catalog.add_to_survey("s", [1, 2], 3) == 3 and catalog.add_to_survey("s", [1, 0], 1) == 4
    assert catalog.survey("s") == ({"k": 2}, 4, [2, 2])
    (once,) = catalog.issue_respondent_tokens("s", 1)  # one response per respondent token, on both stores
    respondent = Collection(via="respondent", token=once)
    assert catalog.add_to_survey("s", [1, 0], 1, respondent) == 5
    with pytest.raises(LimitReached):
        catalog.add_to_survey("s", [1, 0], 1, respondent)
    collector = Collection(via="collector", rate=10)
    with pytest.raises(Forbidden, match="closed"):
        catalog.add_to_survey("s", [1, 0], 1, collector)
    catalog.create_survey("open", {"k": 2}, 2, open_limit=3)
    assert catalog.add_to_survey("open", [2, 0], 2, collector) == 2
    with pytest.raises(LimitReached):
        catalog.add_to_survey("open", [2, 0], 2, collector)
    assert catalog.survey("s")[1] == 5 and catalog.survey_access("open")["open_responses"] == 2
    catalog.store_answer("alice", "q", "people", {"v": 1})
    catalog.store_answer("alice", "q", "people", {"v": 2})  # replaced, not duplicated
    assert catalog.stored_answer("alice", "q") == {"v": 2}
    catalog.set_metadata("People", {"columns": {}})
    assert catalog.stored_answer("alice", "q") is None  # a reloaded table's answers are stale
    catalog.store_answer("alice", "j", "people", {"v": 3}, tables=("people", "Visits"))
    catalog.forget_answers("visits")  # a join's answer goes with any table it read
    assert catalog.stored_answer("alice", "j") is None
    assert not catalog.revoke_analyst("nobody")
    catalog.add_analyst("bob", expires_in=3600)
    assert catalog.revoke_analyst("bob") and catalog.analysts()[0]["revoked"]
    catalog.log_refusal("bob", "DP-SELECT 1 COUNT(*) FROM people_2 p", "budget_exhausted")
    catalog.log_refusal("bob", "DP-SELECT 1 COUNT(*) FROM people", "budget_exhausted")

    with Ledger(target):  # the log reads the ledger's spends beside the refusals
        pass
    named = catalog.log("db", LogFilter(table="people"))
    assert [r.query for r in named] == ["DP-SELECT 1 COUNT(*) FROM people"]  # whole words only
    assert catalog.log_count("db", LogFilter()) == 2
    catalog.log_refusal("bob", "DP-SELECT '\ud800\x00'", "parse_error")  # not Unicode: stored escaped
    assert catalog.log("db", LogFilter(), offset=2)[0].query == "DP-SELECT '\\ud800\\x00'"
    catalog.close()


# ---------------------------------------------------------------- two servers, one ledger


@pytest.mark.slow
def test_400_queries_on_two_servers_against_a_budget_for_100(tmp_path: Path, ledger_url: str) -> None:
    a, b, _ = _two_hosts(tmp_path, ledger_url)
    granted = subprocess.run(  # granted once, on host B's directory: the token works on both servers
        [sys.executable, "-m", "privdb", "grant", "carol", "--db", str(b), "--ledger", ledger_url,
         "--epsilon", "10"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    token = granted.stdout.strip().splitlines()[-1]
    servers = [Server(host, extra=["--ledger", ledger_url]).start() for host in (a, b)]
    try:
        queries = [f"DP-SELECT 0.1 COUNT(*) FROM people WHERE age > {i}" for i in range(400)]
        with ThreadPoolExecutor(2) as both:  # 10 clients on each server at once
            halves = [
                both.submit(ask_concurrently, s.url, token, queries[i::2], 10) for i, s in enumerate(servers)
            ]
            per_server = [half.result() for half in halves]
    finally:
        for server in servers:
            server.stop()
    results = [r for half in per_server for r in half]
    statuses = [s for _, s, _ in results]
    assert statuses.count(200) == 100 and statuses.count(409) == 300, statuses
    assert all(body["error"]["code"] == "budget_exhausted" for _, s, body in results if s == 409)
    assert all(any(s == 200 for _, s, _ in half) for half in per_server)  # both servers answered
    with Database(a, ledger=ledger_url) as db:
        assert db.budget("carol").epsilon_spent == Fraction(10)  # exactly the budget, not one query over
        committed = [s for s in db.ledger.spends("carol", db.name) if s.state == "committed"]
        assert len(committed) == 100 and sum(s.epsilon for s in committed) == 10
        answered = {e["query"] for e in db.log("carol", outcome="answered")}
    assert answered == {q for q, s, _ in results if s == 200}  # the log is the answers


@pytest.mark.slow
def test_kill_9_of_one_server_mid_load_loses_no_spend(tmp_path: Path, ledger_url: str) -> None:
    a, b, tokens = _two_hosts(tmp_path, ledger_url, budget=3.0)  # 300 answers of ε = 0.01
    servers = [Server(host, extra=["--ledger", ledger_url]).start() for host in (a, b)]
    answered: list[str] = []
    exhausted: list[int] = []
    stop = threading.Event()

    def client(server: Server, worker: int) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=30) as http:
            for i in range(100_000):
                query = f"DP-SELECT 0.01 COUNT(*) FROM people WHERE age > {worker * 100_000 + i}"
                try:
                    response = http.post(server.url + "/v1/query", json={"sql": query})
                except httpx.HTTPError:
                    return  # its server was killed
                if response.status_code == 200:
                    answered.append(query)
                elif response.json()["error"]["code"] == "budget_exhausted":
                    exhausted.append(worker)
                    return
                if stop.is_set():
                    return

    threads = [threading.Thread(target=client, args=(servers[w % 2], w)) for w in range(8)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(answered) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        servers[0].kill()  # kill -9 of host A's server, mid-load; B's clients go on until the budget ends
        for t in threads:
            t.join(timeout=60)
        stop.set()
    finally:
        stop.set()
        for server in servers:
            server.stop()
    assert len(answered) >= 60 and exhausted, "the load did not reach the budget's end on server B"
    with Database(a, ledger=ledger_url) as db:
        budget = db.budget("alice")
        log = db.log("alice")
    outcomes = {e["query"]: e["outcome"] for e in log}
    assert all(outcomes.get(q) == "answered" for q in answered)  # every answer received has its spend
    charged = [e for e in log if e["outcome"] in ("answered", "failed", "interrupted")]
    assert sum(Fraction(e["epsilon"]).limit_denominator(1000) for e in charged) == budget.epsilon_spent
    # the budget ran out, and not one query over: B's clients stopped when the budget was held to its end,
    # partly by A's reservations in flight; those A had not begun to read were released when its database
    # was next opened (issue 37: a dead query is charged only if it had read), so they return their ε
    unread = [e for e in log if e["outcome"] == "interrupted" and e["code"] is None]
    assert budget.epsilon_spent + Fraction(len(unread), 100) == budget.epsilon_total == 3
    assert len([e for e in log if e["outcome"] == "interrupted"]) <= 4  # one in flight per A client


def test_a_lost_connection_fails_one_call_and_the_next_connects_again(ledger_url: str) -> None:
    """PostgreSQL restarted, or the network cut: the call that meets it fails (nothing written, no answer),
    the next one opens a new connection."""
    import psycopg

    with Ledger(ledger_url) as ledger:
        ledger.set_budget("alice", "db", epsilon=1)
        with psycopg.connect(ledger_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(psycopg.OperationalError):
            ledger.spend("alice", "db", epsilon=0.5)
        ledger.spend("alice", "db", epsilon=0.25)
        assert ledger.budget("alice", "db").epsilon_spent == Fraction(1, 4)
        assert [s.state for s in ledger.spends("alice", "db")] == ["committed"]
