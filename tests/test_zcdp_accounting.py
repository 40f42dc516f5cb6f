"""Gaussian answers accounted together in zCDP (issue 16, tighter accounting): ``USING GAUSSIAN`` in
DP-SELECT, the charge rule of privdb.accounting.composition, the ledger that applies it in its check-and-spend
transaction, and the intervals of Gaussian answers (coverage at 95%, false failure ≤ 1e-6)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from conftest import ALPHA, seeded
from privdb.accounting.composition import GaussianCost, gaussian_charge
from privdb.accounting.ledger import Ledger
from privdb.accounting.zcdp import epsilon_from_rho, rho_from_epsilon
from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter, ParseError, UnsupportedQuery
from privdb.sql import engine


def _cost(epsilon: float, delta: float) -> GaussianCost:
    return GaussianCost(rho_from_epsilon(epsilon, delta), Fraction(delta), Fraction(epsilon))


def test_the_first_answer_costs_its_plain_epsilon_and_later_ones_less() -> None:
    cost, prior = _cost(1.0, 1e-6), []
    charges = []
    for _ in range(20):
        c = gaussian_charge(prior, cost)
        charges.append(c)
        prior.append((cost.rho, cost.delta, c))
    assert float(charges[0]) == pytest.approx(1.0, abs=1e-11)
    assert all(a >= b for a, b in itertools.pairwise(charges))  # each costs less than the last
    total = sum(charges)
    assert float(total) == pytest.approx(epsilon_from_rho(20 * cost.rho, 20e-6), abs=1e-9)
    assert total < 20 / 3  # plain composition would charge 20


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 5.0), st.sampled_from([1e-9, 1e-6, 1e-5, 1e-3])), min_size=1,
                max_size=30))  # fmt: skip
def test_charges_always_cover_the_zcdp_guarantee_and_never_exceed_plain(
    answers: list[tuple[float, float]],
) -> None:
    prior: list[tuple[float, Fraction, Fraction]] = []
    for epsilon, delta in answers:
        cost = _cost(epsilon, delta)
        c = gaussian_charge(prior, cost)
        assert 0 <= c <= cost.epsilon
        prior.append((cost.rho, cost.delta, c))
        rho, dlt = sum(p[0] for p in prior), sum(float(p[1]) for p in prior)
        # the invariant of the proof: what is charged covers the converted ε of every answer so far
        assert float(sum(p[2] for p in prior)) >= epsilon_from_rho(rho, dlt) - 1e-12


def test_the_ledger_charges_in_zcdp_and_a_release_leaves_the_sums(ledger_target: str) -> None:
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("eve", "db", epsilon=3, delta=1e-3)
        ledger.set_cap("table", "people", "db", epsilon=3, delta=1e-3)
        cost = _cost(1.0, 1e-6)
        first = ledger.reserve("eve", "db", epsilon=1, delta=1e-6, gaussian=cost, draws=[("table", "people")])
        first.commit()
        assert first.epsilon_plain == 1 and float(first.epsilon) == pytest.approx(1.0, abs=1e-11)
        # a plain budget of 3 admits 3 answers of ε = 1; in zCDP, many more
        answered = 1
        while True:
            try:
                ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=cost, draws=[("table", "people")])
            except BudgetExhausted:
                break
            answered += 1
        assert answered > 2 * 3  # 9 here: ε(9ρ, 9e-6) ≈ 2.9
        spent = ledger.budget("eve", "db").epsilon_spent
        assert float(spent) <= 3 and float(spent) >= epsilon_from_rho(answered * cost.rho, answered * 1e-6)
        ((_, cap),) = ledger.caps("db")
        assert cap.epsilon_spent == spent  # the table's cap drew the same charges
        # a Laplace answer is charged in full, and a released Gaussian reservation gives everything back
        before = ledger.budget("eve", "db").epsilon_spent
        held = ledger.reserve("eve", "db", epsilon=Fraction(1, 100), delta=0)
        held.release()
        assert ledger.budget("eve", "db").epsilon_spent == before


def _gaussian_until_refused(
    ledger: Ledger, analyst: str, cost: GaussianCost, draws: list[tuple[str, str]], limit: int = 400
) -> int:
    """Gaussian spends of ``cost`` drawing on ``draws`` until one is refused (at most ``limit``): how many."""
    for answered in range(limit):
        try:
            ledger.spend(analyst, "db", epsilon=cost.epsilon, delta=cost.delta, gaussian=cost, draws=draws)
        except BudgetExhausted:
            return answered
    return limit


def _drawn(ledger: Ledger, kind: str, name: str) -> Fraction:
    return next(b.epsilon_spent for k, b in ledger.caps("db") if (k, b.analyst) == (kind, name))


def test_a_table_cap_is_not_made_free_by_a_large_gaussian_answer_elsewhere(ledger_target: str) -> None:
    """The attack of issue 25: one ε = 50 Gaussian answer on another table made every later Gaussian answer
    nearly free at the analyst's zCDP marginal, and the table's cap of 1 was charged that marginal: 400
    answers on it were each charged 0 (together ε ≈ 25.7 at the cap's δ). The cap composes its own answers."""
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("eve", "db", epsilon=1_000, delta=1e-2)
        ledger.set_cap("table", "people", "db", epsilon=1, delta=1e-3)
        big = _cost(50.0, 1e-6)
        ledger.spend("eve", "db", epsilon=50, delta=1e-6, gaussian=big, draws=[("table", "other")])
        cost = _cost(0.2, 1e-6)
        first = ledger.spend("eve", "db", epsilon=cost.epsilon, delta=cost.delta, gaussian=cost,
                             draws=[("table", "people")])  # fmt: skip
        assert first.epsilon < Fraction(1, 1000)  # the analyst's own marginal stays as it was: tiny
        assert float(_drawn(ledger, "table", "people")) == pytest.approx(0.2, abs=1e-11)  # the cap: in full
        answered = 1 + _gaussian_until_refused(ledger, "eve", cost, [("table", "people")])
        drawn = _drawn(ledger, "table", "people")
        # the cap's charges cover the zCDP conversion of the answers on it, and stay within the cap
        assert epsilon_from_rho(answered * cost.rho, answered * 1e-6) <= float(drawn) <= 1
        assert 25 < answered < 35  # plain composition: 5; zCDP at the cap's own sums: 29; before: 400
        # a later Gaussian answer elsewhere draws nothing on the cap
        ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=_cost(1.0, 1e-6), draws=[("table", "x")])
        assert _drawn(ledger, "table", "people") == drawn


def test_a_group_joined_after_gaussian_answers_composes_its_own(ledger_target: str) -> None:
    """Answers before joining a group do not draw on it, so they must not discount what it is charged."""
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("eve", "db", epsilon=1_000, delta=1e-2)
        cost = _cost(1.0, 1e-6)
        for _ in range(20):  # before the group: the analyst's own marginal falls to ~0.1
            ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=cost, draws=[("table", "t")])
        ledger.set_cap("group", "team", "db", epsilon=2, delta=1e-3)
        ledger.set_group("eve", "db", "team")
        ledger.spend("eve", "db", epsilon=Fraction(1, 10), draws=[("group", "team")])  # Laplace, in full
        answered = _gaussian_until_refused(ledger, "eve", cost, [("table", "t"), ("group", "team")])
        drawn = _drawn(ledger, "group", "team")
        assert (
            Fraction(1, 10)
            + Fraction(math.ceil(epsilon_from_rho(answered * cost.rho, answered * 1e-6) * 1e12), 10**12)
            <= drawn
            <= 2
        )
        assert answered == 3  # ε(3ρ) ≈ 1.71 fits the 1.9 left, ε(4ρ) ≈ 1.97 does not


def test_the_ledger_made_before_zcdp_accounting_still_opens(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    Ledger(path).close()
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE spends2 AS SELECT id, analyst, database, epsilon, delta, rho, state, note, pid, "
        "created, settled FROM spends; DROP TABLE spends; ALTER TABLE spends2 RENAME TO spends;"
    )
    con.close()
    with Ledger(path) as ledger:
        ledger.set_budget("eve", "db", epsilon=2, delta=1e-3)
        ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=_cost(1.0, 1e-6))
        assert float(ledger.budget("eve", "db").epsilon_spent) == pytest.approx(1.0, abs=1e-11)


def test_a_ledger_whose_draws_have_no_charges_of_their_own_still_works(ledger_target: str) -> None:
    """A ledger made before draws recorded their own charges (both stores): the columns are added on
    opening, and an old draw counts what it drew then, its spend's ε and Gaussian charge."""
    cost = _cost(1.0, 1e-6)
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("eve", "db", epsilon=10, delta=1e-2)
        ledger.set_cap("table", "people", "db", epsilon=3, delta=1e-3, renew=86_400)
        ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=cost, draws=[("table", "people")])
    drop = "ALTER TABLE draws DROP COLUMN epsilon; ALTER TABLE draws DROP COLUMN gcharge"
    if ledger_target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(ledger_target, autocommit=True) as admin:
            admin.execute(drop)
    else:
        import sqlite3

        with sqlite3.connect(ledger_target) as old:
            old.executescript(drop)
    with Ledger(ledger_target) as ledger:
        # the cap composes the old draw (charged 1) with the new answer: the second answer's marginal
        second = ledger.spend("eve", "db", epsilon=1, delta=1e-6, gaussian=cost, draws=[("table", "people")])
        assert _drawn(ledger, "table", "people") == 1 + second.epsilon < Fraction(3, 2)
        assert float(_drawn(ledger, "table", "people")) >= epsilon_from_rho(2 * cost.rho, 2e-6)


def _database(path: Path) -> Database:
    rng = np.random.default_rng(5)
    n = 5_000
    frame = pd.DataFrame({"age": rng.integers(0, 100, n), "income": rng.uniform(0, 100_000, n).round(2),
                          "state": rng.choice(["AL", "AK", "AZ"], n)})  # fmt: skip
    db = Database(path)
    db.backend.load_frame("people", frame)
    db.set_metadata("people", {"columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 100_000},
        "state": {"type": "category", "values": ["AL", "AK", "AZ"]}}})  # fmt: skip
    db.grant("eve", epsilon=1_000, delta=1e-2)
    db.noise_source = seeded(16)
    return db


def test_using_gaussian_answers_say_what_plain_composition_would_charge(tmp_path: Path) -> None:
    with _database(tmp_path / "db") as db:
        first = engine.run(
            db, "eve", "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN COUNT(*), SUM(income) FROM people"
        )
        assert {a["mechanism"] for a in first.accuracy} == {"discrete_gaussian", "gaussian"}
        second = engine.run(db, "eve", "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN state, AVG(age) FROM people "
                                       "GROUP BY state")  # fmt: skip
        comp = second.to_dict()["composition"]
        assert comp["method"] == "zcdp" and comp["epsilon_plain"] == 1.0
        assert second.epsilon_spent == comp["epsilon_charged"] < 0.5
        assert float(db.budget("eve").epsilon_spent) == pytest.approx(
            first.epsilon_spent + second.epsilon_spent
        )
        laplace = engine.run(db, "eve", "DP-SELECT 1 COUNT(*) FROM people WHERE age > 3")
        assert laplace.epsilon_spent == 1.0 and "composition" not in laplace.to_dict()


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("DP-SELECT 1 USING GAUSSIAN COUNT(*) FROM people", InvalidParameter),
        ("DP-SELECT 1 DELTA 0 USING GAUSSIAN COUNT(*) FROM people", InvalidParameter),
        ("DP-SELECT 1 DELTA 1e-6 USING CAUCHY COUNT(*) FROM people", ParseError),
        ("DP-SELECT 1 DELTA 1e-6 USING COUNT(*) FROM people", ParseError),
    ],
)
def test_bad_using_clauses_are_refused_free(tmp_path: Path, query: str, error: type[Exception]) -> None:
    with _database(tmp_path / "db") as db:
        with pytest.raises(error, match="USING"):
            engine.run(db, "eve", query)
        assert db.budget("eve").epsilon_spent == 0


def test_gaussian_intervals_cover_at_95_percent(tmp_path: Path) -> None:
    runs, covered = 300, 0
    with _database(tmp_path / "db") as db:
        truth = db.owner_sql("SELECT COUNT(*) AS n, SUM(income) AS s FROM people WHERE age >= 0")
        n, s = float(truth["n"][0]), float(truth["s"][0])
        for i in range(runs):  # distinct texts: no stored answer is reused
            res = engine.run(db, "eve", f"DP-SELECT 0.5 DELTA 1e-6 USING GAUSSIAN COUNT(*), SUM(income) "
                                        f"FROM people WHERE age >= -{i}")  # fmt: skip
            (count_acc, sum_acc) = res.accuracy
            covered += count_acc["ci95"][0] <= n <= count_acc["ci95"][1]
            covered += sum_acc["ci95"][0] <= s <= sum_acc["ci95"][1]
    # each interval covers with probability ≥ 0.95; the two per run are independent
    assert covered >= binom.ppf(ALPHA, 2 * runs, 0.95), covered


def test_gaussian_noise_with_accuracy_first_is_refused_free_and_counts_work(tmp_path: Path) -> None:
    with _database(tmp_path / "db") as db:
        with pytest.raises(UnsupportedQuery, match="remove USING GAUSSIAN"):
            engine.run(db, "eve", "DP-SELECT ACCURACY 1 MAX 2 DELTA 1e-6 USING GAUSSIAN AVG(age) FROM people")
        assert db.budget("eve").epsilon_spent == 0
        query = "DP-SELECT ACCURACY 50 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM people"
        counted = engine.run(db, "eve", query)
        assert counted.accuracy[0]["mechanism"] == "discrete_gaussian"
        low, high = counted.accuracy[0]["ci95"]
        assert high - low <= 2 * 50 + 2  # ± 50, the integer interval rounded outward by one count a side
