"""The corpus of tests/corpus_queries.py (issue 14): DP-SELECT as analysts write it, over PUMS and over
people / visits / regions, answered or refused.

- Every ``answer`` query is answered (ε 1 each, DELTA 1e-6 where keys have no public domain), its intervals
  line up with its rows, and where a truth SQL is given every released key exists in the truth, and no value
  is absurdly far from it (8 interval half-widths: a 95% interval of Laplace or geometric noise is exceeded
  that far with probability ≤ 0.05⁸ ≈ 4e-11 per cell, so this per-query check adds < 1e-7 of false failure
  over the corpus's ~560 cells; it names the query that is grossly wrong).
- The truths lie in the answers' 95% intervals at the stated rate: one binomial test over every (query,
  cell) pair with a truth: fewer covered than the 1e-6 quantile of Binomial(n, 0.95) fails, so a true
  coverage of 95% fails falsely with probability ≤ ALPHA = 1e-6 (cells of one query share no noise except
  where an expression reuses an aggregate; privdb's intervals are conservative, ~97% measured).
- Every ``refuse`` query raises a PrivdbError whose message gives the expected reason, and spends nothing.

Noise is seeded (conftest ``seeded``) and the queries run in a fixed order in one module-scoped database, so
a run is reproducible up to the engine's own sampling of a person's groups (``max_groups``), which only
queries without a truth depend on.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from scipy import stats

from conftest import ALPHA, seeded
from corpus_queries import CORPUS, PEOPLE, PUMS, REFUSED, Query
from joinfixtures import frames, people_visits
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.result import Result
from privdb.sql import engine
from sqlfixtures import DATA

PUMS_DIR = DATA / "pums"
ANALYST = "analyst"
EPSILON = 1.0  # every query of the corpus asks for ε = 1 (checked below)


def _domain(values: list[int]) -> dict[str, Any]:
    """A categorical column stored as integer codes, with its codes as the public domain."""
    return {"type": "int", "values": values}


# PUMS as privdb metadata: the bounds of SmartNoise's PUMS.yaml (age 0..100, income 0..500,000), and the
# category codes as public domains (sex 0/1, educ 1..16, race 1..6, married 0/1). PUMS.csv has no person id:
# row-level privacy. PUMS_pid.csv adds pid: one row per person (max_contributions 1).
PUMS_META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "sex": _domain([0, 1]),
        "educ": _domain(list(range(1, 17))),
        "race": _domain(list(range(1, 7))),
        "income": {"type": "int", "lower": 0, "upper": 500_000},
        "married": _domain([0, 1]),
    }
}
PUMS_PID_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 1,
    "columns": {
        **PUMS_META["columns"],
        "income": {"type": "float", "lower": 0, "upper": 500_000},  # the file writes 17000.0
        "pid": {"type": "int", "private_id": True},
    },
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = people_visits(tmp_path_factory.mktemp("corpus") / "db", frames())
    database.load("PUMS", PUMS_DIR / "PUMS.csv", PUMS_META)
    database.load("PUMS_pid", PUMS_DIR / "PUMS_pid.csv", PUMS_PID_META)
    database.grant(ANALYST, epsilon=10 * len(PUMS + PEOPLE), delta=1e-3)
    database.noise_source = seeded(14)
    yield database
    database.close()


@dataclass
class Outcome:
    result: Result | None
    error: PrivdbError | None
    truth: pd.DataFrame | None


@pytest.fixture(scope="module")
def answers(db: Database) -> dict[str, Outcome]:
    """Every answered query of the corpus, run once in corpus order, with its truth (the owner's SQL)."""
    out: dict[str, Outcome] = {}
    for query in PUMS + PEOPLE:
        result, error = None, None
        try:
            result = engine.run(db, ANALYST, query.sql)
        except PrivdbError as err:
            error = err
        truth = db.owner_sql(query.truth) if query.truth else None
        out[query.sql] = Outcome(result, error, truth)
    return out


@dataclass(frozen=True)
class Cell:
    lo: float
    hi: float
    truth: float
    value: float

    @property
    def covered(self) -> bool:
        return self.lo <= self.truth <= self.hi


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _cells(query: Query, res: Result, truth: pd.DataFrame) -> list[Cell]:
    """The answer's (interval, truth) pairs, rows matched on the key columns (those without an accuracy
    entry); asserts that the truth has the answer's columns and every released key."""
    assert len(truth.columns) == len(res.columns), f"{query.sql}: the truth SQL has other columns"
    value_columns: list[int] = []
    for entry in res.accuracy:
        i = next(i for i, c in enumerate(res.columns) if c == entry["column"] and i not in value_columns)
        value_columns.append(i)
    keys = [i for i in range(len(res.columns)) if i not in value_columns]
    table = {tuple(row[i] for i in keys): row for row in truth.itertuples(index=False)}
    released = [tuple(row[i] for i in keys) for row in res.rows]
    assert len(set(released)) == len(released), f"{query.sql}: rows not told apart by their keys"
    assert set(released) <= set(table), f"{query.sql}: keys not in the data {set(released) - set(table)}"
    cells = []
    for entry, i in zip(res.accuracy, value_columns, strict=True):
        intervals = entry.get("ci95_rows")
        if intervals is None:
            continue
        assert len(intervals) == len(res.rows)
        for key, row, interval in zip(released, res.rows, intervals, strict=True):
            t = table[key][i]
            if interval is None or _missing(t) or _missing(row[i]):
                continue
            cells.append(Cell(float(interval[0]), float(interval[1]), float(t), float(row[i])))
    return cells


def _params(queries: list[Query], prefix: str) -> list[Any]:
    return [
        pytest.param(
            q, id=f"{prefix}{i:03d}", marks=[pytest.mark.xfail(strict=True, reason=q.bug)] if q.bug else []
        )
        for i, q in enumerate(queries)
    ]


def test_the_corpus_has_its_size() -> None:
    assert len(PUMS) >= 60 and len(PEOPLE) >= 40 and len(REFUSED) >= 10
    queries = [q.sql for part in CORPUS.values() for q in part]
    assert len(set(queries)) == len(queries)  # a repeated query would be answered from the cache
    assert sum(q.truth is not None and q.bug is None for q in PUMS + PEOPLE) >= 50
    assert all(q.sql.startswith(("DP-SELECT 1 ", "WITH ")) for q in PUMS + PEOPLE)


@pytest.mark.parametrize("query", _params(PUMS, "pums") + _params(PEOPLE, "people"))
def test_every_query_is_answered(answers: dict[str, Outcome], query: Query) -> None:
    outcome = answers[query.sql]
    if outcome.error is not None:
        raise outcome.error
    res = outcome.result
    assert res is not None
    assert 0 <= res.epsilon_spent <= EPSILON and res.delta_spent <= 1e-6
    assert res.rows, "an empty answer"
    for entry in res.accuracy:
        if entry.get("ci95_rows") is not None:
            assert len(entry["ci95_rows"]) == len(res.rows)
    if outcome.truth is None:
        return
    for cell in _cells(query, res, outcome.truth):
        half = (cell.hi - cell.lo) / 2
        mid = (cell.hi + cell.lo) / 2
        assert abs(cell.truth - mid) <= 8 * half + 1e-9 * max(1.0, abs(cell.truth)), (
            f"{query.sql}: truth {cell.truth} far outside [{cell.lo}, {cell.hi}] (answer {cell.value})"
        )


def test_the_intervals_cover_the_truth_at_95_percent(answers: dict[str, Outcome]) -> None:
    cells: list[Cell] = []
    queries = 0
    for query in PUMS + PEOPLE:
        outcome = answers[query.sql]
        if query.bug or outcome.truth is None or outcome.result is None:
            continue
        queries += 1
        cells += _cells(query, outcome.result, outcome.truth)
    covered = sum(c.covered for c in cells)
    least = int(stats.binom.ppf(ALPHA, len(cells), 0.95))  # P(Binomial(n, 0.95) < least) ≤ ALPHA
    assert queries >= 50 and len(cells) >= 300
    assert covered >= least, f"{covered} of {len(cells)} intervals hold the truth, fewer than {least}"


@pytest.mark.parametrize("query", _params(REFUSED, "refused"))
def test_refused_with_the_reason_and_free(db: Database, query: Query) -> None:
    assert query.refuse is not None
    before = db.budget(ANALYST)
    with pytest.raises(PrivdbError) as err:
        engine.run(db, ANALYST, query.sql)
    assert query.refuse in err.value.message
    after = db.budget(ANALYST)
    assert (after.epsilon_spent, after.delta_spent) == (before.epsilon_spent, before.delta_spent)
