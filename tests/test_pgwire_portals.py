"""Execute's row limit, message by message as PostgreSQL answers: ``Execute(max_rows=n)`` sends at most n
rows, then PortalSuspended if n were sent (PostgreSQL does not look ahead, so with exactly n left the next
Execute completes with none); the next Execute on the portal goes on; CommandComplete's ``SELECT k``
counts the rows that Execute sent. The same scripts run against a throw-away PostgreSQL when it is
installed, so the expected messages are PostgreSQL's own. A raw client is needed: psycopg's server-side
cursors use DECLARE/FETCH, not Execute limits."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pygwire import messages as m

from pgfixture import postgres_cluster
from pgraw import RawClient
from pgwirefixtures import PSQL, PgServed, start_pg_server

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")

QUERY = "SELECT code, name FROM regions ORDER BY code"  # 3 rows: (1, north), (2, south), (3, east)
ROWS = [("row", b"1", b"north"), ("row", b"2", b"south"), ("row", b"3", b"east")]
PARSED, BOUND, SUSPENDED, READY = ("parsed",), ("bound",), ("suspended",), ("ready",)


def _done(n: int) -> tuple[str, str]:
    return ("complete", f"SELECT {n}")


SCRIPTS: dict[str, tuple[list[m.PGMessage], list[tuple[Any, ...]]]] = {
    "one at a time": (
        [m.Parse(query=QUERY), m.Bind(), *[m.Execute(max_rows=1)] * 5, m.Sync()],
        [PARSED, BOUND, ROWS[0], SUSPENDED, ROWS[1], SUSPENDED, ROWS[2], SUSPENDED, _done(0), _done(0),
         READY],
    ),
    "two, then the last": (
        [m.Parse(query=QUERY), m.Bind(), m.Execute(max_rows=2), m.Execute(max_rows=2), m.Sync()],
        [PARSED, BOUND, ROWS[0], ROWS[1], SUSPENDED, ROWS[2], _done(1), READY],
    ),
    "exactly all": (
        [m.Parse(query=QUERY), m.Bind(), m.Execute(max_rows=3), m.Execute(max_rows=3), m.Sync()],
        [PARSED, BOUND, *ROWS, SUSPENDED, _done(0), READY],
    ),
    "more than all": (
        [m.Parse(query=QUERY), m.Bind(), m.Execute(max_rows=5), m.Sync()],
        [PARSED, BOUND, *ROWS, _done(3), READY],
    ),
    "no limit": (
        [m.Parse(query=QUERY), m.Bind(), m.Execute(), m.Sync()],
        [PARSED, BOUND, *ROWS, _done(3), READY],
    ),
    "described portal, one, then the rest": (
        [m.Parse(query=QUERY), m.Bind(), m.Describe(kind="P"), m.Execute(max_rows=1), m.Execute(), m.Sync()],
        [PARSED, BOUND, ("columns", "code", "name"), ROWS[0], SUSPENDED, ROWS[1], ROWS[2], _done(2), READY],
    ),
    "a limit on a command": (
        [m.Parse(query="SET application_name = 'paged'"), m.Bind(), m.Execute(max_rows=1), m.Sync()],
        [PARSED, BOUND, ("complete", "SET"), READY],
    ),
}  # fmt: skip


def _seen(messages: list[m.PGMessage]) -> list[tuple[Any, ...]]:
    """What a client acts on, message by message (notices and parameter reports left out)."""
    out: list[tuple[Any, ...]] = []
    for msg in messages:
        if isinstance(msg, m.ParseComplete):
            out.append(PARSED)
        elif isinstance(msg, m.BindComplete):
            out.append(BOUND)
        elif isinstance(msg, m.RowDescription):
            out.append(("columns", *(f.name for f in msg.fields)))
        elif isinstance(msg, m.DataRow):
            out.append(("row", *msg.columns))
        elif isinstance(msg, m.PortalSuspended):
            out.append(SUSPENDED)
        elif isinstance(msg, m.CommandComplete):
            out.append(("complete", msg.tag))
        elif isinstance(msg, m.ErrorResponse):
            out.append(("error", msg.fields.get("C")))
        elif isinstance(msg, m.CloseComplete):
            out.append(("closed",))
        elif isinstance(msg, m.ReadyForQuery):
            out.append(READY)
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgportals") / "db")
    yield served
    served.server.stop()


@pytest.fixture(scope="module")
def postgres() -> Iterator[int | None]:
    """The port of a throw-away PostgreSQL holding the same ``regions``, or None where none can start."""
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_cluster())
        except (RuntimeError, OSError, subprocess.CalledProcessError) as err:  # privdb's side still runs
            print(f"no PostgreSQL to compare with: {err}")
            yield None
            return
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE regions (code int, name text)")
            conn.execute("INSERT INTO regions VALUES (1, 'north'), (2, 'south'), (3, 'east')")
        yield int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_execute_pages_as_postgresql_does(served: PgServed, postgres: int | None, name: str) -> None:
    script, expected = SCRIPTS[name]
    with RawClient(served.pg_port, "alice", served.tokens["alice"]) as client:
        assert _seen(client.exchange(*script)) == expected
    if postgres is not None:
        with RawClient(postgres, "postgres", None, database="postgres") as client:
            assert _seen(client.exchange(*script)) == expected


def test_a_suspended_portal_goes_on_in_the_next_cycle(served: PgServed, postgres: int | None) -> None:
    """In a transaction block a named portal outlives Sync, and its next Execute goes on where the last
    one stopped; closed, its name can be bound again."""
    cycles = [
        ([m.Query(query_string="BEGIN")], [("complete", "BEGIN"), READY]),
        (
            [m.Parse(statement="s", query=QUERY), m.Bind(portal="p", statement="s"),
             m.Execute(portal="p", max_rows=2), m.Sync()],
            [PARSED, BOUND, ROWS[0], ROWS[1], SUSPENDED, READY],
        ),
        ([m.Execute(portal="p", max_rows=2), m.Sync()], [ROWS[2], _done(1), READY]),
        (
            [m.Close(kind="P", name="p"), m.Bind(portal="p", statement="s"),
             m.Execute(portal="p", max_rows=1), m.Sync()],
            [("closed",), BOUND, ROWS[0], SUSPENDED, READY],
        ),
        ([m.Query(query_string="COMMIT")], [("complete", "COMMIT"), READY]),
    ]  # fmt: skip
    ports = [(served.pg_port, "alice", served.tokens["alice"], "privdb")]
    if postgres is not None:
        ports.append((postgres, "postgres", None, "postgres"))
    for port, user, password, database in ports:
        with RawClient(port, user, password, database=database) as client:
            for sent, expected in cycles:
                assert _seen(client.exchange(*sent)) == expected, (port, sent)


def test_a_dp_answer_pages_and_is_charged_once(served: PgServed) -> None:
    """Paging a DP answer runs it once: every page comes from the one answer, charged once."""
    query = "DP-SELECT 0.5 education, COUNT(*) AS n FROM people GROUP BY education"
    with RawClient(served.pg_port, "bob", served.tokens["bob"]) as client:
        paged = client.exchange(m.Parse(query=query), m.Bind(), *[m.Execute(max_rows=4)] * 2, m.Sync())
        whole = client.exchange(m.Parse(query=query), m.Bind(), m.Execute(), m.Sync())
    notices = [x for x in paged if isinstance(x, m.NoticeResponse)]
    assert len(notices) == 1 and "ε spent 0.5" in notices[0].fields["M"]
    rows = [x for x in _seen(paged) if x[0] == "row"]
    assert len(rows) == 6 and _seen(paged)[-2:] == [_done(2), READY]
    assert rows == [x for x in _seen(whole) if x[0] == "row"]  # the stored answer, the same rows


def test_parameters_are_described_as_postgresql_counts_them(served: PgServed) -> None:
    """As many parameters as declared types or ``$n``, whichever is more; an unspecified type is text."""
    with RawClient(served.pg_port, "alice", served.tokens["alice"]) as client:
        out = client.exchange(m.Parse(query="SELECT $1 AS v", param_types=[0, 23]), m.Describe(kind="S"),
                              m.Bind(param_values=[b"x"]), m.Sync())  # fmt: skip
    described = next(x for x in out if isinstance(x, m.ParameterDescription))
    assert described.type_oids == [25, 23]
    assert _seen(out)[-2:] == [("error", "08P01"), READY]  # one value for two parameters
