"""The grammar fuzzer on SQLite and PostgreSQL: every predicate privdb sends there runs on every edge value.

Outside DuckDB only the portable forms of the language are sent (comparisons of a column with literals,
IN, BETWEEN, LIKE, IS NULL, AND/OR/NOT, CASE/COALESCE/NULLIF of text); everything else must be refused
before reading. Each accepted predicate's engine SQL is run directly on tables of edge values (NULL, NaN,
±inf, extreme integers, empty, long, unicode and backslash text): a non-total form would raise there.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgfixture import postgres_cluster
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine

pytestmark = pytest.mark.slow

META: dict[str, Any] = {
    "columns": {
        "x": {"type": "float", "lower": -10, "upper": 10},
        "n": {"type": "int", "lower": -10, "upper": 10},
        "s": {"type": "text", "max_length": 50},
    }
}
ROWS = [
    (None, None, None),
    (math.inf, 2**63 - 1, ""),
    (-math.inf, -(2**63), "x" * 20_000),
    (1e308, 0, "ü漢字🙂"),
    (-0.0, 37, "ends\\"),
    (5e-324, -1, "a%b_c"),
    (2.5, 1, "'q'"),
]


def _predicates() -> st.SearchStrategy[str]:
    num = st.sampled_from(["x", "n"])
    lit = st.sampled_from(["0", "-1", "2.5", "1e300", "-1e308", "9223372036854775807", "NULL"])
    text_lit = st.sampled_from(["''", "'a'", "'ü漢字🙂'", "NULL"])
    leaf = st.one_of(
        st.tuples(num, st.sampled_from(["=", "<>", "<", ">=", "IS DISTINCT FROM"]), lit).map(" ".join),
        st.tuples(st.just("s"), st.sampled_from(["=", "<", ">"]), text_lit).map(" ".join),
        num.map(lambda c: f"{c} IN (1, 2.5, NULL)"),
        num.map(lambda c: f"{c} BETWEEN -1 AND 1e300"),
        st.sampled_from(["s LIKE '%a_%'", "s LIKE 'ends%'", "s IN ('a', '')", "s IS NULL", "x IS NOT NULL"]),
        st.sampled_from(
            ["COALESCE(s, 'q') = 'q'", "NULLIF(s, '') IS NULL", "CASE WHEN n > 0 THEN s ELSE 'z' END = 'z'"]
        ),
        # arithmetic of integer columns (within ±2^63, whole): portable unless it overflows or divides by 0
        st.sampled_from(["n + 1 > 0", "n * n > 4", "n / 3 > 1", "ABS(n - 5) <= 2", "n // 4 = 0"]),
        # not portable: refused before reading on these engines
        st.sampled_from(
            [
                "x + 1 > 0",
                "n / 0 > 1",
                "CAST(s AS INT) > 0",
                "LENGTH(s) > 2",
                "x * 1e308 > 0",
                "n * 1e300 > 0",
            ]
        ),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: f"({p[0]} AND {p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"({p[0]} OR {p[1]})"),
            inner.map(lambda a: f"NOT ({a})"),
        )

    return st.recursive(leaf, extend, max_leaves=5)


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    import psycopg

    tmp = tmp_path_factory.mktemp("engines")
    lite = tmp / "edge.db"
    con = sqlite3.connect(lite)
    con.execute("CREATE TABLE edge (x REAL, n INTEGER, s TEXT)")
    con.executemany("INSERT INTO edge VALUES (?, ?, ?)", ROWS)
    con.commit()
    con.close()
    with postgres_cluster() as url:
        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute("DROP TABLE IF EXISTS edge")
            pg.execute("CREATE TABLE edge (x DOUBLE PRECISION, n BIGINT, s TEXT)")
            for row in [*ROWS, (math.nan, 5, "nan")]:
                pg.execute("INSERT INTO edge VALUES (%s, %s, %s)", row)
        db = Database(tmp / "db")
        db.attach("lite", f"sqlite:///{lite}", source="edge", metadata=META)
        db.attach("pg", url, source="edge", metadata=META)
        db.grant("eve", epsilon=1e6, delta=0.5)
        yield db
        db.close()


# aggregate arguments over clamped values: each answered on both engines (portable.py) or refused for free;
# x ∈ [-10, 10] holds 5e-324 and -0.0 in the rows, so an unflushed product or quotient would underflow
ARGUMENTS = [
    "x * 0.5", "x / 12", "x * x * x", "n / 3", "CASE WHEN x > 0 THEN x * 2 ELSE n END", "CAST(n AS INT) // 3",
    "GREATEST(x, n)", "LEAST(x, 2)", "ABS(x - n) + SIGN(x)", "FLOOR(x / 7) + CEIL(x)", "-x", "x / (n + 11)",
    "COALESCE(x, n, 0) * 3", "NULLIF(x, 0) / 4", "CASE WHEN s = 'a' THEN 1.5 ELSE x END", "x * x / 1e10",
    "CAST(x AS INT)", "x * 1e-300", "x / (n - 1)", "ROUND(x)", "x % 3",
]  # fmt: skip
REFUSED = {"CAST(x AS INT)", "x * 1e-300", "x / (n - 1)", "ROUND(x)", "x % 3"}


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_computed_aggregate_arguments_are_total_on_sqlite_and_postgres(
    engines: Database, argument: str
) -> None:
    for table in ("lite", "pg"):
        query = f"DP-SELECT 1 SUM({argument}), AVG({argument}) FROM {table} WHERE n + 1 > -5"
        if argument in REFUSED:
            with pytest.raises(PrivdbError, match=r"engine cannot run|can be 0") as err:
                engine.prepare(engines, query)
            assert err.value.code == "unsupported_query"
            continue
        _, sql = engine.prepare(engines, query)
        backend, _ = engines.backend_for(table)
        frame = backend.fetch(sql)  # raises if a form sent to this engine is not total there
        assert frame.shape[0] == 1


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(_predicates())
def test_accepted_predicates_are_total_on_sqlite_and_postgres(engines: Database, predicate: str) -> None:
    for table in ("lite", "pg"):
        for query in (
            f"DP-SELECT 1 COUNT(*), SUM(x) FROM {table} WHERE {predicate}",
            f"DP-SELECT 1 DELTA 1e-6 s, COUNT(*) FROM {table} WHERE {predicate} GROUP BY s",
        ):
            try:
                _, sql = engine.prepare(engines, query)
            except PrivdbError as err:
                code = err.code
            else:
                backend, _ = engines.backend_for(table)
                backend.fetch(sql)  # raises if a form sent to this engine is not total there
                continue
            assert code == "unsupported_query", (query, code)
