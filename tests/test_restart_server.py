"""Issue 37, restarts of a real server: `kill -9` while 16 queries are in flight, some before their read and
some in it, then a restart — what had not read costs nothing, what had read is charged, and the log and the
owner's start-up line say which; and a second `privdb serve` on a served database is refused at once, before
it loads the server (no engine, no ledger, no lock wait)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

from privdb.database import Database
from serverfixtures import Server, free_port, make_server_db

pytestmark = pytest.mark.slow

# `privdb serve` with two pause points, for the test to kill it at: every other query stops just before its
# reservation is marked as reaching the read, the others inside the engine's read (after the mark); each
# pause writes a line to the file PRIVDB_TEST_PAUSED names, so the test kills once all are where it wants
_PAUSING_SERVE = textwrap.dedent(
    """
    import itertools, os, runpy, sys, threading
    from pathlib import Path
    from privdb.accounting.ledger import Reservation
    from privdb.backends.duckdb import DuckDBBackend

    seen, turn, lock = Path(os.environ["PRIVDB_TEST_PAUSED"]), itertools.count(), threading.Lock()

    def pause(where):
        with lock, seen.open("a") as out:
            out.write(where + "\\n")
        threading.Event().wait()

    reading = Reservation.reading

    def reading_after_a_pause(self):
        if next(turn) % 2 == 0:
            pause("before")
        reading(self)

    def read_forever(self, sql, *, timeout=None):
        pause("during")

    Reservation.reading = reading_after_a_pause
    DuckDBBackend.fetch_columns = read_forever
    sys.argv = ["privdb", *sys.argv[1:]]
    runpy.run_module("privdb", run_name="__main__")
    """
)


def _ask_in_background(url: str, token: str, queries: list[str]) -> tuple[list[threading.Thread], list[int]]:
    statuses: list[int] = []

    def one(query: str) -> None:
        try:
            response = httpx.post(
                url + "/v1/query", json={"sql": query}, headers={"Authorization": f"Bearer {token}"},
                timeout=300,
            )  # fmt: skip
            statuses.append(response.status_code)
        except httpx.HTTPError:
            statuses.append(0)  # the server died under it

    threads = [threading.Thread(target=one, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    return threads, statuses


def _until(condition: object, what: str, limit: float = 240.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"never {what}")
        time.sleep(0.05)


def _reservations(db: Path) -> list[tuple[str, int | None]]:
    con = sqlite3.connect(db / "privdb.sqlite")
    try:
        return [(s, u) for s, u in con.execute("SELECT state, unread FROM spends WHERE analyst = 'alice'")]
    finally:
        con.close()


def _after_restart(db: Path, token: str) -> tuple[float, list[dict[str, object]], str]:
    """alice's ε spent, her own log (her token) and the restarted server's start-up lines."""
    restarted = Server(db).start()
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            spent = http.get(restarted.url + "/v1/budget").json()
            log = http.get(restarted.url + "/v1/log").json()
    finally:
        restarted.stop()
    assert restarted.process is not None and restarted.process.stderr is not None
    said = restarted.process.stderr.read().decode()
    remaining = float(spent["epsilon_remaining"])
    return 5.0 - remaining, log if isinstance(log, list) else log["entries"], said


def test_kill_9_before_the_reads_costs_nothing_and_during_them_is_charged(tmp_path: Path) -> None:
    db = tmp_path / "db"
    tokens = make_server_db(db, budget=5.0)
    paused = tmp_path / "paused"
    paused.touch()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", _PAUSING_SERVE, "serve", "--db", str(db), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env=os.environ | {"PRIVDB_TEST_PAUSED": str(paused)},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _healthy(url), "came up")
        queries = [f"DP-SELECT 0.25 COUNT(*) FROM people WHERE age > {i}" for i in range(16)]
        threads, statuses = _ask_in_background(url, tokens["alice"], queries)
        _until(lambda: len(paused.read_text().split()) == 16, "paused 16 queries")
        assert sorted(paused.read_text().split()) == ["before"] * 8 + ["during"] * 8
        # every query has reserved; the 8 stopped before the mark are still unread in the ledger
        assert sorted(_reservations(db), key=str) == [("reserved", 1)] * 8 + [("reserved", None)] * 8
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # kill -9, the whole process group
        process.wait()
    for t in threads:
        t.join()
    assert statuses == [0] * 16  # none answered
    spent, log, said = _after_restart(db, tokens["alice"])
    assert spent == pytest.approx(8 * 0.25)  # the 8 that reached the read, and only those
    ended = sorted((e["outcome"], e["epsilon"], e["code"]) for e in log)
    assert ended == [("interrupted", 0.0, None)] * 8 + [("interrupted", 0.25, "query_failed")] * 8
    assert "settled 16 reservations of queries whose process died: 8 charged (ε 2 in all" in said
    assert "8 released" in said


@pytest.fixture(scope="module")
def slow_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A million people: SLOW reads for seconds, sixteen at once for longer."""
    path = tmp_path_factory.mktemp("slow") / "db"
    tokens = make_server_db(path, people=200, budget=5.0)
    with Database(path) as database:
        database.backend.raw(
            "CREATE TABLE crowd AS SELECT range AS pid, (range * 7919) % 90 AS age, "
            "(range * 104729) % 100000 AS income FROM range(1000000)"
        )
        columns = {"age": {"type": "int", "lower": 0, "upper": 100},
                   "income": {"type": "int", "lower": 0, "upper": 100000}}  # fmt: skip
        database.set_metadata("crowd", {"columns": columns})
    return path, tokens


def test_kill_9_while_16_real_reads_run_charges_them_all(slow_db: tuple[Path, dict[str, str]]) -> None:
    db, tokens = slow_db
    server = Server(db).start()
    try:
        queries = [
            f"DP-SELECT 0.25 COUNT(*) FROM crowd WHERE md5(md5(md5(CAST(income + age + {i} AS VARCHAR)))) "
            "LIKE 'a%'"
            for i in range(16)
        ]
        threads, statuses = _ask_in_background(server.url, tokens["alice"], queries)
        # all sixteen reserved and marked as reading (the mark is written before the engine is called)
        _until(lambda: sorted(_reservations(db), key=str) == [("reserved", None)] * 16, "all reading")
    finally:
        server.kill()
    for t in threads:
        t.join()
    assert statuses == [0] * 16
    spent, log, said = _after_restart(db, tokens["alice"])
    assert spent == pytest.approx(16 * 0.25)
    assert sorted((e["outcome"], e["code"]) for e in log) == [("interrupted", "query_failed")] * 16
    assert "16 charged (ε 4 in all" in said and "0 released" in said


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_second_serve_is_refused_before_it_loads_the_server(tmp_path: Path) -> None:
    """The refusal comes before the server's modules (seconds to import on a busy machine), the engine or
    the ledger are loaded: nothing is opened, so no lock is waited for."""
    db = tmp_path / "db"
    make_server_db(db)
    first = Server(db).start()
    try:
        second = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "privdb", "serve", "--db", str(db),
             "--port", str(free_port())],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        first.stop()
    lines = second.stderr.splitlines()
    said = [line for line in lines if not line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}
    assert second.returncode == 2
    assert first.process is not None
    assert any(f"is served already by `privdb serve` (pid {first.process.pid})" in line for line in said)
    heavy = {"duckdb", "fastapi", "uvicorn", "privdb.database", "privdb.server", "privdb.accounting.ledger"}
    assert "privdb.cli" in imported and not imported & heavy


def test_a_stopped_server_closes_its_database(tmp_path: Path) -> None:
    """SIGTERM: the server answers what it holds, then closes its Database itself (a command ends without
    the interpreter's teardown, privdb.cli.entry.leave), so the ledger's write-ahead log is checkpointed
    and gone, not left for the next start to replay."""
    db = tmp_path / "db"
    tokens = make_server_db(db)
    server = Server(db).start()
    try:
        answered = httpx.post(
            server.url + "/v1/query", json={"sql": "DP-SELECT 0.5 COUNT(*) FROM people"},
            headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=60,
        )  # fmt: skip
        assert answered.status_code == 200, answered.text
        assert list(db.rglob("*-wal")), "a served ledger writes ahead"
    finally:
        server.stop()
    assert server.process is not None and server.process.returncode == 128 + signal.SIGTERM
    assert not list(db.rglob("*-wal")) and not list(db.rglob("*.wal"))
