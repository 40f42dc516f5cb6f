"""Empirical ε audits of ``CROSS JOIN UNNEST([…])`` (issue 39): a literal array joined to a private table.

The neighbours are tests/adversarial/test_relation_audit.py's ``D`` and ``D' = drop(D, 999)``, the extreme
person with 8 visits (``m`` = 5, ``G`` = 2 for visits). Joined with an array of three elements, their rows
become 24: the bounding after the join must keep them to the owner's ``m`` (or the query's narrower
``max_rows_contributed``), so each statistic moves by at most its declared sensitivity, and for this person
by exactly that much (a worst case). Without a privacy unit (``people_rows``) each row stands for the array's
length: the multiplicity. The statistical audit is the relation audit's (an event fixed on selection draws,
Clopper–Pearson bounds at α = 1e-6 / ``len(CASES)`` each: the module fails falsely with probability ≤ 1e-6).
"""

from __future__ import annotations

import pytest

from adversarial.test_relation_audit import _moves, _read, empirical_epsilon, neighbours
from conftest import ALPHA
from privdb.database import Database
from privdb.errors import UnsupportedQuery
from privdb.sql import engine

__all__ = ["neighbours"]  # the relation audit's fixture: the same two databases

ARRAY = "CROSS JOIN UNNEST([1, 2, 3]) AS x"
BIGQUERY = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6{}) "
# name: (query, the query's ε, the sensitivity of each statistic: how far the extreme person moves it)
CASES: dict[str, tuple[str, float, list[float]]] = {
    "count": (f"DP-SELECT 1 COUNT(*) FROM visits {ARRAY}", 1.0, [5.0]),
    "sum": (f"DP-SELECT 1 SUM(cost) FROM visits {ARRAY}", 1.0, [5000.0]),
    # with δ a BigQuery total is thresholded on its noisy count of units (privdb.sql.plan.selection): 1 more
    "bigquery count": (BIGQUERY.format("") + f"COUNT(*) FROM visits {ARRAY}", 1.0, [5.0, 1.0]),
    "bigquery max rows": (
        BIGQUERY.format(", max_rows_contributed=2") + f"COUNT(*) FROM visits {ARRAY}",
        1.0,
        [2.0, 1.0],
    ),
    "rows without a unit": (f"DP-SELECT 1 COUNT(*) FROM people_rows {ARRAY}", 1.0, [3.0]),
}
ALPHA_EACH = ALPHA / len(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_the_extreme_person_moves_each_statistic_by_its_sensitivity(
    neighbours: tuple[Database, Database], name: str
) -> None:
    query, epsilon, expected = CASES[name]
    first, second = (_read(db, query) for db in neighbours)
    plan = first[0]
    assert plan.epsilon == epsilon
    assert plan.statistics == second[0].statistics  # the plan is public: the same on both
    sensitivities = [s.sensitivity for s in plan.statistics]
    assert sensitivities == pytest.approx(expected), (name, sensitivities)
    for move, sensitivity in zip(_moves(first, second), sensitivities, strict=True):
        assert move == pytest.approx(sensitivity), (name, move, sensitivities)  # bounded, and a worst case


@pytest.mark.parametrize("name", list(CASES))
def test_the_empirical_epsilon_stays_below_the_claim(
    neighbours: tuple[Database, Database], name: str
) -> None:
    query, epsilon, _ = CASES[name]
    result = empirical_epsilon(neighbours, query, (103, 204), ALPHA_EACH)
    assert result.epsilon_lower_bound <= epsilon, (name, result)


def test_an_array_column_is_refused_before_any_read(neighbours: tuple[Database, Database]) -> None:
    """UNNEST of a column: refused from the query alone, the same on both neighbours, nothing spent."""
    outcomes = []
    for db in neighbours:
        before = db.budget("alice")
        with pytest.raises(UnsupportedQuery) as err:
            engine.run(db, "alice", "DP-SELECT 1 COUNT(*) FROM visits CROSS JOIN UNNEST([cost]) AS x")
        assert db.budget("alice") == before
        outcomes.append((err.value.code, err.value.message))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "unsupported_query", outcomes
