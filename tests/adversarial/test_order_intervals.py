"""A quantile's 95% interval is a function of public information and the released values only.

The interval of MEDIAN, QUANTILE, MIN and MAX is built from three exponential-mechanism releases (the
answer and two ends, privdb.sql.plan.order) by ``interval_of``, which sees the plan's public histogram
(bounds,
grid, ε, Δ) and those three values. The tests run the real pipeline on two neighbouring databases with the
same seeded noise (so most releases coincide), record what ``interval_of`` was given (a spy: the real
function runs), and check: the public inputs are equal on both; the answer's interval is exactly what
``interval_of`` returned; whenever the released values coincide, so do the intervals; and everything in
the accuracy entry besides the intervals is the same on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adversarial.neighbours import ALICE, Neighbours, neighbours
from conftest import seeded
from privdb.sql import engine
from privdb.sql.answer import choose
from privdb.sql.answer.noise import NoisyAnswer, add_noise
from privdb.sql.plan.types import Histogram, Plan
from privdb.sql.run.targets import histogram_queries

QUERIES = [
    "DP-SELECT 1 MEDIAN(income) FROM people",
    "DP-SELECT 1 QUANTILE(age, 0.3) FROM people",
    "DP-SELECT 1 MIN(visits), MAX(income) FROM people",
    "DP-SELECT 1 DELTA 1e-6 disease, MEDIAN(age) FROM people GROUP BY disease HAVING COUNT(*) > 0",
]
DRAWS = 200


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Neighbours]:
    # Alice at the top of every range: she moves every rank the most a person can
    extreme = {**ALICE, "income": 100_000.0, "age": 100, "visits": 50, "disease": "flu"}
    both = neighbours(tmp_path, extra=extreme)
    yield both
    both.close()


Call = tuple[Histogram, float, float, float]


def _draw(
    db: Any, query: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[NoisyAnswer, list[Call]]]:
    plan, sql = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    frame = db.backend.fetch(sql) if sql else None
    hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
    real = choose.interval_of
    calls: list[Call] = []

    def spy(hist: Histogram, answer: float, low_end: float, high_end: float) -> tuple[float, float]:
        calls.append((hist, answer, low_end, high_end))
        return real(hist, answer, low_end, high_end)

    monkeypatch.setattr(choose, "interval_of", spy)
    source = seeded(seed)
    out = []
    try:
        for _ in range(DRAWS):
            calls.clear()
            answer = add_noise(plan, frame, source, hists)
            out.append((answer, list(calls)))
    finally:
        monkeypatch.setattr(choose, "interval_of", real)
    return out


def _intervals(answer: NoisyAnswer) -> list[list[float]]:
    return [
        row for entry in answer.accuracy if entry.get("interval_rank_offset") for row in entry["ci95_rows"]
    ]


@pytest.mark.parametrize("query", QUERIES)
def test_the_interval_is_a_function_of_the_released_values(
    pair: Neighbours, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without, with_ = (_draw(db, query, 17, monkeypatch) for db in pair.both())
    coinciding = 0
    for (a, calls_a), (b, calls_b) in zip(without, with_, strict=True):
        for answer, calls in ((a, calls_a), (b, calls_b)):
            # the released intervals are exactly interval_of's results on the released values
            assert sorted(map(tuple, _intervals(answer))) == sorted(choose.interval_of(*c) for c in calls)
        assert [c[0] for c in calls_a] == [c[0] for c in calls_b]  # public: the same histogram plans
        public = [{k: v for k, v in e.items() if k not in ("ci95", "ci95_rows")} for e in a.accuracy]
        assert public == [{k: v for k, v in e.items() if k not in ("ci95", "ci95_rows")} for e in b.accuracy]
        for ca, cb in zip(calls_a, calls_b, strict=True):
            if ca[1:] == cb[1:]:  # the same released values on both neighbours: the same interval
                coinciding += 1
                assert choose.interval_of(*ca) == choose.interval_of(*cb)
    assert coinciding > DRAWS // 4  # the coupling makes most releases coincide: the check has teeth


def test_the_interval_ignores_the_data_behind_the_released_values(pair: Neighbours) -> None:
    """interval_of reads nothing but its arguments: the two neighbours' public histograms give the same
    interval for any released values, including ones the data make unlikely."""
    plans = []
    for db in pair.both():
        plan, _ = engine.prepare(db, "DP-SELECT 1 MEDIAN(income) FROM people")
        assert isinstance(plan, Plan)
        plans.append(plan.aggregates[0].histogram)
    first, second = plans
    assert first is not None and first == second
    for released in [(50_000.0, 40_000.0, 60_000.0), (0.0, 100_000.0, 0.0), (99_000.0, 1.0, 2.0)]:
        assert choose.interval_of(first, *released) == choose.interval_of(second, *released)


def test_explain_states_the_same_interval_facts_on_both(pair: Neighbours) -> None:
    facts = []
    for db in pair.both():
        db.noise_source = seeded(3)
        answer = add_noise(*_prepared(db, "DP-SELECT 1 MEDIAN(income) FROM people"))
        (entry,) = answer.accuracy
        facts.append((entry["rank_error95"], entry["interval_rank_offset"], entry["epsilon_shares"]))
    assert facts[0] == facts[1]


def _prepared(db: Any, query: str) -> tuple[Plan, Any, Any, dict[str, Any]]:
    plan, sql = engine.prepare(db, query)
    assert isinstance(plan, Plan)
    hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
    return plan, db.backend.fetch(sql) if sql else None, db.noise_source, hists
