"""A grammar fuzzer: random expressions of the allowed language over data full of edge values.

Totality: every expression the language accepts runs on a table holding NULL, NaN, ±inf, −0.0, extreme
numbers, empty, huge and unicode strings and extreme dates without the engine raising (the rendered SQL is
run directly, so a failure is seen even where the engine path would hide it). Keys are scalars. Outcomes:
through privdb, the same query on two neighbouring databases ends the same way, never in an internal error.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.grammar import EDGE_META, GRAMMAR, HUGE, edge_frame
from adversarial.neighbours import Neighbours, neighbours, outcome
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.sql import engine


@pytest.fixture(scope="module")
def edge_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = Database(tmp_path_factory.mktemp("edge"))
    db.backend.load_frame("t", edge_frame())
    db.set_metadata("t", EDGE_META)
    db.grant("eve", epsilon=1e6, delta=0.5)
    yield db
    db.close()


def _run_engine_sql(db: Database, query: str) -> pd.DataFrame | None:
    """Plan ``query`` (refusals are fine: the language said no) and run its engine SQL directly."""
    try:
        _, sql = engine.prepare(db, query)
    except PrivdbError as err:
        code = err.code
    else:
        frame: pd.DataFrame = db.backend.fetch(sql)  # raises if the rendered SQL is not total
        return frame
    assert code in ("unsupported_query", "invalid_parameter", "parse_error", "unknown_column"), code
    return None


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@FUZZ
@given(GRAMMAR["bool"])
def test_every_accepted_predicate_runs_on_every_edge_value(edge_db: Database, predicate: str) -> None:
    _run_engine_sql(edge_db, f"DP-SELECT 1 COUNT(*), SUM(x) FROM t WHERE {predicate}")


@FUZZ
@given(st.one_of(GRAMMAR["num"], GRAMMAR["text"]))
def test_every_accepted_key_is_a_scalar_on_every_edge_value(edge_db: Database, key: str) -> None:
    frame = _run_engine_sql(edge_db, f"DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM t GROUP BY {key}")
    if frame is not None:
        for value in frame["k0"].tolist():
            scalar = isinstance(value, int | float | str | np.generic | pd.Timestamp)
            assert value is None or value is pd.NA or value is pd.NaT or scalar, value


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    extra = {
        "x": math.nan,
        "n": 2**63 - 1,
        "s": HUGE,
        "c": "not in domain",
        "d": pd.Timestamp("1677-09-22"),
        "f": None,
    }
    made = neighbours(tmp_path_factory.mktemp("pair"), edge_frame(), extra, EDGE_META)
    yield made
    made.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(GRAMMAR["bool"], st.one_of(GRAMMAR["num"], GRAMMAR["text"]))
def test_neighbours_end_the_same_way(pair: Neighbours, predicate: str, key: str) -> None:
    for query in (
        f"DP-SELECT 1 COUNT(*), AVG(x) FROM t WHERE {predicate}",
        f"DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM t WHERE {predicate} GROUP BY {key}",
    ):
        first, second = (outcome(db, query.replace(" t ", " people ")) for db in pair.both())
        assert first == second, query
        assert first[:2] not in (("error", "internal_error"), ("error", "query_failed")), (query, first)


def test_the_edge_table_holds_every_edge_value(tmp_path: Path) -> None:
    frame = edge_frame()
    assert frame["s"].map(lambda v: v == HUGE).any()
    with Database(tmp_path / "d") as db:
        db.backend.load_frame("t", frame)
        nan, null = db.backend.raw(
            "SELECT COUNT(*) FILTER (isnan(x)), COUNT(*) FILTER (x IS NULL) FROM t"
        ).iloc[0]
    assert nan > 0 and null > 0
