"""Cancel requests (psql's Ctrl-C, psycopg's ``cancel()``): the session's running statement stops as at the
server's time limit; a DP-SELECT that had started reading is charged, with the one ``query_failed``
outcome; another session's key cannot cancel it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import psycopg
import pytest

from pgwirefixtures import PSQL, PgServed
from privdb.database import Database
from serverfixtures import Server, free_port, make_server_db

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")

_SLOW_RAW = "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3"  # minutes of work
_ROWS = 20_000_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    path = tmp_path_factory.mktemp("pgcancel") / "db"
    tokens = make_server_db(path)
    with Database(path) as db:  # a table large enough that reading it takes seconds (alice may query it)
        db.backend.raw(f"CREATE TABLE big AS SELECT range AS pid, range % 97 AS age FROM range({_ROWS})")
        age = {"type": "int", "lower": 0, "upper": 100}
        columns = {"pid": {"type": "int", "private_id": True}, "age": age}
        db.set_metadata("big", {"privacy_unit": "pid", "columns": columns})
    pg_port = free_port()
    server = Server(path, extra=["--pg-port", str(pg_port), "--query-timeout", "120"]).start()
    served = PgServed(server, pg_port, tokens)
    yield served
    served.server.stop()


def _cancel_after(conn: psycopg.Connection, seconds: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), conn.cancel()))
    thread.start()
    return thread


def test_the_owners_long_statement_stops_at_once(served: PgServed) -> None:
    with psycopg.connect(served.url("owner"), autocommit=True) as conn:
        started = time.monotonic()
        thread = _cancel_after(conn, 0.5)
        with pytest.raises(psycopg.Error):
            conn.execute(_SLOW_RAW)
        thread.join()
        assert time.monotonic() - started < 10  # not the 120 s limit
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session goes on


def test_a_wrong_key_cancels_nothing(served: PgServed) -> None:
    with psycopg.connect(served.url("owner"), autocommit=True) as conn:
        other = psycopg.connect(served.url("owner"), autocommit=True)
        started = time.monotonic()
        timer = threading.Timer(0.3, other.cancel)  # another session's key: its own idle session
        timer.start()
        row = conn.execute("SELECT count(*) FROM range(300000000)").fetchone()
        timer.join()
        other.close()
        assert row == (300000000,) and time.monotonic() - started > 0.3


def test_a_cancelled_dp_select_that_read_is_charged_with_query_failed(served: PgServed) -> None:
    headers = {"Authorization": f"Bearer {served.tokens['alice']}"}
    before = httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"]
    query = "DP-SELECT 0.5 QUANTILE(age, 0.5) AS m, COUNT(DISTINCT age) AS k FROM big"
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        started = time.monotonic()
        thread = _cancel_after(conn, 0.5)  # uncancelled it reads for ~4 s on 2 cores
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(query)
        thread.join()
        elapsed = time.monotonic() - started
    assert (
        raised.value.sqlstate == "22000"
        and raised.value.diag.message_detail == "privdb error code: query_failed"
    )
    assert elapsed < 30
    after = httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"]
    assert after - before == pytest.approx(0.5)
