"""Issue 14, item 9: every form of the SQL analysts write (subqueries, CTEs, per-unit aggregation, JOINs
with a public table and of two private tables on the privacy unit, IN (SELECT … FROM <public table>),
COUNT(DISTINCT …), HAVING, key release, expressions over aggregates, TOP n) on every engine.

The people / visits / regions tables of tests/joinfixtures.py are loaded into privdb's DuckDB and attached
from a SQLite file and from a throw-away PostgreSQL cluster (and, slow-marked, from Parquet files in Spark
local) with the same metadata. Each query is asked by the analyst with ε = 50 on every engine, and either

- answered everywhere: the same columns, the same keys (in the same order where the query orders them), and
  every value within its reported interval of the exact answer, computed with plain SQL on the raw tables
  in a separate DuckDB (tolerance below); or
- refused on an engine that cannot run one of its expressions safely (``for_engine``): an
  ``unsupported_query`` naming the engine, before anything is spent, and in the same words over tables
  whose data could not have made the query fail (empty ones).

The data are drawn so that no contribution bound binds: a person has at most 5 visits (``max_contributions``
of visits) of at most 2 kinds (its ``max_groups``), so neither the per-unit scaling nor the random choice
of groups or distinct pairs changes anything, and the exact plain-SQL answer is what every engine's
noise is added to. (The bounding SQL still runs: units with more than ``min(m, G)`` rows take its path.)
``test_engines_compute_the_same_statistics`` compares the engines' statistics before any noise, exactly.

Tolerance: a value ``v`` with reported 95% interval ``[lo, hi]`` passes when the truth lies in
``[v − T·(v − lo), v + T·(hi − v)]`` with ``T = 6``. For a Laplace (or geometric) statistic the interval's
half-width is ``b·ln 20``, so a failure needs noise beyond ``6·b·ln 20``: probability ``20⁻⁶ ≈ 1.6e-8`` per
value; expressions of ``k`` aggregates (AVG, SUM/COUNT, …) have intervals built from theirs at level
``1 − 0.05/k``, and at ε = 50 their noise is a relative 1e-3 or less, so to first order the same bound
holds. A test checks at most 16 values: false-failure probability below 5e-7 per test (conftest.ALPHA is
1e-6). The geometric mechanism's noise is an integer, and its 95% half-width ``q`` may be 0: there the
tolerance is ``T·(q + 1)``; ``P(|X| ≥ q + 1) ≤ 0.05`` for the two-sided geometric law gives
``P(|X| > T·(q + 1)) ≤ 2·0.05^T ≈ 3e-8``. The noise is seeded, so the outcome is fixed; the bound says how
rare a failing seed is.
"""

from __future__ import annotations

import math
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from joinfixtures import KINDS, PEOPLE_META, REGIONS_META, VISITS_META, frames, people_visits
from pgfixture import postgres_cluster
from privdb.database import Database
from privdb.errors import InternalError, PrivdbError, QueryFailed, UnsupportedQuery
from privdb.result import Result
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

T = 6.0  # intervals are widened T-fold: 20**-6 ≈ 1.6e-8 per value (module doc)
EPSILON = 50
ENGINE_NAMES = {"lite": "SQLite", "pg": "PostgreSQL", "big": "Spark"}
DIALECTS = {"duck": "duckdb", "lite": "sqlite", "pg": "postgres", "big": "spark"}
SCHEMA = {
    "people": {"pid": "BIGINT", "age": "INTEGER", "income": "DOUBLE PRECISION", "sex": "TEXT",
               "region": "INTEGER"},
    "visits": {"pid": "BIGINT", "cost": "DOUBLE PRECISION", "kind": "TEXT"},
    "regions": {"code": "INTEGER", "name": "TEXT"},
}  # fmt: skip
METAS = {"people": PEOPLE_META, "visits": VISITS_META, "regions": REGIONS_META}


def relation_tables(people: int = 1500, seed: int = 11) -> dict[str, pd.DataFrame]:
    """joinfixtures' people and regions (a few people in region 6, which regions lacks: LEFT JOIN keeps
    them unmatched), and visits drawn so that no bound binds: 0–5 visits per person, of at most 2 kinds,
    the kinds skewed (40/30/20/10%) so that orders by count are far from ties."""
    tables = frames(people=people, seed=seed)
    rng = np.random.default_rng(seed + 1)
    persons = tables["people"].copy()
    persons.loc[rng.random(len(persons)) < 0.05, "region"] = 6
    p = np.array([0.4, 0.3, 0.2, 0.1])
    rows = []
    for pid in persons["pid"]:
        n = min(int(rng.poisson(2.0)), 5)
        own = rng.choice(KINDS, 2, replace=False, p=p)
        for _ in range(n):
            rows.append((int(pid), round(float(rng.uniform(10, 900)), 2), str(own[rng.integers(0, 2)])))
    visits = pd.DataFrame(rows, columns=["pid", "cost", "kind"])
    visits.loc[0, "cost"] = 100.0  # 1000 / (cost - 100) divides by zero here (subquery_where_division)
    return {"people": persons, "visits": visits, "regions": tables["regions"]}


# ---- the queries


@dataclass(frozen=True)
class Case:
    query: str
    truth: str | None = None  # plain SQL of the exact answer (default: the query with DP-SELECT → SELECT)
    refused: tuple[str, ...] = ()  # engines where it must be refused (not portable)
    ordered: bool = False  # the rows' order is part of the answer
    free: bool = False  # a key release over public domains: nothing read, nothing spent
    slack: float = 0.0  # added to the tolerance (ROUND of a noisy value)

    @property
    def exact_sql(self) -> str:
        return self.truth or re.sub(r"DP-SELECT \d+ (DELTA \S+ )?", "SELECT ", self.query)


NOT_PORTABLE = ("lite", "pg")
# regions with the join key named as in people, for USING (region); ON p.region = r.code compares two int
# columns as stored, which is portable too
REGIONS_AS = "(SELECT code AS region, name FROM regions) AS r"
CASES: dict[str, Case] = {
    # ---- joins of two private tables on the privacy unit
    "private_join_on": Case(
        "DP-SELECT 50 COUNT(*), SUM(cost) FROM visits v JOIN people p ON v.pid = p.pid WHERE p.age >= 40",
    ),
    "private_join_using_grouped": Case(
        "DP-SELECT 50 sex, COUNT(*), AVG(cost), SUM(cost) FROM visits JOIN people USING (pid) GROUP BY sex"
    ),
    "private_left_join_using": Case(
        "DP-SELECT 50 COUNT(*), COUNT(cost), SUM(income) FROM people LEFT JOIN visits USING (pid) "
        "WHERE age BETWEEN 30 AND 60"
    ),
    "private_join_many_first": Case(  # one row per person joined to visits: visits aggregated first
        "DP-SELECT 50 sex, COUNT(*), SUM(cost), AVG(cost) FROM people p JOIN visits v ON p.pid = v.pid "
        "WHERE v.cost > 100 AND p.age >= 30 GROUP BY sex",
    ),
    "private_join_on_with_condition": Case(
        "DP-SELECT 50 kind, COUNT(*) FROM visits AS v JOIN people AS p ON v.pid = p.pid AND p.sex = 'F' "
        "GROUP BY kind",
    ),
    # ---- joins with the public table
    "public_join_on": Case(
        "DP-SELECT 50 r.name, COUNT(*), AVG(p.age) FROM people p JOIN regions r ON p.region = r.code "
        "GROUP BY r.name",
    ),
    "public_join_using": Case(
        f"DP-SELECT 50 name, COUNT(*), AVG(age) FROM people JOIN {REGIONS_AS} USING (region) GROUP BY name"
    ),
    "public_left_join_on": Case(
        "DP-SELECT 50 COUNT(*), COUNT(r.name) FROM people p LEFT JOIN regions r ON p.region = r.code",
    ),
    "public_left_join_using": Case(
        f"DP-SELECT 50 COUNT(*), COUNT(name), AVG(income) FROM people LEFT JOIN {REGIONS_AS} USING (region)"
    ),
    "three_way_join": Case(
        f"DP-SELECT 50 name, COUNT(*), SUM(cost) FROM visits JOIN people USING (pid) "
        f"JOIN {REGIONS_AS} USING (region) WHERE kind <> 'pharmacy' GROUP BY name"
    ),
    # ---- subqueries and CTEs
    "cte": Case(
        "WITH old AS (SELECT pid, age, income FROM people WHERE age >= 60) "
        "DP-SELECT 50 COUNT(*), AVG(income), SUM(age) FROM old"
    ),
    "chained_ctes": Case(
        "WITH a AS (SELECT pid, cost, kind FROM visits WHERE cost > 100), "
        "b AS (SELECT pid, kind AS k, cost FROM a WHERE cost < 800) "
        "DP-SELECT 50 k, COUNT(*), AVG(cost) FROM b GROUP BY k"
    ),
    "nested_subqueries": Case(
        "DP-SELECT 50 COUNT(*), SUM(income) FROM (SELECT * FROM (SELECT pid, income, age, sex FROM people "
        "WHERE age > 30) AS a WHERE income < 100000 AND sex = 'M') AS b"
    ),
    "subquery_where_division": Case(  # visit 0 costs exactly 100: outside DuckDB it would fail there
        "DP-SELECT 50 COUNT(*), SUM(cost) FROM (SELECT pid, cost FROM visits WHERE 1000 / (cost - 100) > 2) "
        "AS v",
        refused=NOT_PORTABLE,
    ),
    "subquery_text_case_key": Case(
        "DP-SELECT 50 band, COUNT(*), AVG(income) FROM (SELECT pid, income, CASE WHEN age < 40 THEN 'young' "
        "WHEN age < 65 THEN 'middle' ELSE 'old' END AS band FROM people) AS b GROUP BY band"
    ),
    # ---- one aggregation per privacy unit
    "per_unit": Case(
        "DP-SELECT 50 COUNT(*), AVG(n), SUM(total) FROM "
        "(SELECT pid, COUNT(*) AS n, SUM(cost) AS total FROM visits GROUP BY pid) AS per"
    ),
    "per_unit_where": Case(
        "DP-SELECT 50 COUNT(*), AVG(top) FROM (SELECT pid, COUNT(*) AS n, MAX(cost) AS top FROM visits "
        "WHERE kind <> 'gp' GROUP BY pid) AS per WHERE n >= 2"
    ),
    "per_unit_two_keys": Case(
        "DP-SELECT 50 kind, COUNT(*), AVG(spent) FROM "
        "(SELECT pid, kind, SUM(cost) AS spent FROM visits GROUP BY pid, kind) AS pk GROUP BY kind"
    ),
    "per_unit_joined": Case(
        "DP-SELECT 50 sex, COUNT(*), AVG(n) FROM people JOIN "
        "(SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS per USING (pid) GROUP BY sex"
    ),
    # ---- IN (SELECT … FROM <public table>)
    "in_public": Case(
        "DP-SELECT 50 COUNT(*), AVG(income) FROM people "
        "WHERE region IN (SELECT code FROM regions WHERE name IN ('North', 'South'))"
    ),
    "not_in_public": Case(
        "DP-SELECT 50 sex, COUNT(*) FROM people WHERE region NOT IN (SELECT code FROM regions "
        "WHERE name LIKE '%th') GROUP BY sex"
    ),
    "in_public_in_cte_and_join": Case(
        "WITH v AS (SELECT pid, cost FROM visits WHERE kind IN ('gp', 'dentist')) "
        "DP-SELECT 50 COUNT(*), SUM(cost) FROM v JOIN people USING (pid) "
        "WHERE region IN (SELECT code FROM regions WHERE name <> 'West')"
    ),
    # ---- distinct counts
    "count_distinct_pid": Case("DP-SELECT 50 COUNT(DISTINCT pid), COUNT(*) FROM visits"),
    "count_distinct_pid_grouped": Case("DP-SELECT 50 kind, COUNT(DISTINCT pid) FROM visits GROUP BY kind"),
    "count_distinct_kind_grouped": Case(
        "DP-SELECT 50 sex, COUNT(DISTINCT kind) FROM visits JOIN people USING (pid) GROUP BY sex"
    ),
    "count_distinct_cost_by_sex": Case(
        "DP-SELECT 50 sex, COUNT(DISTINCT cost) FROM visits JOIN people USING (pid) "
        "WHERE cost > 500 GROUP BY sex"
    ),
    # ---- HAVING, key release, TOP n
    "having": Case("DP-SELECT 50 kind, COUNT(*) AS n FROM visits GROUP BY kind HAVING COUNT(*) > 400"),
    "having_hidden_aggregate": Case(
        "DP-SELECT 50 kind, AVG(cost) FROM visits GROUP BY kind HAVING COUNT(*) > 400"
    ),
    "distinct_key_release": Case("DP-SELECT 50 DISTINCT kind FROM visits", free=True),
    "group_by_key_release_join": Case(
        f"DP-SELECT 50 name FROM people JOIN {REGIONS_AS} USING (region) GROUP BY name", free=True
    ),
    "thresholded_key_release": Case(
        "DP-SELECT 50 DELTA 1e-6 DISTINCT band FROM (SELECT pid, CASE WHEN cost >= 450 THEN 'high' "
        "ELSE 'low' END AS band FROM visits) AS b"
    ),
    "top_n": Case(
        "DP-SELECT 50 TOP 2 kind, COUNT(*) AS n FROM visits GROUP BY kind ORDER BY n DESC",
        truth="SELECT kind, COUNT(*) AS n FROM visits GROUP BY kind ORDER BY n DESC LIMIT 2",
        ordered=True,
    ),
    "order_limit_join": Case(
        f"DP-SELECT 50 name, COUNT(*) AS n FROM visits JOIN people USING (pid) JOIN {REGIONS_AS} "
        "USING (region) GROUP BY name ORDER BY name DESC LIMIT 3",
        ordered=True,
    ),
    # ---- expressions over and inside aggregates
    "expressions_over_aggregates": Case(
        "DP-SELECT 50 kind, COUNT(*) * 2 AS twice, SUM(cost) / COUNT(*) AS mean, ROUND(AVG(cost), 1) AS r, "
        "COUNT(*) + 1000 AS shifted FROM visits GROUP BY kind",
        slack=0.1,
    ),
    "sum_case": Case(
        "DP-SELECT 50 sex, SUM(CASE WHEN age >= 65 THEN 1 ELSE 0 END) AS seniors, COUNT(*) FROM people "
        "GROUP BY sex",
    ),  # CASE of clamped numbers: total on every engine (portable.py)
    "expression_inside_aggregates": Case(
        "DP-SELECT 50 AVG(cost * 2), SUM(income / 1000) FROM visits JOIN people USING (pid)",
    ),
}
# bugs, kept as failing cases (xfail strict): the reason in one line, the reproduction in the report
BUGS: dict[str, str] = {}
CASE_PARAMS = [
    pytest.param(
        name, id=name, marks=[pytest.mark.xfail(strict=True, reason=BUGS[name])] if name in BUGS else []
    )
    for name in CASES
]


# ---- the databases


def _sqlite_file(path: Path, tables: dict[str, pd.DataFrame]) -> Path:
    con = sqlite3.connect(path)
    for name, columns in SCHEMA.items():
        types = {"BIGINT": "INTEGER", "DOUBLE PRECISION": "REAL"}
        con.execute(
            f"CREATE TABLE {name} ({', '.join(f'{c} {types.get(t, t)}' for c, t in columns.items())})"
        )
        frame = tables[name][list(columns)]
        marks = ", ".join("?" * len(columns))
        rows = [tuple(_plain(v) for v in row) for row in frame.itertuples(index=False, name=None)]
        con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    con.commit()
    con.close()
    return path


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _postgres_tables(url: str, tables: dict[str, pd.DataFrame], prefix: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        for name, columns in SCHEMA.items():
            con.execute(f"DROP TABLE IF EXISTS {prefix}{name}")
            con.execute(f"CREATE TABLE {prefix}{name} ({', '.join(f'{c} {t}' for c, t in columns.items())})")
            with con.cursor().copy(f"COPY {prefix}{name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in tables[name][list(columns)].itertuples(index=False, name=None):
                    copy.write_row(tuple(_plain(v) for v in row))


def _attached(path: Path, url: str, sources: dict[str, str]) -> Database:
    db = Database(path)
    for name, meta in METAS.items():
        db.attach(name, url, source=sources[name], metadata=meta)
    db.grant("alice", epsilon=10_000, delta=1e-3)
    db.noise_source = seeded(7)
    return db


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    return relation_tables()


@pytest.fixture(scope="module")
def truth(tables: dict[str, pd.DataFrame]) -> Iterator[duckdb.DuckDBPyConnection]:
    """The raw tables in a DuckDB of their own: plain SQL gives the exact answers."""
    con = duckdb.connect(":memory:")
    for name, frame in tables.items():
        con.register(f"{name}_frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    yield con
    con.close()


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    with postgres_cluster() as url:
        yield url


@pytest.fixture(scope="module")
def dbs(
    tmp_path_factory: pytest.TempPathFactory, tables: dict[str, pd.DataFrame], postgres: str
) -> Iterator[dict[str, Database]]:
    """``duck``: privdb's DuckDB; ``lite``, ``pg``: attached; ``lite0``, ``pg0``: the same, empty."""
    work = tmp_path_factory.mktemp("relations")
    empty = {name: frame.iloc[:0] for name, frame in tables.items()}
    duck = people_visits(work / "duck", tables, epsilon=10_000)
    duck.noise_source = seeded(7)
    out = {"duck": duck}
    for key, data in (("lite", tables), ("lite0", empty)):
        path = _sqlite_file(work / f"{key}.sqlite", data)
        out[key] = _attached(work / key, f"sqlite:///{path}", {n: n for n in METAS})
    for key, data, prefix in (("pg", tables, ""), ("pg0", empty, "empty_")):
        _postgres_tables(postgres, data, prefix)
        out[key] = _attached(work / key, postgres, {n: f"{prefix}{n}" for n in METAS})
    yield out
    for db in out.values():
        db.close()


# ---- comparing an answer with the truth


def _key(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return _plain(value)


def exact_answer(
    con: duckdb.DuckDBPyConnection, case: Case, n_keys: int
) -> list[tuple[tuple[Any, ...], list[float | None]]]:
    frame = con.execute(case.exact_sql).fetchdf()
    out = []
    for row in frame.itertuples(index=False, name=None):
        key = tuple(_key(v) for v in row[:n_keys])
        out.append((key, [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
                          for v in row[n_keys:]]))  # fmt: skip
    return out


def check_answer(
    result: Result, exact: list[tuple[tuple[Any, ...], list[float | None]]], case: Case, where: str
) -> None:
    """Keys as the exact answer's (ordered where the query orders), each value within T-fold its interval."""
    intervals = {a["column"]: a.get("ci95_rows") for a in result.accuracy}
    discrete = {a["column"] for a in result.accuracy if a.get("mechanism") == "geometric"}
    values = [i for i, c in enumerate(result.columns) if c in intervals]
    keys = [i for i, c in enumerate(result.columns) if c not in intervals]
    assert keys == list(range(len(keys))), f"{where}: keys come first: {result.columns}"
    got = [tuple(_key(row[i]) for i in keys) for row in result.rows]
    want = [k for k, _ in exact]
    if case.ordered:
        assert got == want, f"{where}: keys {got}, exactly {want}"
    else:
        assert sorted(got, key=repr) == sorted(want, key=repr), f"{where}: keys {got}, exactly {want}"
    assert len(got) == len(set(got)), f"{where}: a key released twice: {got}"
    truth = dict(exact)
    for r, row in enumerate(result.rows):
        expected = truth[got[r]]
        assert len(expected) == len(values), f"{where}: {result.columns} against {len(expected)} values"
        for j, i in enumerate(values):
            column = result.columns[i]
            rows = intervals[column]
            assert rows is not None and rows[r] is not None, f"{where}: {column} has no interval"
            lo, hi = rows[r]
            v, x = row[i], expected[j]
            assert v is not None and x is not None, f"{where}: {column} {v!r}, exactly {x!r}"
            assert lo <= v <= hi, f"{where}: {column} = {v} outside its own interval [{lo}, {hi}]"
            step = 1.0 if column in discrete else 0.0  # integer noise: T·(half-width + 1) (module doc)
            low = v - T * (v - lo + step) - case.slack
            high = v + T * (hi - v + step) + case.slack
            assert low - 1e-9 <= x <= high + 1e-9, (
                f"{where}: {column} (row {got[r]}) = {v}, ci95 [{lo}, {hi}]; exact {x} is outside "
                f"[{low}, {high}]"
            )


def _spent(db: Database) -> float:
    return float(db.budget("alice").epsilon_spent)


def ask(db: Database, case: Case) -> Result:
    before = _spent(db)
    result = engine.run(db, "alice", case.query)
    assert not result.cached
    expected = 0.0 if case.free else EPSILON
    assert result.epsilon_spent == pytest.approx(expected)
    assert _spent(db) == pytest.approx(before + expected)
    return result


def refusal(db: Database, case: Case, name: str) -> str:
    """The refusal of a query the engine cannot run: unsupported_query, naming it, nothing spent."""
    before = _spent(db)
    with pytest.raises(UnsupportedQuery) as err:
        engine.run(db, "alice", case.query)
    assert err.value.code == "unsupported_query"
    assert f"the {ENGINE_NAMES[name]} engine cannot run" in str(err.value)
    assert _spent(db) == before
    assert db.log("alice")[-1]["code"] == "unsupported_query"
    return str(err.value)


# ---- the tests


@pytest.fixture(scope="module")
def duck_answers() -> dict[str, Result]:
    return {}


def duck_answer(dbs: dict[str, Database], answers: dict[str, Result], name: str) -> Result:
    """DuckDB's answer to a case, asked once for the module (a second ask would be the stored answer)."""
    if name not in answers:
        answers[name] = ask(dbs["duck"], CASES[name])
    return answers[name]


@pytest.mark.parametrize("name", CASE_PARAMS)
def test_duckdb_answers_every_form(
    dbs: dict[str, Database], truth: duckdb.DuckDBPyConnection, duck_answers: dict[str, Result], name: str
) -> None:
    case = CASES[name]
    result = duck_answer(dbs, duck_answers, name)
    n_keys = sum(c not in {a["column"] for a in result.accuracy} for c in result.columns)
    check_answer(result, exact_answer(truth, case, n_keys), case, "duck")


@pytest.mark.parametrize("other", ["lite", "pg"])
@pytest.mark.parametrize("name", CASE_PARAMS)
def test_every_form_on_every_engine(
    dbs: dict[str, Database],
    truth: duckdb.DuckDBPyConnection,
    duck_answers: dict[str, Result],
    name: str,
    other: str,
) -> None:
    case = CASES[name]
    db = dbs[other]
    if other in case.refused:
        message = refusal(db, case, other)
        # the same words over tables whose data cannot make the query fail: the refusal reads no data
        assert refusal(dbs[f"{other}0"], case, other) == message
        return
    duck = duck_answer(dbs, duck_answers, name)
    result = ask(db, case)
    assert result.columns == duck.columns
    n_keys = sum(c not in {a["column"] for a in result.accuracy} for c in result.columns)
    check_answer(result, exact_answer(truth, case, n_keys), case, other)


MISMATCHED_USING = [
    # USING pairs a number with text: ON p.age = v.age is refused for free with a type error
    "DP-SELECT 50 COUNT(*) FROM people JOIN (SELECT pid, kind AS age FROM visits) AS v USING (pid, age)",
    "DP-SELECT 50 COUNT(*) FROM people JOIN (SELECT name AS region FROM regions) AS r USING (region)",
]


@pytest.mark.parametrize("query", MISMATCHED_USING)
@pytest.mark.parametrize(
    "name",
    [
        "duck",
        "lite",
        "pg",
    ],
)  # fmt: skip
def test_a_using_join_of_a_number_with_text_is_refused_for_free(
    dbs: dict[str, Database], name: str, query: str
) -> None:
    """As ``ON p.age = v.age`` is: refused before any data is read (PostgreSQL's binder does refuse it)."""
    db = dbs[name]
    before = _spent(db)
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "alice", query)
    assert not isinstance(err.value, QueryFailed | InternalError), err.value
    assert _spent(db) == before


def engine_statistics(db: Database, query: str, dialect: str) -> list[pd.DataFrame]:
    """The engine's statistics and histograms for a DP-SELECT before any noise, sorted."""
    plan, sql = engine.prepare(db, query, "alice")
    assert isinstance(plan, Plan)
    base = plan.relation.base if plan.relation is not None else plan.table.name
    backend, _ = db.backend_for(base)
    assert backend.dialect == dialect
    parts = [backend.fetch(sql)] if sql else []
    parts += [backend.fetch(h) for h in histogram_queries(db, plan).values()]
    return [p.sort_values(list(p.columns)).reset_index(drop=True) for p in parts]


@pytest.mark.parametrize("other", ["lite", "pg"])
@pytest.mark.parametrize(
    "name", [p for n, p in zip(CASES, CASE_PARAMS, strict=True) if not CASES[n].refused and not CASES[n].free]
)
def test_engines_compute_the_same_statistics(dbs: dict[str, Database], name: str, other: str) -> None:
    """Before any noise: no bound binds in these tables, so every engine's statistics are the same."""
    query = CASES[name].query
    frames_ = [engine_statistics(dbs[e], query, DIALECTS[e]) for e in ("duck", other)]
    assert len(frames_[0]) == len(frames_[1])
    for duck, got in zip(*frames_, strict=True):
        assert list(duck.columns) == list(got.columns)
        pd.testing.assert_frame_equal(duck, got, check_dtype=False, rtol=1e-9)


def test_the_suite_covers_every_form() -> None:
    assert len(CASES) >= 25
    text = " ".join(c.query for c in CASES.values())
    for form in ("JOIN", "LEFT JOIN", "USING", " ON ", "WITH", "GROUP BY pid", "IN (SELECT code FROM regions",
                 "COUNT(DISTINCT pid)", "COUNT(DISTINCT kind)", "HAVING", "DISTINCT kind", "TOP 2",
                 "SUM(CASE WHEN", "COUNT(*) * 2"):  # fmt: skip
        assert form in text, form


# ---- Spark (slow: one Spark start)

SPARK_CASES = [
    "private_join_using_grouped",
    "private_join_many_first",
    "public_left_join_using",
    "per_unit_two_keys",
    "in_public_in_cte_and_join",
    "count_distinct_pid",
    "count_distinct_cost_by_sex",
    "sum_case",
]


@pytest.fixture(scope="module")
def spark_db(tmp_path_factory: pytest.TempPathFactory, tables: dict[str, pd.DataFrame]) -> Iterator[Database]:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (make java installs Debian's headless JRE)")
    pytest.importorskip("pyspark")
    work = tmp_path_factory.mktemp("spark_relations")
    db = Database(work / "db")
    try:
        for name, meta in METAS.items():
            path = work / f"{name}.parquet"
            tables[name].to_parquet(path)
            db.attach(name, "spark://local[2]", source=str(path), metadata=meta)
    except PrivdbError as err:
        db.close()
        pytest.skip(f"Spark does not start here: {err}")
    db.grant("alice", epsilon=10_000, delta=1e-3)
    db.noise_source = seeded(7)
    yield db
    db.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in SPARK_CASES])
def test_forms_on_spark(spark_db: Database, truth: duckdb.DuckDBPyConnection, name: str) -> None:
    case = CASES[name]
    if case.refused:
        refusal(spark_db, case, "big")
        return
    result = ask(spark_db, case)
    n_keys = sum(c not in {a["column"] for a in result.accuracy} for c in result.columns)
    check_answer(result, exact_answer(truth, case, n_keys), case, "big")
