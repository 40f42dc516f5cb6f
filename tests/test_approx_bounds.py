"""ZetaSQL's implicit bounds (privdb.mechanisms.approx_bounds, privdb.sql.implicit): the bins' edges as
Google's ApproxBounds places them, the symmetric widening of SUM and COUNT, the two spends, the refusal
when no bin passes, and refusals before the bounds' read spend nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import seeded
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.mechanisms.approx_bounds import find_bounds, relaxed
from privdb.sql import engine
from zetasql_check import load_duckdb


def _found(values: list[float], integral: bool, symmetric: bool = False) -> tuple[float, float] | None:
    counts: dict[tuple[int, int], int] = {}
    for v in values:
        low = 0 if integral else -1022
        j = low if v == 0 else max(low, math.ceil(math.log2(abs(v))))
        counts[(1 if v >= 0 else -1, j)] = counts.get((1 if v >= 0 else -1, j), 0) + 1
    got = find_bounds(counts, integral=integral, epsilon=500, groups=1, symmetric=symmetric, rng=seeded(1))
    return None if got is None else (got.lower, got.upper)


def test_edges_are_powers_of_two_around_the_values() -> None:
    assert _found([1.0, 1.5, 1.5], integral=False) == (0.5, 2.0)  # 1 is in (0.5, 1], 1.5 in (1, 2]
    assert _found([1.0, 2.4, 1.5], integral=False) == (0.5, 4.0)
    assert _found([1, 5, 2], integral=True) == (0.0, 8.0)  # whole numbers: the smallest bin is [0, 1]
    assert _found([-3.0, 0.75], integral=False) == (-4.0, 1.0)


def test_sum_and_count_bounds_are_symmetric() -> None:
    assert _found([1, 5, 2], integral=True, symmetric=True) == (-8.0, 8.0)
    assert relaxed(0.0, 0.0) == (-1.0, 1.0)
    assert relaxed(-2.0, 16.0) == (-16.0, 16.0)


def test_no_bounds_without_enough_units() -> None:
    assert _found([], integral=True) is None
    # one value, at a small ε: the threshold (≈ 20/ε for 2·64 bins) is far above a count of 1
    got = find_bounds({(1, 3): 1}, integral=True, epsilon=0.5, groups=1, rng=seeded(2))
    assert got is None


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "db")
    load_duckdb(database)
    database.grant("a", epsilon=5000, delta=0.5)
    database.noise_source = seeded(7)
    return database


SUM = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0) "
    'SUM(ival, report_format => "JSON") FROM units_shared'
)


def test_the_answer_spends_both_steps_and_reports_the_bounds(db: Database) -> None:
    result = engine.run(db, "a", SUM)
    report = json.loads(result.rows[0][0])
    assert report["bounding_report"]["lower_bound"] == -16 and report["bounding_report"]["upper_bound"] == 16
    assert abs(report["result"]["value"] - 16) < 0.5
    assert result.epsilon_spent == pytest.approx(1000)
    assert [b["epsilon"] for b in result.extra["implicit_bounds"]] == [500]
    again = engine.run(db, "a", SUM)  # a repeat: both steps' stored answers, free
    assert again.epsilon_spent == 0 and again.rows == result.rows


def test_no_bounds_is_refused_after_the_bounds_step_only(db: Database) -> None:
    before = float(db.budget("a").epsilon_spent)
    with pytest.raises(PrivdbError) as err:
        engine.run(db, "a", SUM.replace("units_shared", "units_shared WHERE id > 1000"))
    assert err.value.code == "invalid_parameter" and "no bounds were found" in err.value.message
    assert float(db.budget("a").epsilon_spent) - before == pytest.approx(500)  # the bounds' half only


def test_a_refusal_before_the_read_spends_nothing(db: Database) -> None:
    db.grant("b", epsilon=600, delta=0.5)
    with pytest.raises(PrivdbError) as err:  # 600 covers the bounds' 500, not both steps
        engine.run(db, "b", SUM)
    assert err.value.code == "budget_exhausted"
    assert float(db.budget("b").epsilon_spent) == 0


def test_explicit_bounds_need_no_bounds_step(db: Database) -> None:
    result = engine.run(
        db, "a", SUM.replace("SUM(ival,", "SUM(ival, contribution_bounds_per_group => (0, 20),")
    )
    assert "implicit_bounds" not in (result.extra or {}) and "bounding_report" not in result.rows[0][0]
