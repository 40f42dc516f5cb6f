"""Issue 25, finding 1: sums that overflow only when rows meet, and the post-read barrier.

The attack: ``SUM(CASE WHEN (pid = 0 AND income > X) OR pid = 1 THEN 1e308 ELSE 0 END)`` is finite per row
but ``inf`` when both rows pass, so the query failed exactly when Alice's income exceeded X; a binary search
recovered it in 24 queries for a total ε of 0.0024. Now every bound is checked against the largest row
count (privdb.sql.front.expr.totality) while planning: each form of the attack is refused before reading,
free,
on both neighbours, on DuckDB, SQLite and PostgreSQL, with and without a privacy unit. And whatever fails
after reading (injected here at each step) ends as one ``query_failed`` with one message on both neighbours.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from adversarial.neighbours import ALICE, PEOPLE_META, Neighbours, neighbours, outcome, people, same_outcome
from conftest import seeded
from pgfixture import postgres_cluster
from privdb.database import Database
from privdb.sql.charge import after_reading
from privdb.sql.front.expr.totality import MAX_SUMMAND

META: dict[str, Any] = {
    "columns": {"pid": {"type": "int", "lower": 0, "upper": 10_000}, **PEOPLE_META["columns"]}
}
HIT = "(pid = 5000 AND income > 50000) OR pid = 0"  # true on two rows only when Alice is in
ATTACKS = [
    "DP-SELECT 0.0001 SUM(1e308) FROM people WHERE pid IN (0, 5000)",
    f"DP-SELECT 0.0001 SUM(CASE WHEN {HIT} THEN 1e308 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 AVG(CASE WHEN {HIT} THEN 1e308 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 VARIANCE(CASE WHEN {HIT} THEN 1e154 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 STDDEV(CASE WHEN {HIT} THEN 1e154 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 CORR(CASE WHEN {HIT} THEN 1e154 ELSE 0 END, age) FROM people",
    f"DP-SELECT 0.0001 COVAR_POP(age, CASE WHEN {HIT} THEN 1e300 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 SUM(CASE WHEN {HIT} THEN 1e308 ELSE 0 END) / COUNT(*) FROM people",
    f"DP-SELECT 0.0001 COUNT(*) FROM people HAVING SUM(CASE WHEN {HIT} THEN 1e308 ELSE 0 END) > 0",
    f"DP-SELECT 0.0001 COUNT(*) AS n FROM people ORDER BY AVG(CASE WHEN {HIT} THEN 1e308 ELSE 0 END)",
    f"DP-SELECT 0.0001 SUM(v) FROM (SELECT CASE WHEN {HIT} THEN 1e308 ELSE 0 END AS v FROM people) AS q",
    f"DP-SELECT ACCURACY 1e300 MAX 0.001 SUM(CASE WHEN {HIT} THEN 1e308 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 DELTA 1e-9 USING GAUSSIAN SUM(CASE WHEN {HIT} THEN 1e300 ELSE 0 END) FROM people",
    f"DP-SELECT 0.0001 SUM(CASE WHEN {HIT} THEN 1e300 ELSE 0 END * r.w) FROM people JOIN regions r "
    "ON people.disease = r.disease",
    "DP-SELECT 0.0001 SUM(income * 1e300) FROM people",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    frame = people()
    frame.insert(0, "pid", range(len(frame)))
    made = neighbours(tmp_path_factory.mktemp("seams"), frame, dict(ALICE, pid=5000), META)
    regions = pd.DataFrame({"disease": ["flu", "cold", "none", "HIV"], "w": [1.0, 2.0, 3.0, 4.0]})
    for db in made.both():
        db.backend.load_frame("regions", regions)
        columns = {"disease": {"type": "text"}, "w": {"type": "float", "lower": 0, "upper": 4}}
        db.set_metadata("regions", {"public": True, "columns": columns})
    yield made
    made.close()


@pytest.mark.parametrize("query", ATTACKS)
def test_every_form_of_the_overflow_attack_is_refused_before_reading(pair: Neighbours, query: str) -> None:
    before = [db.budget("eve").epsilon_remaining for db in pair.both()]
    found = same_outcome(pair, query)
    assert found[:2] == ("error", "unsupported_query") and "overflow" in found[2], found
    assert [db.budget("eve").epsilon_remaining for db in pair.both()] == before  # free


def test_the_binary_search_learns_nothing(pair: Neighbours) -> None:
    """The 24-query search of the finding: every step has the same outcome on both neighbours."""
    lo, hi = 0.0, 100_000.0
    for _ in range(24):
        mid = (lo + hi) / 2
        query = (
            f"DP-SELECT 0.0001 SUM(CASE WHEN (pid = 5000 AND income > {mid}) OR pid = 0 THEN 1e308 "
            "ELSE 0 END) FROM people"
        )
        first, second = (outcome(db, query) for db in pair.both())
        assert first == second
        lo, hi = (mid, hi) if first[0] == "error" else (lo, mid)


def test_bounds_just_inside_the_limit_answer(pair: Neighbours) -> None:
    inside = f"{MAX_SUMMAND * (1 - 1e-5):.6g}"
    assert float(inside) <= MAX_SUMMAND
    for query in (
        f"DP-SELECT 100 SUM(CASE WHEN {HIT} THEN {inside} ELSE 0 END) FROM people",
        f"DP-SELECT 100 VARIANCE(CASE WHEN {HIT} THEN 1e144 ELSE 0 END) FROM people",
    ):
        assert same_outcome(pair, query)[0] == "answered"


UNIT_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 3,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "v": {"type": "float", "lower": 0, "upper": 1e308},
        "w": {"type": "float", "lower": 0, "upper": 1e300},
    },
}


def test_one_persons_own_rows_cannot_overflow(tmp_path: Path) -> None:
    """With a privacy unit no helper row is needed: Alice's own three rows at the bound would overflow."""
    base = pd.DataFrame({"pid": [1, 2, 3], "v": [1.0, 2.0, 3.0], "w": [1.0, 1.0, 1.0]})
    alice = [{"pid": 9, "v": 1e308, "w": 1e300}] * 3
    pair = neighbours(tmp_path, base, alice, UNIT_META)
    try:
        for query in (
            "DP-SELECT 0.001 SUM(v) FROM people",
            "DP-SELECT 0.001 AVG(v) FROM people",
            "DP-SELECT 0.001 SUM(s) FROM (SELECT pid, SUM(w) AS s FROM people GROUP BY pid) AS q",
            "DP-SELECT 0.001 AVG(a) FROM (SELECT pid, AVG(w * 1e8) AS a FROM people GROUP BY pid) AS q",
        ):
            found = same_outcome(pair, query)
            assert found[:2] == ("error", "unsupported_query") and "overflow" in found[2], (query, found)
    finally:
        pair.close()


@pytest.fixture(scope="module")
def attached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Database]]:
    """The neighbours as SQLite files and PostgreSQL tables, attached to privdb with bounds of ±1e308."""
    import psycopg

    tmp = tmp_path_factory.mktemp("attached")
    meta = {"columns": {"pid": {"type": "int", "lower": 0, "upper": 10_000},
                        "x": {"type": "float", "lower": -1e308, "upper": 1e308}}}  # fmt: skip
    rows = {"without": [(0, 1e308)], "with": [(0, 1e308), (5000, 1e308)]}
    dbs = []
    with postgres_cluster() as url:
        for name, data in rows.items():
            lite = tmp / f"{name}.db"
            con = sqlite3.connect(lite)
            con.execute("CREATE TABLE t (pid INTEGER, x REAL)")
            con.executemany("INSERT INTO t VALUES (?, ?)", data)
            con.commit()
            con.close()
            with psycopg.connect(url, autocommit=True) as pg:
                pg.execute(f"CREATE TABLE t_{name} (pid BIGINT, x DOUBLE PRECISION)")
                for row in data:
                    pg.execute(f"INSERT INTO t_{name} VALUES (%s, %s)", row)
            db = Database(tmp / f"db_{name}")
            db.attach("lite", f"sqlite:///{lite}", source="t", metadata=meta)
            db.attach("pg", url, source=f"t_{name}", metadata=meta)
            db.grant("eve", epsilon=100, delta=1e-3)
            db.noise_source = seeded(5)
            dbs.append(db)
        yield dbs
        for db in dbs:
            db.close()


@pytest.mark.slow
@pytest.mark.parametrize("table", ["lite", "pg"])
@pytest.mark.parametrize("aggregate", ["SUM(x)", "AVG(x)", "VARIANCE(x)", "CORR(x, pid)"])
def test_attached_engines_refuse_sums_that_could_overflow(
    attached: list[Database], table: str, aggregate: str
) -> None:
    query = f"DP-SELECT 0.001 {aggregate} FROM {table}"
    first, second = (outcome(db, query) for db in attached)
    assert first == second and first[:2] == ("error", "unsupported_query"), (first, second)


# --- the post-read barrier ----------------------------------------------------------------------------


def _failure(data: Any) -> BaseException:
    """A failure whose kind and message depend on the data read, as a bug's would (and naming a value)."""
    if "HIV" in repr(data) or "5000" in repr(data):
        return OverflowError("cannot convert float infinity to integer: 55555.0")
    return ZeroDivisionError("float division by zero")


def _inject(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    """Make one step after reading fail on both neighbours, differently on each."""
    import privdb.sql.answer.noise as noise
    import privdb.sql.respond as respond
    from privdb.backends.duckdb import DuckDBBackend

    if step in ("read", "timeout"):
        original = DuckDBBackend.fetch_columns

        def fetch(self: DuckDBBackend, sql: str, timeout: float | None = None) -> Any:
            original(self, sql, timeout=timeout)  # the engine reads the data, then fails
            alice = self.raw("SELECT COUNT(*) FROM people WHERE pid = 5000").iloc[0, 0] > 0
            if step == "timeout" and alice:
                raise TimeoutError("the engine query ran longer than 30 s")
            raise _failure(self.raw("SELECT * FROM people WHERE pid = 5000"))

        monkeypatch.setattr(DuckDBBackend, "fetch_columns", fetch)
    elif step == "noise":
        original_noise = respond.add_noise

        def noisy(plan: Any, frame: Any, *args: Any, **kwargs: Any) -> Any:
            raise _failure(frame)

        monkeypatch.setattr(respond, "add_noise", noisy)
        assert original_noise is not None
    else:  # post-processing: combining the noisy statistics into the answer's values and intervals
        original_combine = noise.combine

        def combine(agg: Any, noisy: Any, *args: Any, **kwargs: Any) -> Any:
            original_combine(agg, noisy, *args, **kwargs)
            raise _failure(noisy)

        monkeypatch.setattr(noise, "combine", combine)


@pytest.mark.parametrize("step", ["read", "timeout", "noise", "postprocess"])
def test_any_failure_after_reading_is_one_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    frame = people()
    frame.insert(0, "pid", range(len(frame)))
    pair = neighbours(tmp_path, frame, dict(ALICE, pid=5000), META)
    try:
        for db in pair.both():
            db.query_timeout = 30.0
        _inject(monkeypatch, step)
        query = "DP-SELECT 0.5 COUNT(*), SUM(income) FROM people WHERE disease = 'HIV' OR age > 200"
        first, second = (outcome(db, query) for db in pair.both())
        assert first == second == ("error", "query_failed", after_reading(pair.with_)), (first, second)
        assert "55555" not in first[2]
        # charged on both (the data was read), whatever happened after
        assert [db.budget("eve").epsilon_spent for db in pair.both()] == [Fraction(1, 2)] * 2
    finally:
        pair.close()


@pytest.mark.slow
def test_a_postgres_numeric_beyond_double_cannot_fail_the_query(tmp_path: Path) -> None:
    """A PostgreSQL NUMERIC of 1e400 made the clamp's conversion to DOUBLE PRECISION raise after reading, so
    the query failed exactly when that row existed. The bounds now meet the stored NUMERIC and only values
    inside them are converted: both neighbours answer."""
    import psycopg

    meta = {"columns": {"pid": {"type": "int", "lower": 0, "upper": 10_000},
                        "x": {"type": "float", "lower": 0, "upper": 100}}}  # fmt: skip
    rows = {"without": [(0, 5), (1, 7)], "with": [(0, 5), (1, 7), (5000, "1e400")]}
    dbs = []
    with postgres_cluster() as url:
        for name, data in rows.items():
            with psycopg.connect(url, autocommit=True) as pg:
                pg.execute(f"CREATE TABLE n_{name} (pid BIGINT, x NUMERIC)")
                for row in data:
                    pg.execute(f"INSERT INTO n_{name} VALUES (%s, %s::numeric)", row)
            db = Database(tmp_path / name)
            db.attach("pg", url, source=f"n_{name}", metadata=meta)
            db.grant("eve", epsilon=100, delta=1e-3)
            db.noise_source = seeded(7)
            dbs.append(db)
        try:
            for aggregate in ("SUM(x)", "AVG(x)", "VARIANCE(x)", "MEDIAN(x)", "SUM(x * 2)", "AVG(x / 4)"):
                query = f"DP-SELECT 1 {aggregate} FROM pg WHERE pid >= 0"
                first, second = (outcome(db, query) for db in dbs)
                assert first == second and first[0] == "answered", (query, first, second)
        finally:
            for db in dbs:
                db.close()
