"""PostgreSQL's wire protocol over two neighbouring databases (Alice out, Alice in): what eve observes
besides the noisy values (SQLSTATE, message, DETAIL, notices, column names) is the same on both; an
ungranted table is told apart from a missing one by nothing; the catalog shows only granted tables and
no values; extreme inputs are clear errors that spend nothing and leave the server up."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import pq

from adversarial.neighbours import neighbours
from pgwirefixtures import PSQL
from serverfixtures import Server, free_port

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")

Served = tuple[Server, int, str]  # the server, its PostgreSQL port, eve's token
QUERIES = [
    "DP-SELECT 1 COUNT(*) AS n, AVG(income) AS mean FROM people WHERE disease = 'HIV'",  # answered
    "DP-SELECT 1 disease, COUNT(*) AS n FROM people GROUP BY disease",  # answered (no domain: threshold)
    "DP-SELECT 1 COUNT(*) FROM people WHERE",  # refused before reading: syntax
    "DP-SELECT 1 name FROM people",  # refused: an identifier column
    "DP-SELECT 5000 COUNT(*) FROM people",  # budget exhausted
    "DP-SELECT 1 COUNT(*) FROM secret_patients",  # ungranted: exists only beside Alice
    "DP-SELECT 1 COUNT(*) FROM nowhere",  # missing on both
    "SELECT name FROM people",  # a plain SELECT on a private table
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Served]]:
    base = tmp_path_factory.mktemp("pgneighbours")
    dbs = neighbours(base)
    made: list[Served] = []
    try:
        tokens = []
        for db in dbs.both():
            if db is dbs.with_:  # a table outside eve's grant, on one side only
                db.backend.load_frame("secret_patients", db.backend.fetch("SELECT * FROM people"))
            tokens.append(db.grant("eve", epsilon=1_000, delta=1e-3, tables=["people"]))
        paths = [db.path for db in dbs.both()]
        dbs.close()
        for path, token in zip(paths, tokens, strict=True):
            port = free_port()
            made.append((Server(Path(path), extra=["--pg-port", str(port)]).start(), port, token))
        yield made
    finally:
        for server, _, _ in made:
            server.stop()


def _url(served: Served, token: str | None = None) -> str:
    return f"postgresql://eve:{token or served[2]}@127.0.0.1:{served[1]}/privdb"


def _spent(served: Served) -> float:
    headers = {"Authorization": f"Bearer {served[2]}"}
    return float(httpx.get(served[0].url + "/v1/budget", headers=headers).json()["epsilon_spent"])


def _observe(served: Served, query: str) -> tuple[Any, ...]:
    notices: list[str] = []
    with psycopg.connect(_url(served), autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        try:
            cursor = conn.execute(query)
        except psycopg.Error as err:
            diag = err.diag
            return ("error", err.sqlstate, diag.message_primary, diag.message_detail, tuple(notices))
        columns = tuple(d.name for d in cursor.description or [])
        return ("answered", columns, len(cursor.fetchall()), tuple(n.split(";")[0] for n in notices))


@pytest.mark.parametrize("query", QUERIES)
def test_the_same_outcome_on_both_neighbours(pair: list[Served], query: str) -> None:
    first, second = (_observe(served, query) for served in pair)
    assert first == second, f"{query}\n  without: {first}\n  with:    {second}"
    assert "XX000" not in first and "22000" not in first  # no internal error, no failure after reading


def test_a_wrong_token_is_refused_alike(pair: list[Served]) -> None:
    messages = set()
    for served in pair:
        with pytest.raises(psycopg.OperationalError) as raised:
            psycopg.connect(_url(served, "not-a-token"))
        messages.add(str(raised.value).split("failed:")[-1].strip())
    assert len(messages) == 1 and 'password authentication failed for user "eve"' in messages.pop()


def test_the_catalog_shows_only_granted_tables_and_no_values(pair: list[Served]) -> None:
    probes = [
        "SELECT table_name FROM information_schema.tables ORDER BY 1",
        "SELECT relname, reltuples, relpages FROM pg_catalog.pg_class WHERE relkind = 'r' ORDER BY 1",
        "SELECT count(*) FROM people",  # a plain SELECT: refused (not a catalog query)
        "SELECT attname FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid "
        "WHERE c.relname = 'secret_patients'",
        "SELECT pg_catalog.pg_table_size('people'::regclass)",
    ]
    for probe in probes:
        first, second = (_observe(served, probe) for served in pair)
        assert first == second, probe
    with psycopg.connect(_url(pair[1]), autocommit=True) as conn:
        assert conn.execute(probes[0]).fetchall() == [("people",)]
        assert conn.execute(probes[1]).fetchall() == [("people", 0.0, 0)]
        assert conn.execute(probes[3]).fetchall() == []
        assert conn.execute(probes[4]).fetchall() == [(0,)]


def _alive_and_unspent(served: Served, before: float) -> None:
    with psycopg.connect(_url(served), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert _spent(served) == before


@pytest.mark.parametrize(
    "query",
    [
        "DP-SELECT 1 COUNT(*) FROM people WHERE name = '" + "x" * 1_000_000 + "'",  # 1 MB
        "DP-SELECT 1 COUNT(*) FROM people WHERE name = 'a\x01b' AND age > 1 " + "AND age > 1 " * 50_000,
        "DP-SELECT 1 COUNT(*) FROM people; " * 10_000,  # 10k statements in one simple query
    ],
    ids=["1MB", "long-where", "10k-statements"],
)
def test_extreme_statements_are_clear_errors(pair: list[Served], query: str) -> None:
    served = pair[0]
    before = _spent(served)
    outcome = _observe(served, query)
    assert outcome[0] == "error" and outcome[1] not in ("XX000", "22000"), outcome[:3]
    assert "Traceback" not in str(outcome)
    _alive_and_unspent(served, before)


def test_nul_bytes_and_invalid_utf8_are_refused(pair: list[Served]) -> None:
    served = pair[0]
    before = _spent(served)
    for raw in (b"DP-SELECT 1 COUNT(*) FROM people WHERE name = '\xff\xfe'", b"SELECT '\xc3('"):
        with psycopg.connect(_url(served), autocommit=True) as conn:
            result = conn.pgconn.exec_(raw)
            assert result.status == pq.ExecStatus.FATAL_ERROR  # the connection ends (docs/clients.md)
    _alive_and_unspent(served, before)
    with psycopg.connect(_url(served), autocommit=True) as conn, pytest.raises(psycopg.DataError):
        conn.execute("DP-SELECT 1 COUNT(*) FROM people WHERE name = %s", ("a\x00b",))  # psycopg refuses
    _alive_and_unspent(served, before)


@pytest.mark.parametrize("value", [1e308, math.nan, math.inf, "x" * 2_000_000, 10**400])
def test_extreme_bind_parameters_are_clear_errors_or_answers(pair: list[Served], value: Any) -> None:
    served = pair[0]
    before = _spent(served)
    query = "DP-SELECT 1 COUNT(*) AS n FROM people WHERE " + (
        "income > %s" if not isinstance(value, str) else "name = %s"
    )
    row: Any = None
    error: psycopg.Error | None = None
    try:
        with psycopg.connect(_url(served), autocommit=True) as conn:
            row = conn.execute(query, (value,), prepare=True).fetchone()
    except psycopg.Error as err:
        error = err
    if error is not None:
        assert error.sqlstate not in ("XX000", "22000") and "Traceback" not in str(error), str(error)
        _alive_and_unspent(served, before)
    else:
        assert row is not None and _spent(served) == pytest.approx(before + 1)  # a finite value: answered


@pytest.mark.parametrize(
    "query",
    [
        "SELECT len(range(200000000))",  # once 14 GB: now refused by the catalog's closed language
        "SELECT repeat('x', 1500000000)",
        "SELECT count(*) FROM pg_catalog.pg_class a, pg_catalog.pg_attribute b, pg_catalog.pg_type c",
        "SELECT string_agg(attname, ',') FROM pg_catalog.pg_attribute",
        "SELECT * FROM pg_catalog.pg_no_such_relation",
        "SELECT current_user, version(), current_schema()",
    ],
)
def test_table_less_and_catalog_forms_are_the_same_on_both_neighbours(pair: list[Served], query: str) -> None:
    """The catalog path reads no row of data: whatever it answers or refuses is the same beside Alice's
    rows as without them, and it spends nothing."""
    before = [_spent(served) for served in pair]
    first, second = (_observe(served, query) for served in pair)
    assert first == second, f"{query}\n  without: {first}\n  with:    {second}"
    assert "XX000" not in first and "22000" not in first
    assert [_spent(served) for served in pair] == before
