"""ZetaSQL's compliance tests as privdb's measure (issue 39): tests/zetasql_corpus.py, run on DuckDB and on
SQLite at ε = 1000.

Each case's outcome is the one recorded: a ``match`` answers ZetaSQL's rows within the answer's intervals, a
``refused`` case is refused with its reason (a privdb error, never an internal one), a ``differs`` case
answers something else, for the reason DIFFERENCES names. Every case ZetaSQL refuses is refused by privdb
too, but those DIFFERENCES names; the figures are the report's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import seeded
from privdb.database import Database
from zetasql_check import load_duckdb, load_sqlite, outcome
from zetasql_corpus import CASES, DIFFERENCES, Case

ENGINES = ("duckdb", "sqlite")


@pytest.fixture(scope="module", params=ENGINES)
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    path = tmp_path_factory.mktemp(f"zeta_{request.param}")
    database = Database(path / "db")
    if request.param == "duckdb":
        load_duckdb(database)
    else:
        load_sqlite(database, path / "zeta.db")
    database.grant("a", epsilon=1e15, delta=0.999)
    database.noise_source = seeded(39)
    yield database
    database.close()


SQLITE_CLAMP = "unsupported_query: the SQLite engine cannot run this query's subquery"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_has_its_recorded_outcome(db: Database, case: Case) -> None:
    status, detail = outcome(db, case)
    assert status != "internal", detail
    if case.sqlite_refused and db.backend_for("units")[0].dialect == "sqlite":
        assert detail.startswith(SQLITE_CLAMP), detail
        return
    assert status == case.outcome, (case.query, detail)
    if status == "refused":
        code, _, words = case.needle.partition(": ")
        assert detail.startswith(code + ": ") and words in detail, detail


def test_every_difference_is_named_and_explained() -> None:
    for case in CASES:
        answered_by_zetasql = not case.error
        expected = (case.outcome == "match") if answered_by_zetasql else (case.outcome == "refused")
        assert expected or case.why in DIFFERENCES, case.name
        assert case.why != "other", case.name


def test_the_figures() -> None:
    """The report's figures: of the cases ZetaSQL answers, how many privdb answers and matches; of those it
    refuses, how many privdb refuses."""
    answerable = [c for c in CASES if not c.error]
    refusals = [c for c in CASES if c.error]
    matched = sum(c.outcome == "match" for c in answerable)
    refused = sum(c.outcome == "refused" for c in refusals)
    assert (len(CASES), len(answerable), matched, len(refusals), refused) == (267, 225, 181, 42, 41)
    on_sqlite = sum(c.outcome == "match" and not c.sqlite_refused for c in answerable)
    assert on_sqlite == 36


def test_the_corpus_is_not_a_copy() -> None:
    """The corpus names privdb's own tables and columns, never ZetaSQL's."""
    for case in CASES:
        assert "TestTable" not in case.query and "int64_val" not in case.query, case.name
