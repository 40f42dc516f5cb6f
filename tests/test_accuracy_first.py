"""`DP-SELECT ACCURACY a [CONFIDENCE c] [MAX m] …` (issue 16): the smallest ε reaching ± a, chosen from public
facts, shown by explain, charged; answers within ± a as often as promised; every bad request refused free."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy.stats import binom

import privdb
from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter, PrivdbError, UnsupportedQuery

N = 1500


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("accuracy") / "db"
    with Database(path) as database:
        database.backend.load_frame("people", generate(N, seed=11))
        database.set_metadata("people", METADATA)
        database.grant("alice", epsilon=900, delta=1e-4)
        database.grant("bob", epsilon=1)
    return path


def test_the_chosen_epsilon_is_the_closed_form_for_a_laplace_count(db: Path) -> None:
    owner = privdb.connect(db)
    plan = owner.explain("DP-SELECT ACCURACY 10 COUNT(*) FROM people")
    assert plan["epsilon"] == pytest.approx(math.log(20) / 10, rel=1e-5)  # 95% half-width of Lap(1/ε)
    assert plan["epsilon"] >= math.log(20) / 10  # rounded up, never down
    assert plan["accuracy_request"] == {"half_width": 10, "confidence": 0.95, "max_epsilon": None}
    assert plan["columns"][0]["ci95_half_width"] <= 10
    sharper = owner.explain("DP-SELECT ACCURACY 10 CONFIDENCE 0.99 COUNT(*) FROM people")
    assert sharper["epsilon"] == pytest.approx(math.log(100) / 10, rel=1e-5)


def test_it_is_the_smallest_epsilon(db: Path) -> None:
    owner = privdb.connect(db)
    chosen = owner.explain("DP-SELECT ACCURACY 20000 sex, COUNT(*), SUM(income) FROM people GROUP BY sex")
    below = owner.explain(
        f"DP-SELECT {chosen['epsilon'] * 0.999!r} sex, COUNT(*), SUM(income) FROM people GROUP BY sex"
    )
    assert max(c["ci95_half_width"] for c in chosen["columns"] if c["role"] == "aggregate") <= 20000
    assert max(c["ci95_half_width"] for c in below["columns"] if c["role"] == "aggregate") > 20000


def test_answers_are_within_the_accuracy_as_often_as_promised(db: Path) -> None:
    """300 answers of ACCURACY 15 (each a different WHERE with the same truth, so none is a stored answer):
    at least binom.ppf(1e-6, 300, 0.95) of them within ± 15 of the truth (false failure ≤ 1e-6)."""
    alice = privdb.connect(db, analyst="alice")
    truth = N  # every age is ≥ 0
    runs = 300
    inside = 0
    for i in range(runs):
        answer = alice.sql(f"DP-SELECT ACCURACY 15 COUNT(*) FROM people WHERE age > -{i + 1}")
        assert answer.epsilon_spent == pytest.approx(math.log(20) / 15, rel=1e-5)
        inside += abs(answer.rows[0][0] - truth) <= 15
    assert inside >= binom.ppf(1e-6, runs, 0.95)


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("DP-SELECT ACCURACY 100 AVG(income) FROM people", InvalidParameter, "depends on the data"),
        ("DP-SELECT ACCURACY 5 MEDIAN(age) FROM people", InvalidParameter, "depends on the data"),
        (
            "DP-SELECT ACCURACY 0.001 MAX 2 COUNT(*) FROM people",
            InvalidParameter,
            "more than ε = 2 \\(your MAX\\)",
        ),
        ("DP-SELECT ACCURACY -3 COUNT(*) FROM people", InvalidParameter, "positive"),
        ("DP-SELECT ACCURACY 3 CONFIDENCE 1.5 COUNT(*) FROM people", InvalidParameter, "CONFIDENCE must be"),
        ("DP-SELECT ACCURACY 3 MAX 0 COUNT(*) FROM people", InvalidParameter, "MAX must be"),
        ("DP-SELECT ACCURACY 3 sex, age FROM people", UnsupportedQuery, "record release takes an ε"),
        ("DP-SELECT ACCURACY 1 COUNT(*) FROM people", BudgetExhausted, "this needs ε=2.99"),
        ("DP-SELECT ACCURACY 1 SUM(income) FROM people", InvalidParameter, "privdb's limit"),
    ],
)
def test_bad_requests_are_refused_and_spend_nothing(
    db: Path, sql: str, error: type[PrivdbError], message: str
) -> None:
    bob = privdb.connect(db, analyst="bob")  # a budget of 1
    before = bob.budget()["epsilon_remaining"]
    with pytest.raises(error, match=message):
        bob.sql(sql)
    assert bob.budget()["epsilon_remaining"] == before
