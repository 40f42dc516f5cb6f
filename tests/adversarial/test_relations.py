"""Issue 14 on neighbouring databases: subqueries, CTEs, JOINs, IN (SELECT …), distinct counts, formulas,
HAVING, key release and TOP end the same way whether or not one extreme person is in the data.

The database is tests/joinfixtures.py's people (one row per pid), visits (several rows per pid, m = 5, G = 2)
and public regions. Each pair of neighbours is ``D`` and ``drop(D, pid)`` for a person chosen to be extreme:

* ``most-visits``: the person with the most visits in ``frames()``;
* ``richest``: the person with the largest income (above the declared upper bound);
* ``outlier``: a person added to ``frames()`` who is alone in every way: 40 visits (costs far out of bounds,
  negative, NaN, NULL kinds and a kind outside the declared domain), an income of 10¹², age 40 (so
  ``age - 40`` is 0 on their row only), a sex and a region outside the declared domains.

Every query of ``QUERIES`` is run as the analyst on both neighbours (the noise source seeded per query, the
same on both) and must end the same way (docs/proofs/sql.md "Outcomes", docs/security.md): answered on both
with the same columns, the same ε spent and the same accuracy entries (their noisy intervals aside), and,
where the query's keys are public, the same rows and keys; or refused on both with the same error code and
message, with nothing spent and without the engine having read a private table. Never ``query_failed`` or
``internal_error`` (a failure after the data was read). Each query is also held to what it must be: the forms
issue 14 allows answer, the forms it refuses are refused.

Row counts are compared only where they are public or far from any noisy boundary: keys that pass the noisy
threshold come from groups of ≥ 190 people (≥ 10 noise scales above τ ≈ 15) or from groups of ≤ 3 people
(released with probability < 1e-5 per query); HAVING and TOP queries whose row count depends on the noisy
values are compared on their columns only (``shape``), as the rule allows (a function of the values paid for).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from joinfixtures import PEOPLE_META, drop, frames, people_visits
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.front.keys import canonical_key, order_key
from privdb.sql.plan.types import Plan

PRIVATE = ('"people"', '"visits"', '"people_rows"')  # how the engine SQL names the private tables
OUTLIER = 5001

ROWS_META: dict[str, Any] = {"columns": {k: v for k, v in PEOPLE_META["columns"].items() if k != "pid"}}
JOIN = "people p JOIN visits v ON p.pid = v.pid"
PER_UNIT = "(SELECT pid, COUNT(*) AS n, SUM(cost) AS total FROM visits GROUP BY pid)"
RIGHT = "people p RIGHT JOIN (SELECT DISTINCT code FROM regions) AS g ON p.region = g.code"

# (query, expectation): "keys" — answered, same rows and keys (public keys); "rows" — answered, same number of
# rows; "shape" — answered, same columns; "refused" — the same refusal on both, nothing spent or read
QUERIES: list[tuple[str, str]] = [
    # --- joins on the common privacy unit, and with the public table
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN}", "keys"),
    (f"DP-SELECT 1 SUM(v.cost), AVG(v.cost) FROM {JOIN} WHERE p.age > 30", "keys"),
    (
        "DP-SELECT 1 p.sex, COUNT(*), SUM(v.cost) FROM people p JOIN visits v USING (pid) GROUP BY p.sex",
        "keys",
    ),
    (
        "DP-SELECT 1 v.kind, COUNT(*) FROM people p LEFT JOIN visits v ON p.pid = v.pid GROUP BY v.kind",
        "keys",
    ),
    ("DP-SELECT 1 COUNT(*) FROM visits v LEFT JOIN people p ON v.pid = p.pid WHERE p.income > 50000", "keys"),
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN} AND v.kind = 'gp' AND p.age > 50", "keys"),
    (
        f"DP-SELECT 1 r.name, COUNT(*), AVG(v.cost) FROM {JOIN} JOIN regions r ON p.region = r.code GROUP "
        "BY r.name",
        "keys",
    ),
    (
        "DP-SELECT 1 r.name, AVG(p.income) FROM people p LEFT JOIN regions r ON p.region = r.code GROUP "
        "BY r.name",
        "keys",
    ),
    (
        "DP-SELECT 1 COUNT(*) FROM regions r JOIN people p ON r.code = p.region WHERE r.name <> 'North'",
        "keys",
    ),
    (
        "DP-SELECT 1 COUNT(*), SUM(w.cost) FROM visits v JOIN (SELECT pid, cost FROM visits) w ON v.pid = "
        "w.pid",
        "keys",
    ),
    (
        "DP-SELECT 1 r.name, COUNT(*) FROM people p JOIN (SELECT code, name FROM regions WHERE code < 4) "
        "r ON p.region = r.code GROUP BY r.name",
        "keys",
    ),
    # --- a row-level table (no privacy unit) with the public table: multiplicity, integer counts
    (
        "DP-SELECT 1 r.name, COUNT(*) FROM people_rows p JOIN regions r ON p.region = r.code GROUP BY r.name",
        "keys",
    ),
    ("DP-SELECT 1 COUNT(*), SUM(income) FROM people_rows p LEFT JOIN regions r ON p.region = r.code", "keys"),
    ("DP-SELECT 1 COUNT(*) FROM people_rows p JOIN regions r ON p.region >= r.code", "keys"),
    # --- subqueries and CTEs (row-wise, nested; one aggregation per privacy unit)
    ("DP-SELECT 1 AVG(x) FROM (SELECT income / 1000 AS x FROM people WHERE sex = 'F') AS s", "keys"),
    ("DP-SELECT 1 SUM(y), COUNT(*) FROM (SELECT x + 1 AS y FROM (SELECT age AS x FROM people) a) b", "keys"),
    (f"DP-SELECT 1 AVG(c) FROM (SELECT v.cost AS c, p.age FROM {JOIN}) j WHERE age > 50", "keys"),
    ("WITH f AS (SELECT * FROM people WHERE sex = 'F') DP-SELECT 1 COUNT(*), AVG(age) FROM f", "keys"),
    (f"DP-SELECT 1 AVG(n), SUM(total) FROM {PER_UNIT} AS u", "keys"),
    (f"DP-SELECT 1 COUNT(*) FROM {PER_UNIT} AS u WHERE n > 2", "keys"),
    (f"DP-SELECT 1 n, COUNT(*) FROM {PER_UNIT} AS u GROUP BY n", "keys"),
    (f"WITH u AS {PER_UNIT} DP-SELECT 1 MEDIAN(total), MAX(n) FROM u", "keys"),
    (
        "DP-SELECT 1 kind, SUM(n) FROM (SELECT pid, kind, COUNT(*) AS n FROM visits GROUP BY pid, kind) "
        "GROUP BY kind",
        "keys",
    ),
    (
        "DP-SELECT 1 AVG(t) FROM (SELECT p.pid, SUM(v.cost) AS t FROM people p LEFT JOIN visits v ON "
        "p.pid = v.pid GROUP BY p.pid)",
        "keys",
    ),
    (
        "DP-SELECT 1 COUNT(*) FROM people WHERE region IN (SELECT code FROM regions WHERE name IN "
        "('North', 'East'))",
        "keys",
    ),
    (
        "DP-SELECT 1 COUNT(*) FROM people WHERE region NOT IN (SELECT code FROM (SELECT code FROM "
        "regions) s WHERE code > 2)",
        "keys",
    ),
    # --- distinct counts
    ("DP-SELECT 1 COUNT(DISTINCT pid) FROM visits", "keys"),
    ("DP-SELECT 1 kind, COUNT(DISTINCT pid) FROM visits GROUP BY kind", "keys"),
    ("DP-SELECT 1 COUNT(DISTINCT kind), APPROX_COUNT_DISTINCT(kind) FROM visits", "keys"),
    (f"DP-SELECT 1 COUNT(DISTINCT p.pid) FROM {JOIN} WHERE v.cost > 500", "keys"),
    # --- expressions inside aggregates, over aggregates, HAVING
    (
        "DP-SELECT 1 SUM(CASE WHEN sex = 'F' THEN income ELSE 0 END), AVG(age * 12 + income / 1000) FROM "
        "people",
        "keys",
    ),
    ("DP-SELECT 1 SUM(income / GREATEST(age - 40, 1)) FROM people", "keys"),
    (
        "DP-SELECT 1 sex, SUM(income) / COUNT(*) AS mean, ROUND(AVG(age), 1) AS a FROM people GROUP BY sex",
        "keys",
    ),
    (
        "DP-SELECT 1 LN(COUNT(*) - 1e9), SQRT(SUM(income) - 1e15), CAST(COUNT(*) * 1e30 AS INTEGER) FROM "
        "people",
        "keys",
    ),
    ("DP-SELECT 1 sex, COUNT(*) FROM people GROUP BY sex HAVING COUNT(*) > 100", "keys"),
    ("DP-SELECT 1 region, COUNT(*) FROM people GROUP BY region HAVING LN(COUNT(*) - 1000) > 0", "shape"),
    (
        "DP-SELECT 1 region, AVG(income) FROM people GROUP BY region HAVING SUM(income) / (COUNT(*) - "
        "1000) > 0 ORDER BY 2 DESC",
        "shape",
    ),
    # a noisy count that is 0 on one neighbour and 1 on the other (only the outlier has an income above 1e11;
    # only the outlier's total reaches 4999)
    ("DP-SELECT 50 1 / COUNT(*) AS inv, 5 / (COUNT(*) - 1) FROM people_rows WHERE income > 1e11", "keys"),
    (
        "DP-SELECT 50 age, COUNT(*) FROM people_rows WHERE income > 1e11 GROUP BY age "
        "HAVING 1 / COUNT(*) >= 0",
        "shape",
    ),
    (
        "DP-SELECT 50 age, AVG(income) / (COUNT(*) - 1) AS x FROM people_rows WHERE income > 1e11 "
        "GROUP BY age",
        "keys",
    ),
    (
        f"DP-SELECT 50 1 / COUNT(*) AS inv, 5 / (COUNT(*) - 1) FROM {PER_UNIT} AS u WHERE total >= 4999",
        "keys",
    ),
    (
        f"DP-SELECT 50 n, COUNT(*) FROM {PER_UNIT} AS u WHERE total >= 4999 GROUP BY n HAVING 1 / COUNT(*) "
        ">= 0",
        "shape",
    ),
    ("DP-SELECT 1 VAR(age), STD(income), VAR_SAMP(age), STDDEV_SAMP(age), VAR_POP(age) FROM people", "keys"),
    # a public table with no join condition (CROSS JOIN, FROM a, b): exactly JOIN … ON TRUE
    ("DP-SELECT 1 COUNT(*) FROM people p CROSS JOIN regions r", "keys"),
    ("DP-SELECT 1 COUNT(*), SUM(income) FROM people_rows p, regions r", "keys"),
    ("DP-SELECT 1 r.name, COUNT(*) FROM people p, regions r WHERE p.region = r.code GROUP BY r.name", "keys"),
    # every public key: RIGHT JOIN onto a public relation (the outlier's region 9 is in none)
    (f"DP-SELECT 1 g.code, COUNT(p.pid), SUM(p.income) FROM {RIGHT} GROUP BY g.code", "keys"),
    (f"DP-SELECT 1 g.code, AVG(p.age) FROM {RIGHT} AND p.age > 30 GROUP BY 1 ORDER BY 1", "keys"),
    (
        "DP-SELECT 1 g.code, COUNT(q.age) FROM people_rows q RIGHT JOIN (SELECT DISTINCT code FROM "
        "regions) g ON q.region = g.code GROUP BY g.code",
        "keys",
    ),
    # --- key release and TOP
    ("DP-SELECT 1 kind FROM visits GROUP BY kind", "keys"),
    ("DP-SELECT 1 DISTINCT sex, region FROM people WHERE pid = 5001", "keys"),
    ("DP-SELECT 1 DELTA 1e-6 DISTINCT FLOOR(income / 100000) AS band FROM people", "rows"),
    ("DP-SELECT 1 DELTA 1e-6 FLOOR(income / 100000) AS band, COUNT(*) FROM people GROUP BY 1", "rows"),
    ("DP-SELECT 1 TOP 2 region, COUNT(*) AS n FROM people GROUP BY region ORDER BY n DESC", "rows"),
    ("DP-SELECT 1 region, COUNT(*) AS n FROM people GROUP BY region ORDER BY n LIMIT 3", "rows"),
    # --- refused: joins
    ("DP-SELECT 1 COUNT(*) FROM people p RIGHT JOIN visits v ON p.pid = v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p FULL JOIN visits v ON p.pid = v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p CROSS JOIN visits v", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p, visits v WHERE p.pid = v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p CROSS JOIN regions r ON p.region = r.code", "refused"),
    # --- refused: RIGHT JOIN forms that would read SQL's NULL rows, or without a public right side
    (f"DP-SELECT 1 g.code, COUNT(*) FROM {RIGHT} GROUP BY g.code", "refused"),
    (f"DP-SELECT 1 p.sex, COUNT(p.pid) FROM {RIGHT} GROUP BY 1", "refused"),
    (f"DP-SELECT 1 g.code, COUNT(p.pid) FROM {RIGHT} WHERE p.income IS NULL GROUP BY g.code", "refused"),
    (f"DP-SELECT 1 g.code, COUNT(p.pid) FROM {RIGHT} WHERE p.age > 30 GROUP BY g.code", "refused"),
    (f"DP-SELECT 1 g.code, SUM(COALESCE(p.age, 1)) FROM {RIGHT} GROUP BY g.code", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM (SELECT p.age FROM {RIGHT}) AS s", "refused"),
    (f"DP-SELECT 1 COUNT(p.pid) FROM {RIGHT} JOIN regions r ON g.code = r.code", "refused"),
    (
        "DP-SELECT 1 COUNT(p.pid) FROM regions r RIGHT JOIN (SELECT DISTINCT code FROM regions) g ON TRUE",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT DISTINCT region FROM people) AS d", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.age = v.cost", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN} OR p.age > 50", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.pid < v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.region = v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM regions r LEFT JOIN people p ON r.code = p.region", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN} JOIN (SELECT pid, cost FROM visits) w ON v.cost = w.cost", "refused"),
    (
        "DP-SELECT 1 COUNT(*) FROM visits v JOIN (SELECT pid AS id, cost FROM visits) w ON v.cost = w.id",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM people_rows p JOIN visits v ON p.region = v.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN people_rows q ON p.age = q.age", "refused"),
    # --- refused: subqueries
    ("DP-SELECT 1 COUNT(*) FROM (SELECT sex, COUNT(*) AS n FROM people GROUP BY sex)", "refused"),
    ("DP-SELECT 1 AVG(n) FROM (SELECT kind, COUNT(*) AS n FROM visits GROUP BY kind)", "refused"),
    (
        "DP-SELECT 1 AVG(n) FROM (SELECT pid % 10 AS d, COUNT(*) AS n FROM visits GROUP BY pid % 10)",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT COUNT(*) AS n FROM visits)", "refused"),
    ("DP-SELECT 1 AVG(n) FROM (SELECT age, COUNT(*) AS n FROM people_rows GROUP BY age)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT * FROM people LIMIT 10)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT * FROM people ORDER BY income DESC)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT DISTINCT region FROM people)", "refused"),
    (  # HAVING in a per-unit subquery filters rows that each depend on one person: answered
        "DP-SELECT 1 COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid HAVING COUNT(*) > 3)",
        "keys",
    ),
    (
        "DP-SELECT 1 COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid HAVING SUM(cost) > 3)",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT age FROM people UNION ALL SELECT age FROM people)", "refused"),
    ("WITH RECURSIVE t AS (SELECT age FROM people) DP-SELECT 1 COUNT(*) FROM t", "refused"),
    ("DP-SELECT 1 AVG(r) FROM (SELECT ROW_NUMBER() OVER (ORDER BY income) AS r FROM people)", "refused"),
    ("DP-SELECT 1 AVG(s) FROM (SELECT SUM(income) OVER (PARTITION BY region) AS s FROM people)", "refused"),
    ("DP-SELECT 1 COUNT(*) OVER () FROM people", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p, LATERAL (SELECT * FROM visits v WHERE v.pid = p.pid)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM read_csv('people.csv')", "refused"),
    # --- refused: subqueries in WHERE and the select list
    (
        "DP-SELECT 1 COUNT(*) FROM people p WHERE region IN (SELECT code FROM regions r WHERE r.code = "
        "p.region)",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE income > (SELECT AVG(income) FROM people)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE region = (SELECT MAX(code) FROM regions)", "refused"),
    ("DP-SELECT 1 COUNT(*), (SELECT COUNT(*) FROM regions) FROM people", "refused"),
    (
        "DP-SELECT 1 COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM visits v WHERE v.pid = p.pid)",
        "refused",
    ),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE pid IN (SELECT pid FROM visits WHERE cost > 500)", "refused"),
    (
        "DP-SELECT 1 COUNT(*) FROM people WHERE region IN (SELECT region FROM people WHERE income > 1e6)",
        "refused",
    ),
    (
        "DP-SELECT 1 COUNT(*) FROM people WHERE region IN (SELECT p.region FROM people p JOIN regions r "
        "ON p.region = r.code)",
        "refused",
    ),
    # --- refused: aggregates without a bound, identifiers, names
    ("DP-SELECT 1 SUM(income / (age - 40)) FROM people", "refused"),
    (
        "DP-SELECT 1 SUM(CASE WHEN sex = 'X' AND region = 9 THEN income / (age - 40) END) FROM people",
        "refused",
    ),
    (
        "DP-SELECT 1 SUM(CASE WHEN CAST(pid AS VARCHAR) LIKE '5001' THEN income / (age - 40) END) FROM "
        "people",
        "refused",
    ),
    (
        "DP-SELECT 1 AVG(t) FROM (SELECT pid, SUM(income / (age - 40)) AS t FROM people GROUP BY pid)",
        "refused",
    ),
    ("DP-SELECT 1 SUM(DISTINCT cost) FROM visits", "refused"),
    ("DP-SELECT 1 SUM(pid) FROM visits", "refused"),
    ("DP-SELECT 1 DELTA 1e-6 pid, COUNT(*) FROM visits GROUP BY pid", "refused"),
    ("DP-SELECT 1 DELTA 1e-6 DISTINCT pid FROM visits", "refused"),
    ("DP-SELECT 1 DELTA 1e-6 DISTINCT x FROM (SELECT pid + 0 AS x FROM visits)", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN} WHERE pid > 3", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM (SELECT * FROM {JOIN})", "refused"),
    (f"DP-SELECT 1 COUNT(*) FROM {JOIN} WHERE x.age > 3", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN visits p ON p.pid = p.pid", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT age, income AS age FROM people)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE __privdb_unit > 3", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT age FROM people) s WHERE __privdb_unit = 5001", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT age AS __privdb_unit FROM people)", "refused"),
    ("DP-SELECT 1 COUNT(*) FROM (SELECT pid, COUNT(*) AS __privdb_unit FROM visits GROUP BY pid)", "refused"),
    ("DP-SELECT 1 SUM(age * 2) FROM people WHERE __privdb_arg0 > 0", "refused"),
    ("DP-SELECT 1 sex, COUNT(*) FROM people GROUP BY sex HAVING __privdb_h0 > 1", "refused"),
]


@dataclass
class Pair:
    name: str
    dbs: tuple[Database, Database]  # with the person, without
    reads: dict[int, list[str]]  # engine SQL run per database (by id)


def _outlier(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``tables`` plus a person unlike anyone else (module doc)."""
    person = pd.DataFrame({"pid": [OUTLIER], "age": [40], "income": [1e12], "sex": ["X"], "region": [9]})
    costs = [1e9] * 10 + [-5.0] * 10 + [float("nan")] * 5 + [1000.0] * 15
    kinds = (["gp", "vet", None, "hospital"] * 10)[: len(costs)]
    visits = pd.DataFrame({"pid": OUTLIER, "cost": costs, "kind": kinds})
    return {
        **tables,
        "people": pd.concat([tables["people"], person], ignore_index=True),
        "visits": pd.concat([tables["visits"], visits], ignore_index=True),
    }


def _database(path: Path, tables: dict[str, pd.DataFrame], reads: dict[int, list[str]]) -> Database:
    db = people_visits(path, tables)
    db.backend.load_frame("people_rows", tables["people"].drop(columns="pid"))  # row-level: no privacy unit
    db.set_metadata("people_rows", ROWS_META)
    log: list[str] = []
    fetch = db.backend.fetch

    def logged(sql: str, *args: Any, **kwargs: Any) -> pd.DataFrame:
        log.append(sql)
        return fetch(sql, *args, **kwargs)

    db.backend.fetch = logged  # type: ignore[method-assign]
    reads[id(db)] = log
    return db


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Pair]]:
    base = frames()
    visits = base["visits"]["pid"].value_counts()
    people = base["people"].sort_values("income", ascending=False)
    chosen = {
        "most-visits": (base, int(visits.index[0])),
        "richest": (base, int(people["pid"].iloc[0])),
        "outlier": (_outlier(base), OUTLIER),
    }
    made: list[Pair] = []
    for name, (tables, pid) in chosen.items():
        root = tmp_path_factory.mktemp(name)
        reads: dict[int, list[str]] = {}
        dbs = (_database(root / "with", tables, reads), _database(root / "without", drop(tables, pid), reads))
        made.append(Pair(name, dbs, reads))
    yield made
    for pair in made:
        for db in pair.dbs:
            db.close()


def _public_keys(db: Database, query: str) -> bool:
    """Whether the query's keys are public (no noisy threshold selects them); planning reads no private
    data."""
    plan, _ = engine.prepare(db, query, "alice")
    return isinstance(plan, Plan) and plan.threshold is None


def _observe(pair: Pair, db: Database, query: str, expect: str) -> tuple[Any, ...]:
    """What the analyst observes of ``query`` on ``db`` besides the noisy values (checked as it goes)."""
    db.noise_source = seeded(zlib.crc32(query.encode()))  # the same noise on both neighbours
    before = db.budget("alice")
    log = pair.reads[id(db)]
    log.clear()
    try:
        result = engine.run(db, "alice", query)
    except PrivdbError as err:
        after = db.budget("alice")
        assert (after.epsilon_remaining, after.delta_remaining) == (
            before.epsilon_remaining,
            before.delta_remaining,
        ), f"a refusal was charged: {query}"
        private = [sql for sql in log if any(name in sql for name in PRIVATE)]
        assert not private, f"refused after reading private data: {query}\n{private}"
        return ("error", err.code, err.message)
    assert not result.cached
    after = db.budget("alice")
    spent = before.epsilon_remaining - after.epsilon_remaining
    assert spent == pytest.approx(result.epsilon_spent, abs=1e-9)
    accuracy = tuple(
        tuple(sorted((k, repr(v)) for k, v in entry.items() if k not in ("ci95", "ci95_rows")))
        for entry in result.accuracy
    )
    for entry in result.accuracy:
        rows = entry.get("ci95_rows")
        assert rows is None or len(rows) == len(result.rows), entry
    seen: tuple[Any, ...] = ("answered", tuple(result.columns), result.epsilon_spent, accuracy)
    if expect in ("keys", "rows"):
        seen += (len(result.rows),)
    if expect == "keys" and _public_keys(db, query):
        plan, _ = engine.prepare(db, query, "alice")
        assert isinstance(plan, Plan)
        at = [i for i, (_, role, _) in enumerate(plan.resolved.outputs) if role == "key"]
        keys = sorted((tuple(canonical_key(row[i]) for i in at) for row in result.rows), key=order_key)
        seen += (tuple(keys),)
    return seen


def test_the_queries_cover_every_form() -> None:
    assert len(QUERIES) >= 40
    assert len({q for q, _ in QUERIES}) == len(QUERIES)
    assert sum(1 for _, e in QUERIES if e == "refused") >= 20


@pytest.mark.parametrize(("query", "expect"), QUERIES, ids=[f"q{i:02d}" for i in range(len(QUERIES))])
def test_one_person_never_changes_the_outcome(pairs: list[Pair], query: str, expect: str) -> None:
    for pair in pairs:
        with_, without = (_observe(pair, db, query, expect) for db in pair.dbs)
        assert with_ == without, f"[{pair.name}] {query}\n  with:    {with_}\n  without: {without}"
        assert with_[:2] not in (("error", "internal_error"), ("error", "query_failed")), (pair.name, with_)
        if expect == "refused":
            assert with_[0] == "error", f"[{pair.name}] must be refused: {query}\n  {with_}"
        else:
            assert with_[0] == "answered", f"[{pair.name}] must answer: {query}\n  {with_}"


def test_an_empty_noisy_count_in_a_formula_is_null_not_an_error(pairs: list[Pair]) -> None:
    """``1 / COUNT(*)`` where the true count is 1 with the outlier and 0 without (a row-level table: integer
    counts, the geometric mechanism): at ε = 50 the noisy counts are almost surely 1 and 0, so one neighbour
    divides by zero. Both answer; the quotient is NULL there."""
    pair = next(p for p in pairs if p.name == "outlier")
    query = "DP-SELECT 50 1 / COUNT(*) AS inv, COUNT(*) AS n FROM people_rows WHERE income > 1e11"
    answers = []
    for db in pair.dbs:
        db.noise_source = seeded(7)
        answers.append(engine.run(db, "alice", query).rows[0])
    for inv, n in answers:
        assert (inv is None) == (n == 0)
        if n:
            assert inv == pytest.approx(1 / n)
    assert [n for _, n in answers] == [1.0, 0.0]  # P(a geometric noise ≠ 0 at ε = 50) < 4e-22 each


def test_a_refusal_names_no_value_of_the_data(pairs: list[Pair]) -> None:
    """The outlier's values (income 1e12, sex X, kind vet, pid 5001) appear in no refusal message, unless
    the analyst wrote them in the query."""
    pair = next(p for p in pairs if p.name == "outlier")
    db = pair.dbs[0]
    refusals = []
    for query, expect in QUERIES:
        if expect == "refused":
            with pytest.raises(PrivdbError) as refused:
                engine.run(db, "alice", query)
            refusals.append((query, refused.value.message))
    for query, message in refusals:
        for value in ("1e+12", "1000000000000", "'X'", "vet", "5001"):
            assert value in query or value not in message, (query, message)


@pytest.mark.parametrize(
    "query",
    [
        'DP-SELECT 1 COUNT(*) FROM (SELECT cost AS "__PRIVDB_UNIT" FROM visits)',
        'DP-SELECT 1 COUNT(*) FROM (SELECT pid, kind, COUNT(*) AS "__Privdb_Unit" FROM visits '
        "GROUP BY pid, kind)",
    ],
)
def test_reserved_names_are_reserved_in_any_case(pairs: list[Pair], query: str) -> None:
    db = pairs[0].dbs[0]
    with pytest.raises(PrivdbError) as refused:
        engine.run(db, "alice", query)
    assert refused.value.code == "unsupported_query"


def test_a_self_join_on_the_unit_with_aliases_answers(pairs: list[Pair]) -> None:
    query = "DP-SELECT 1 COUNT(*), SUM(b.cost) FROM visits a JOIN visits b ON a.pid = b.pid"
    for pair in pairs:
        with_, without = (_observe(pair, db, query, "keys") for db in pair.dbs)
        assert with_ == without
        assert with_[0] == "answered", with_


def test_the_extreme_people_are_extreme() -> None:
    """Sanity of the fixture: the extreme people are what the module doc says."""
    base = frames()
    visits = base["visits"]["pid"].value_counts()
    assert visits.iloc[0] >= 8 and (visits >= 5).sum() > 100  # many people reach m = 5; this one has most
    assert base["people"]["income"].max() > 200_000  # above the declared upper bound
    grown = _outlier(base)
    assert int(np.sum(grown["visits"]["pid"] == OUTLIER)) == 40
