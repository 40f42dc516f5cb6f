"""The catalog's closed language (issue 36): a table-less or catalog SELECT over the PostgreSQL endpoint runs
under an allow-list, a memory cap and a time limit, as a plain SELECT over HTTP does; what once took 14 GB
is refused before it runs, and DuckDB's own words never reach a client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from pgwirefixtures import PgServed, start_pg_server
from privdb.errors import ParseError, RateLimited, UnsupportedQuery
from privdb.server.pgwire.catalog import SHADOWS, Catalog
from privdb.server.pgwire.catalog_language import check
from privdb.sql.front.expr.types import MAX_RESULT_LENGTH
from privdb.sql.public.slots import Slots

_ATTACKS = [
    "SELECT len(range(200000000))",
    "SELECT unnest(range(300000000))",
    "SELECT repeat('x', 1500000000)",
    "SELECT lpad('x', 1500000000)",
    "SELECT count(*) FROM generate_series(1, 1000000000)",
    "SELECT generate_series(1, 1000000000)",
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT string_agg(relname, ',') OVER () FROM pg_catalog.pg_class",
    "SELECT array_fill(1, ARRAY[1000000000])",
    "SELECT * FROM pg_catalog.pg_class, glob('/*')",
    "SELECT list_resize([1], 1000000000)",
    "SELECT 1 FROM people",
]
_TABLES = [{"name": "people", "columns": {"pid": {"type": "int"}, "age": {"type": "int"}}}]


@pytest.mark.parametrize("query", _ATTACKS)
def test_generators_table_functions_and_recursion_are_outside_the_language(query: str) -> None:
    with pytest.raises((UnsupportedQuery, ParseError)):  # refused before anything runs
        Catalog(_TABLES, "bob", "analyst:bob", 10).answer(query)
    try:
        tree = sqlglot.parse_one(query, read="postgres")
    except sqlglot.errors.ParseError:
        return  # not even read
    with pytest.raises(UnsupportedQuery):
        check(tree)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT version()",
        "SELECT current_schema(), current_user, session_user, current_database()",
        "SELECT pg_backend_pid()",
        "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind = ANY (ARRAY['r', 'v'])",
        "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n "
        "ON n.oid = c.relnamespace WHERE pg_catalog.pg_table_is_visible(c.oid) ORDER BY 1, 2",
        "SELECT array_to_string(ARRAY(SELECT attname FROM pg_catalog.pg_attribute), ', ')",
        "SELECT s FROM generate_series(0, array_upper(ARRAY[1, 2, 3], 1)) AS s",
        "SELECT row_number() OVER (ORDER BY relname), relname FROM pg_catalog.pg_class",
        "SELECT quote_ident(table_name) FROM information_schema.tables",
    ],
)
def test_what_clients_send_is_answered(query: str) -> None:
    answer = Catalog(_TABLES, "bob", "analyst:bob", 10).answer(query)
    assert answer.columns


def test_the_session_values_are_the_sessions_own() -> None:
    catalog = Catalog(_TABLES, "bob", "analyst:bob", 10)
    catalog.backend_pid = 4242
    answer = catalog.answer("SELECT current_user, session_user, pg_backend_pid(), version()")
    assert answer.columns == ["current_user", "session_user", "pg_backend_pid", "version"]
    assert answer.rows[0][:3] == ("bob", "bob", 4242) and "privdb" in answer.rows[0][3]


_PIECES = st.sampled_from(["relname", "'xxxxxxxxxxxxxxxx'", "nspname"])


@st.composite
def _growing(draw: st.DrawFn, depth: int = 0) -> str:
    """A text expression nesting ``||``, ``concat`` and ``replace``, each able to multiply its length."""
    if depth >= 6 or (draw(st.booleans()) and depth > 1):
        return draw(_PIECES)
    inner = draw(_growing(depth + 1))
    form = draw(st.sampled_from(["dpipe", "concat", "replace"]))
    if form == "dpipe":
        return f"({inner} || {inner})"
    if form == "concat":
        return f"concat({inner}, {inner}, {inner})"
    return f"replace({inner}, 'x', {inner})"


@settings(max_examples=40, deadline=None)
@given(_growing())
def test_text_never_grows_past_the_public_length(expression: str) -> None:
    """However growing functions nest, each value stays within MAX_RESULT_LENGTH (DuckDB never sees the
    uncut expression: it would fold its constants when binding)."""
    catalog = Catalog(_TABLES, "bob", "analyst:bob", 10)
    answer = catalog.answer(
        f"SELECT {expression} AS v FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n LIMIT 3"
    )
    assert all(len(row[0]) <= MAX_RESULT_LENGTH for row in answer.rows)


def test_slots_bound_free_queries_and_let_a_principal_run_one_at_a_time() -> None:
    slots = Slots(2, "test queries")
    with slots.take("a", 1.0), slots.take("b", 1.0):
        assert slots.busy() == 2
        with pytest.raises(RateLimited), slots.take("c", 0.05):
            pass
    with slots.take("a", 1.0), pytest.raises(RateLimited), slots.take("a", 0.05):  # a's second waits
        pass
    assert slots.busy() == 0


def test_shadows_are_shared_and_at_most_a_few_kept() -> None:
    for i in range(12):
        tables = [{"name": f"t{i}", "columns": {"x": {"type": "int"}}}]
        Catalog(tables, "bob", f"analyst:u{i}", 10).answer("SELECT relname FROM pg_catalog.pg_class")
    assert len(SHADOWS) <= 4


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServed]:
    served = start_pg_server(tmp_path_factory.mktemp("pgcatlang") / "db", budget=0.5)
    yield served
    served.server.stop()


def _rss_kib(served: PgServed) -> int:
    assert served.server.process is not None
    status = Path(f"/proc/{served.server.process.pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the server's /proc")
def test_over_the_wire_the_attacks_are_refused_free_and_memory_stays_flat(served: PgServed) -> None:
    """As in the issue, by an analyst whose budget is spent: each refused before it runs, nothing
    spent, the server's memory as it was (the issue measured 287 MB → 14,097 MB)."""
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        conn.execute("DP-SELECT 0.5 COUNT(*) FROM people")  # the whole budget
        before = _rss_kib(served)
        for query in _ATTACKS[:8]:
            with pytest.raises(psycopg.Error) as refused:
                conn.execute(query)
            message = str(refused.value)
            assert "Error:" not in message and "duckdb" not in message.lower()  # privdb's words only
        assert _rss_kib(served) - before < 100_000
        with pytest.raises(psycopg.Error) as refused:  # the budget is gone, so a DP query is refused
            conn.execute("DP-SELECT 0.1 COUNT(*) FROM people")
        assert "budget" in str(refused.value)


def test_a_missing_catalog_relation_is_named_in_privdbs_words(served: PgServed) -> None:
    with psycopg.connect(served.url("bob"), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute("SELECT * FROM pg_catalog.pg_no_such_relation")
        assert "pg_no_such_relation" in str(refused.value)
        assert "Catalog Error" not in str(refused.value) and "Binder" not in str(refused.value)


def test_many_sessions_probing_the_catalog_at_once_all_get_answers(served: PgServed) -> None:
    def probe(_: int) -> int:
        with psycopg.connect(served.url("bob"), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
            ).fetchall()
            return len(rows)

    with ThreadPoolExecutor(16) as pool:
        counts = list(pool.map(probe, range(48)))
    assert set(counts) == {counts[0]} and counts[0] >= 1
