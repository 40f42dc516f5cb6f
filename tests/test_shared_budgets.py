"""Table lifetime budgets and budget groups (issue 16, collusion): every answer draws on the analyst's budget,
each table's it reads and the analyst's group's, atomically; refusals and releases leave all of them as they
were; processes racing for a cap never overspend it."""

from __future__ import annotations

import multiprocessing
import random
import re
import time
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

import privdb
from privdb.accounting.composition import GaussianCost
from privdb.accounting.ledger import Ledger, Reservation
from privdb.accounting.zcdp import epsilon_from_rho, rho_from_epsilon
from privdb.cli import app
from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter

runner = CliRunner()


def _cap(ledger: Ledger, kind: str, name: str) -> Fraction:
    return next(b.epsilon_spent for k, b in ledger.caps("d") if k == kind and b.analyst == name)


def test_a_spend_draws_on_every_cap_and_a_release_returns_it(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.set_budget("a", "d", epsilon=5)
        ledger.set_cap("table", "people", "d", epsilon=1)
        ledger.set_cap("group", "team", "d", epsilon=2)
        draws = [("table", "people"), ("table", "uncapped"), ("group", "team")]
        kept = ledger.reserve("a", "d", epsilon=Fraction(3, 10), draws=draws)
        kept.commit()
        dropped = ledger.reserve("a", "d", epsilon=Fraction(1, 2), draws=draws)
        assert _cap(ledger, "table", "people") == Fraction(4, 5)
        dropped.release()  # refused before reading data: everything returns
        assert _cap(ledger, "table", "people") == Fraction(3, 10)
        assert _cap(ledger, "group", "team") == Fraction(3, 10)
        assert ledger.budget("a", "d").epsilon_spent == Fraction(3, 10)
        with pytest.raises(BudgetExhausted, match=r"table 'people' has too little left .* query's ε=0\.8"):
            ledger.reserve("a", "d", epsilon=Fraction(8, 10), draws=draws)
        # the refused spend changed nothing anywhere
        assert ledger.budget("a", "d").epsilon_spent == Fraction(3, 10)
        assert _cap(ledger, "group", "team") == Fraction(3, 10)
        with pytest.raises(InvalidParameter, match="already drawn"):
            ledger.set_cap("table", "people", "d", epsilon=Fraction(1, 10))


def _race(args: tuple[str, int]) -> int:
    path, analyst = args
    answered = 0
    with Ledger(path) as ledger:
        for _ in range(40):
            try:
                ledger.spend(f"a{analyst}", "d", epsilon=Fraction(1, 10), draws=[("table", "people")])
                answered += 1
            except BudgetExhausted:
                pass
    return answered


def test_processes_racing_for_a_table_cap_never_overspend(tmp_path: Path) -> None:
    """4 processes × 40 spends of 0.1 (each analyst could pay all 40) against a table cap of 5: exactly 50."""
    path = str(tmp_path / "l.sqlite")
    with Ledger(path) as ledger:
        for i in range(4):
            ledger.set_budget(f"a{i}", "d", epsilon=10)
        ledger.set_cap("table", "people", "d", epsilon=5)
    # spawned, not forked: a forked child of a multithreaded process (JAX, loaded by other tests in the same
    # worker) can deadlock
    with ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("spawn")) as pool:
        answered = sum(pool.map(_race, [(path, i) for i in range(4)]))
    with Ledger(path) as ledger:
        assert answered == 50 and _cap(ledger, "table", "people") == 5
        assert sum(ledger.budget(f"a{i}", "d").epsilon_spent for i in range(4)) == 5


@pytest.fixture
def db(tmp_path: Path) -> Path:
    with Database(tmp_path / "db") as database:
        database.backend.load_frame("people", generate(500, seed=5))
        database.set_metadata("people", METADATA)
        database.set_shared_budget(table="people", epsilon=1.0)
        database.set_shared_budget(group="team", epsilon=0.5)
        database.grant("alice", epsilon=5, group="team")
        database.grant("bob", epsilon=5, group="team")
        database.grant("carol", epsilon=5)
    return tmp_path / "db"


def test_analysts_who_pool_their_answers_learn_no_more_than_the_table_cap(db: Path) -> None:
    carol = privdb.connect(db, analyst="carol")
    alice = privdb.connect(db, analyst="alice")
    alice.sql("DP-SELECT 0.3 COUNT(*) FROM people")
    carol.sql("DP-SELECT 0.6 COUNT(*) FROM people WHERE age > 30")
    with pytest.raises(BudgetExhausted, match=r"table 'people' has too little left"):
        carol.sql("DP-SELECT 0.2 COUNT(*) FROM people WHERE age > 40")
    assert carol.budget()["epsilon_remaining"] == pytest.approx(4.4)  # the refusal spent nothing
    again = alice.sql("DP-SELECT 0.3 COUNT(*) FROM people")  # a stored answer is free and draws nothing
    assert again.cached and again.epsilon_spent == 0


def test_a_group_shares_one_budget(db: Path) -> None:
    privdb.connect(db, analyst="alice").sql("DP-SELECT 0.3 COUNT(*) FROM people")
    with pytest.raises(BudgetExhausted, match=r"group 'team' has too little left"):
        privdb.connect(db, analyst="bob").sql("DP-SELECT 0.3 AVG(age) FROM people")
    privdb.connect(db, analyst="carol").sql("DP-SELECT 0.3 AVG(age) FROM people")  # not in the group
    with privdb.connect(db) as owner:
        shared = {(b["kind"], b["name"]): b for b in owner.shared_budgets()}
    assert shared[("group", "team")]["members"] == ["alice", "bob"]
    assert shared[("group", "team")]["epsilon_spent"] == pytest.approx(0.3)
    assert shared[("table", "people")]["epsilon_spent"] == pytest.approx(0.6)


def test_a_query_refused_before_reading_draws_nothing(db: Path) -> None:
    alice = privdb.connect(db, analyst="alice")
    with pytest.raises(privdb.errors.PrivdbError):
        alice.sql("DP-SELECT 0.3 COUNT(*) FROM people WHERE nosuch > 1")
    with privdb.connect(db) as owner:
        assert all(b["epsilon_spent"] == 0 for b in owner.shared_budgets())


def test_the_cli_sets_and_shows_shared_budgets(db: Path) -> None:
    shown = runner.invoke(app, ["budgets", "--db", str(db), "--group", "team", "--epsilon", "0.8"])
    assert shown.exit_code == 0, shown.stderr
    assert "team" in shown.stdout and "alice, bob" in shown.stdout
    bad = runner.invoke(app, ["grant", "--db", str(db), "dave", "--epsilon", "1", "--group", "nope"])
    assert bad.exit_code == 2 and "no budget group 'nope'" in bad.stderr
    missing = runner.invoke(app, ["budgets", "--db", str(db), "--table", "nosuch", "--epsilon", "1"])
    assert missing.exit_code == 2 and "nosuch" in missing.stderr
    lonely = runner.invoke(app, ["budgets", "--db", str(db), "--epsilon", "1"])
    assert lonely.exit_code == 2 and "--table T or --group G" in lonely.stderr


def test_the_metadata_file_declares_shared_budgets(tmp_path: Path) -> None:
    meta = tmp_path / "m.yaml"
    meta.write_text(
        "budgets:\n  tables: {people: {epsilon: 2, delta: 1.0e-6}, other: {epsilon: 9}}\n"
        "  groups: {team_a: {epsilon: 0.5}}\n"
        "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
    )
    with Database(tmp_path / "db") as database:
        database.load("people", Path(__file__).resolve().parents[1] / "examples" / "people.csv", meta)
        shared = {(b["kind"], b["name"]): b for b in database.shared_budgets()}
    assert set(shared) == {("table", "people"), ("group", "team_a")}  # 'other' waits for its own load
    assert shared[("table", "people")]["delta_total"] == pytest.approx(1e-6)
    meta.write_text("budgets: {groups: {team_a: {eps: 1}}}\ntables: {people: {columns: {}}}\n")
    with (
        pytest.raises(InvalidParameter, match=re.escape("must be {epsilon: E}")),
        Database(tmp_path / "db2") as database,
    ):
        database.load("people", Path(__file__).resolve().parents[1] / "examples" / "people.csv", meta)


def test_every_shared_budget_covers_the_zcdp_conversion_of_its_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seeded run of 300 steps by three analysts — Gaussian and Laplace answers, reservations held and
    then committed (Laplace: partly, as accuracy first does) or released, a renewing cap's windows passing —
    after each of which every cap has drawn at least what its live answers cost together, in its current
    window: their plain ε for the Laplace ones plus ε(Σρ, δ) for the Gaussian ones at the δ the cap has
    drawn (at least their Σδ), and at most its total."""
    now = [1_800_000_000.0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    rng = random.Random(25)
    caps = {("table", "people"): (5, None), ("table", "visits"): (3, 86_400.0), ("group", "team"): (4, None)}
    held: list[tuple[Reservation, list[tuple[str, str]], GaussianCost | None]] = []
    live: list[tuple[Reservation, list[tuple[str, str]], GaussianCost | None]] = []
    with Ledger(tmp_path / "l.sqlite") as ledger:
        for (kind, name), (total, renew) in caps.items():
            ledger.set_cap(kind, name, "d", epsilon=total, delta=Fraction(1, 100), renew=renew)
        for analyst in ("a0", "a1", "a2"):
            ledger.set_budget(analyst, "d", epsilon=1_000, delta=Fraction(1, 2))
        ledger.set_group("a0", "d", "team")
        ledger.set_group("a1", "d", "team")
        for _ in range(300):
            action = rng.random()
            if action < 0.05:
                now[0] += 43_200.0  # half a day: the renewing cap's window passes every other time
            elif action < 0.2 and held:
                reservation, draws, cost = held.pop(rng.randrange(len(held)))
                if rng.random() < 0.5:
                    reservation.release()
                else:
                    partly = cost is None and rng.random() < 0.5
                    reservation.commit(epsilon=reservation.epsilon / 2 if partly else None)
                    live.append((reservation, draws, cost))
            else:
                analyst = rng.choice(["a0", "a1", "a2"])
                draws = [("table", t) for t in rng.sample(["people", "visits", "other"], rng.randint(1, 2))]
                draws += [("group", "team")] if analyst != "a2" else []
                eps = Fraction(rng.choice([1, 2, 5, 10, 30]), 10)
                cost = None
                if rng.random() < 0.7:
                    dlt = Fraction(1, rng.choice([10**6, 10**7]))
                    cost = GaussianCost(rho_from_epsilon(float(eps), float(dlt)), dlt, eps)
                try:
                    reservation = ledger.reserve(analyst, "d", epsilon=eps, delta=cost.delta if cost else 0,
                                                 gaussian=cost, draws=draws)  # fmt: skip
                except BudgetExhausted:
                    continue
                if rng.random() < 0.3:
                    held.append((reservation, draws, cost))
                else:
                    reservation.commit()
                    live.append((reservation, draws, cost))
            windows = ledger.renewals("d")
            for kind, budget in ledger.caps("d"):
                since = windows.get((kind, budget.analyst), (0.0, 0.0))[1]
                on = [(r, c) for r, d, c in live + held if (kind, budget.analyst) in d and r.created >= since]
                plain = sum((r.epsilon for r, c in on if c is None), Fraction(0))
                rho = sum(c.rho for _, c in on if c is not None)
                dlt = sum((c.delta for _, c in on if c is not None), Fraction(0))
                # the Laplace answers here have δ = 0: the cap's δ is its Gaussian answers' (a release whose
                # Gaussian part stands keeps its δ there), at which their ρ converts
                assert dlt <= budget.delta_spent <= budget.delta_total
                converted = epsilon_from_rho(rho, float(budget.delta_spent)) if rho else 0.0
                assert float(plain) + converted <= float(budget.epsilon_spent) + 1e-12
                assert budget.epsilon_spent <= budget.epsilon_total
        assert len(live) > 60 and sum(c is not None for _, _, c in live) > 30  # the run did exercise it
