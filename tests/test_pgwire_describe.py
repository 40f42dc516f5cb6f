"""Describe of a prepared, unbound statement: its columns from the plan, nothing read, nothing spent."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import psycopg
import pytest
from psycopg import pq

from pgwirefixtures import PSQL, PgServed, start_pg_server

pytestmark = pytest.mark.skipif(PSQL is None, reason="psql not installed (apt-get install postgresql)")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgdesc") / "db")
    yield served
    served.server.stop()


def _spent(served: PgServed, user: str) -> float:
    headers = {"Authorization": f"Bearer {served.tokens[user]}"}
    return float(httpx.get(served.server.url + "/v1/budget", headers=headers).json()["epsilon_spent"])


def _described(conn: psycopg.Connection, name: bytes, query: str) -> list[tuple[str, int]]:
    result = conn.pgconn.prepare(name, query.encode())
    assert result.status == pq.ExecStatus.COMMAND_OK, result.error_message
    described = conn.pgconn.describe_prepared(name)
    assert described.status == pq.ExecStatus.COMMAND_OK, described.error_message
    return [((described.fname(i) or b"").decode(), described.ftype(i)) for i in range(described.nfields)]


@pytest.mark.parametrize(
    ("query", "columns"),
    [
        (
            "DP-SELECT 0.5 sex, COUNT(*) AS n, AVG(age) AS mean_age FROM people WHERE age > $1 GROUP BY sex",
            [("sex", 25), ("n", 20), ("n_ci95_low", 20), ("n_ci95_high", 20), ("mean_age", 701),
             ("mean_age_ci95_low", 701), ("mean_age_ci95_high", 701)],
        ),
        ("DP-SELECT 0.5 MODE(education) AS m FROM people", [("m", 25)]),
        (
            "DP-SELECT 0.5 SUM(income) / COUNT(*) AS r FROM people",
            [("r", 701), ("r_ci95_low", 701), ("r_ci95_high", 701)],
        ),
        ("DP-SELECT 0.5 COUNT(*) FROM secret", []),  # not bob's: NoData now, refused when run
        ("SELECT relname FROM pg_catalog.pg_class", [("relname", 25)]),
    ],
)  # fmt: skip
def test_describe_of_a_statement_gives_the_plans_columns_and_spends_nothing(
    served: PgServed, query: str, columns: list[tuple[str, int]]
) -> None:
    before = _spent(served, "bob")
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        assert _described(conn, b"s", query) == columns
    assert _spent(served, "bob") == before


def test_the_described_columns_are_those_of_the_answer(served: PgServed) -> None:
    query = "DP-SELECT 0.25 sex, COUNT(*) AS n, QUANTILE(age, 0.5) AS med FROM people GROUP BY sex"
    with psycopg.connect(served.url("alice"), autocommit=True) as conn:
        described = _described(conn, b"q", query)
        cursor = conn.execute(query)
        answered = [(d.name, d.type_code) for d in cursor.description or []]
    assert described == answered


@pytest.mark.parametrize(
    ("query", "types"),
    [
        # a DP answer with no row (no group passes HAVING): every column holds nothing
        ("DP-SELECT 0.5 sex, COUNT(*) AS n FROM people GROUP BY sex HAVING n > 1e9", [25, 20, 20, 20]),
        # a catalog answer whose columns hold only NULLs
        (
            "SELECT NULL::INT AS i, NULL::BOOLEAN AS b, CAST(NULL AS DOUBLE) AS f, NULL AS t",
            [20, 16, 701, 25],
        ),
    ],
)
def test_a_column_of_nulls_comes_with_the_type_describe_announced(
    served: PgServed, query: str, types: list[int]
) -> None:
    """The portal's RowDescription (libpq's exec_prepared: Bind, Describe portal, Execute) has the
    statement Describe's types, not text for want of a value."""
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        described = [oid for _, oid in _described(conn, b"nulls", query)]
        result = conn.pgconn.exec_prepared(b"nulls", [])
        assert result.status == pq.ExecStatus.TUPLES_OK, result.error_message
        sent = [result.ftype(i) for i in range(result.nfields)]
        values = [
            result.get_value(row, col) for row in range(result.ntuples) for col in range(result.nfields)
        ]
    assert described == sent == types
    assert all(v is None for v in values)
