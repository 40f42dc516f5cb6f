"""The budget ledger: exact arithmetic, refusal, reservations, durability, concurrency, crash safety; on
both stores (a SQLite file, and PostgreSQL in a throw-away cluster: tests/pgfixture.py)."""

from __future__ import annotations

import copy
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from privdb.accounting.ledger import Ledger
from privdb.errors import BudgetExhausted, InvalidParameter


@pytest.fixture
def ledger(ledger_target: str) -> Iterator[Ledger]:
    with Ledger(ledger_target) as opened:
        yield opened


def test_fifty_spends_of_a_tenth_fit_a_budget_of_five(ledger: Ledger) -> None:
    ledger.set_budget("alice", "db", epsilon=5)
    for _ in range(50):
        ledger.spend("alice", "db", epsilon=0.1)
    budget = ledger.budget("alice", "db")
    assert budget.epsilon_spent == 5 and budget.epsilon_remaining == 0
    with pytest.raises(BudgetExhausted):
        ledger.spend("alice", "db", epsilon=1e-12)


def test_refusal_names_what_is_left_and_spends_nothing(ledger: Ledger) -> None:
    ledger.set_budget("alice", "db", epsilon=1, delta=1e-6)
    ledger.spend("alice", "db", epsilon=0.7)
    with pytest.raises(BudgetExhausted, match=r"ε=0\.3") as err:
        ledger.spend("alice", "db", epsilon=0.5)
    assert err.value.code == "budget_exhausted"
    assert ledger.budget("alice", "db").epsilon_remaining == Fraction(3, 10)
    with pytest.raises(BudgetExhausted, match="δ"):
        ledger.spend("alice", "db", epsilon=0.1, delta=1e-5)
    with pytest.raises(BudgetExhausted, match="no budget"):
        ledger.spend("bob", "db", epsilon=0.1)


def test_composition_t_answers_cost_t_epsilon(ledger: Ledger) -> None:
    ledger.set_budget("alice", "db", epsilon=10)
    for _ in range(7):
        ledger.spend("alice", "db", epsilon=0.3)
    assert ledger.budget("alice", "db").epsilon_spent == Fraction(21, 10)


def test_reservation_release_and_commit(ledger: Ledger) -> None:
    ledger.set_budget("alice", "db", epsilon=1)
    refused_early = ledger.reserve("alice", "db", epsilon=0.6, note="parse error later")
    assert ledger.budget("alice", "db").epsilon_remaining == Fraction(2, 5)  # held while pending
    with pytest.raises(BudgetExhausted):
        ledger.reserve("alice", "db", epsilon=0.6)
    refused_early.release()
    assert ledger.budget("alice", "db").epsilon_remaining == 1
    answered = ledger.reserve("alice", "db", epsilon=0.6)
    answered.commit()
    answered.release()  # a committed spend stands
    assert ledger.budget("alice", "db").epsilon_remaining == Fraction(2, 5)
    states = [s.state for s in ledger.spends("alice", "db")]
    assert states == ["released", "committed"]


def test_a_spend_settles_once_whichever_handle_settles_it(ledger: Ledger) -> None:
    """The row itself guards the settle (``UPDATE … WHERE state = 'reserved'``): a second handle on a spend
    already settled (a stale copy, another process's) changes neither the log nor any budget."""
    ledger.set_budget("alice", "db", epsilon=2)
    ledger.set_cap("table", "people", "db", epsilon=3)
    held = ledger.reserve("alice", "db", epsilon=1, draws=[("table", "people")])
    stale = copy.copy(held)
    held.commit(epsilon=0.25)
    stale.release()  # would return all of it, were the row still reserved
    stale.commit(epsilon=0.5)
    assert ledger.budget("alice", "db").epsilon_spent == Fraction(1, 4)
    assert dict(ledger.caps("db"))["table"].epsilon_spent == Fraction(1, 4)
    (spend,) = ledger.spends("alice", "db")
    assert (spend.state, spend.epsilon) == ("committed", Fraction(1, 4))


def test_a_partial_commit_keeps_the_ex_post_part_and_returns_the_rest_everywhere(ledger: Ledger) -> None:
    """Accuracy first reserves MAX and commits the ex-post ε: the rest goes back to the analyst's budget and
    to every cap the spend drew on, in the same commit; more than the reservation is refused."""
    ledger.set_budget("alice", "db", epsilon=2, delta=1e-6)
    ledger.set_cap("table", "people", "db", epsilon=3, delta=1e-6)
    ledger.set_cap("group", "team", "db", epsilon=Fraction(3, 2), delta=1e-6)
    draws = [("table", "people"), ("group", "team")]
    held = ledger.reserve("alice", "db", epsilon=1.5, delta=1e-6, draws=draws)
    with pytest.raises(BudgetExhausted):  # MAX is held while the answer is being made
        ledger.reserve("alice", "db", epsilon=0.6, draws=draws)
    with pytest.raises(InvalidParameter, match="exceeds its reservation"):
        held.commit(epsilon=1.6)
    held.commit(epsilon=0.375, delta=0)
    held.commit(epsilon=0.1)  # settled already: nothing changes
    assert (held.state, held.epsilon, held.delta) == ("committed", Fraction(3, 8), 0)
    budget = ledger.budget("alice", "db")
    assert (budget.epsilon_spent, budget.delta_spent) == (Fraction(3, 8), 0)
    caps = dict(ledger.caps("db"))
    assert caps["table"].epsilon_spent == caps["group"].epsilon_spent == Fraction(3, 8)
    assert caps["table"].delta_spent == caps["group"].delta_spent == 0
    (spend,) = ledger.spends("alice", "db")
    assert (spend.state, spend.epsilon, spend.delta) == ("committed", Fraction(3, 8), 0)
    full = ledger.reserve("alice", "db", epsilon=0.5, draws=draws)
    full.commit()  # without amounts: all of it, as before
    assert ledger.budget("alice", "db").epsilon_spent == Fraction(7, 8)


def test_bad_amounts_and_budget_changes(ledger: Ledger) -> None:
    with pytest.raises(InvalidParameter):
        ledger.set_budget("alice", "db", epsilon=float("nan"))
    with pytest.raises(InvalidParameter):
        ledger.set_budget("alice", "db", epsilon=1, delta=1.5)
    ledger.set_budget("alice", "db", epsilon=1)
    with pytest.raises(InvalidParameter):
        ledger.spend("alice", "db", epsilon=-0.1)
    ledger.spend("alice", "db", epsilon=0.5)
    with pytest.raises(InvalidParameter, match="already spent"):
        ledger.set_budget("alice", "db", epsilon=0.4)
    ledger.set_budget("alice", "db", epsilon=2)  # a raise keeps what was spent
    assert ledger.budget("alice", "db").epsilon_remaining == Fraction(3, 2)


def test_spends_survive_reopening(ledger_target: str) -> None:
    with Ledger(ledger_target) as first:
        first.set_budget("alice", "db", epsilon=1)
        first.spend("alice", "db", epsilon=0.25)
    with Ledger(ledger_target) as second:
        assert second.budget("alice", "db").epsilon_remaining == Fraction(3, 4)
    if not ledger_target.startswith("postgresql://"):
        mode = sqlite3.connect(ledger_target).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def _spender(path: str, attempts: int, results: mp.Queue) -> None:  # type: ignore[type-arg]
    ok = 0
    with Ledger(path) as ledger:
        for _ in range(attempts):
            try:
                ledger.spend("alice", "db", epsilon=1)
                ok += 1
            except BudgetExhausted:
                pass
    results.put(ok)


@pytest.mark.slow
def test_parallel_processes_never_overspend(ledger_target: str) -> None:
    """8 processes × 100 spends against a budget for 300: exactly 300 succeed."""
    path = ledger_target
    with Ledger(path) as ledger:
        ledger.set_budget("alice", "db", epsilon=300)
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    workers = [ctx.Process(target=_spender, args=(path, 100, results)) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
        assert w.exitcode == 0
    succeeded = sum(results.get(timeout=10) for _ in workers)
    assert succeeded == 300
    with Ledger(path) as ledger:
        assert ledger.budget("alice", "db").epsilon_spent == 300
        assert len(ledger.spends("alice", "db")) == 300


_CRASHER = textwrap.dedent(
    """
    import sys
    from privdb.accounting.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        r = ledger.reserve("alice", "db", epsilon=0.001)
        if i % 3 == 0:
            r.release()
        elif i % 3 == 1:
            r.commit()
        i += 1
    """
)


@pytest.mark.slow
def test_kill_9_leaves_the_ledger_consistent(ledger_target: str) -> None:
    """A process killed at an arbitrary moment: the running total equals the log, and nothing is lost."""
    path = ledger_target
    with Ledger(path) as ledger:
        ledger.set_budget("alice", "db", epsilon=10_000)
    for delay in (0.2, 0.45, 0.7):
        proc = subprocess.Popen(
            [sys.executable, "-c", _CRASHER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with Ledger(path) as ledger:
            spends = ledger.spends("alice", "db")
            held = sum((s.epsilon for s in spends if s.state != "released"), Fraction(0))
            assert ledger.budget("alice", "db").epsilon_spent == held
            assert len(spends) > 0
        if not ledger_target.startswith("postgresql://"):
            check = sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0]
            assert check == "ok"


def test_a_re_grant_changes_only_what_it_gives(tmp_path: Path) -> None:
    """Issue 15: `privdb grant alice --tables people` reset alice's δ to 0. A re-grant keeps the ε or δ it
    leaves out; a new analyst needs ε (δ defaults to 0)."""
    from privdb.database import Database
    from privdb.errors import InvalidParameter

    db = Database(tmp_path / "db")
    db.grant("alice", epsilon=2.0, delta=1e-6)
    db.grant("alice", epsilon=3.0)
    budget = db.budget("alice")
    assert (float(budget.epsilon_total), float(budget.delta_total)) == (3.0, 1e-6)
    db.grant("alice", delta=1e-5)
    budget = db.budget("alice")
    assert (float(budget.epsilon_total), float(budget.delta_total)) == (3.0, 1e-5)
    with pytest.raises(InvalidParameter, match="needs an ε budget"):
        db.grant("bob")
    db.grant("bob", epsilon=1.0)
    assert float(db.budget("bob").delta_total) == 0.0
    db.close()
