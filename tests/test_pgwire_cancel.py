"""Cancel requests (psql's Ctrl-C, psycopg's ``cancel()``): the session's running statement stops as at the
server's time limit and answers PostgreSQL's 57014 ``canceling statement due to user request``; a
DP-SELECT that had started reading is still charged (the hint says so); another session's key cannot
cancel it, and a request that finds the session idle cancels nothing later."""

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
# a catalog query that runs far longer than the catalog's time limit: 167⁴ rows of pg_settings, each compared
_SLOW_CATALOG = (
    "SELECT count(*) FROM pg_catalog.pg_settings a, pg_catalog.pg_settings b, pg_catalog.pg_settings c, "
    "pg_catalog.pg_settings d WHERE a.name || b.name <> c.name || d.name"
)
CANCELED = "canceling statement due to user request"
_ROWS = 20_000_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    path = tmp_path_factory.mktemp("pgcancel") / "db"
    tokens = make_server_db(path)
    # a table whose DP-SELECT reads for seconds (alice may query it): each person has 200 rows, past the
    # bound, so the per-person draw runs (with one row each the plain aggregate answered in under 1 s, and a
    # loaded CI machine once finished it before the cancel came)
    with Database(path) as db:
        db.backend.raw(
            f"CREATE TABLE big AS SELECT range % 100000 AS pid, range % 97 AS age FROM range({_ROWS})"
        )
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
        with pytest.raises(psycopg.errors.QueryCanceled) as raised:
            conn.execute(_SLOW_RAW)
        thread.join()
        assert time.monotonic() - started < 10  # not the 120 s limit
        assert raised.value.sqlstate == "57014" and raised.value.diag.message_primary == CANCELED
        assert conn.execute("SELECT 1").fetchone() == (1,)  # the session goes on


def test_a_cancelled_catalog_query_is_57014_and_free(served: PgServed) -> None:
    before = _spent(served, "bob")
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        started = time.monotonic()
        thread = _cancel_after(conn, 0.5)
        with pytest.raises(psycopg.errors.QueryCanceled) as raised:
            conn.execute(_SLOW_CATALOG)
        thread.join()
        assert time.monotonic() - started < 8  # not the catalog's 10 s limit (22023)
        assert conn.execute("SELECT current_user").fetchone() == ("bob",)
    assert raised.value.diag.message_primary == CANCELED
    assert raised.value.diag.message_hint == "nothing was spent"
    assert _spent(served, "bob") == before


def test_a_cancel_of_an_idle_session_cancels_nothing_later(served: PgServed) -> None:
    with psycopg.connect(served.url("owner"), autocommit=True) as conn:
        conn.cancel()  # nothing running: acted on (the key is right), then forgotten
        assert conn.execute("SELECT count(*) FROM range(30000000)").fetchone() == (30000000,)


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


def _spent(served: PgServed, user: str) -> float:
    headers = {"Authorization": f"Bearer {served.tokens[user]}"}
    return float(httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"])


def test_a_cancelled_dp_select_that_read_is_57014_and_charged(served: PgServed) -> None:
    before = _spent(served, "alice")
    query = "DP-SELECT 0.5 QUANTILE(age, 0.5) AS m, COUNT(DISTINCT age) AS k FROM big"
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        started = time.monotonic()
        thread = _cancel_after(conn, 0.5)  # uncancelled it reads for ~9 s on 2 cores
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(query)
        thread.join()
        elapsed = time.monotonic() - started
    assert raised.value.sqlstate == "57014" and raised.value.diag.message_primary == CANCELED
    assert raised.value.diag.message_detail == "privdb error code: query_canceled"
    assert (
        raised.value.diag.message_hint
        == "the engine had begun reading the data, so the query's cost was charged"
    )
    assert elapsed < 30
    assert _spent(served, "alice") - before == pytest.approx(0.5)
