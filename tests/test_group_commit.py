"""Group commit (privdb.accounting.groupcommit): concurrent commits of one process share one synced
transaction, each still atomic on its own, and none is acknowledged before its transaction committed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from fractions import Fraction
from pathlib import Path

import pytest

from privdb.accounting.ledger import Ledger, Reservation
from privdb.accounting.sqlstore import Cursor


@pytest.fixture
def ledger(ledger_target: str) -> Iterator[Ledger]:
    with Ledger(ledger_target) as opened:
        opened.set_budget("alice", "db", epsilon=100)
        yield opened


def _count_durable(ledger: Ledger) -> list[int]:
    """Counts the ledger's durable write transactions (the synced ones: one fsync each on SQLite)."""
    store = ledger._store
    real = store.transaction
    count = [0]

    def counted(*, durable: bool = True) -> AbstractContextManager[Cursor]:
        count[0] += durable
        return real(durable=durable)

    store.transaction = counted  # type: ignore[method-assign]
    return count


def _batch(ledger: Ledger, thens: list[Callable[[Cursor], None]]) -> list[BaseException | None]:
    """Commits one reservation per ``then``: the first commit holds its transaction 0.5 s (its ``then``
    sleeps) while the others queue, so they are committed as one batch after it. Each commit's error."""
    reservations = [ledger.reserve("alice", "db", epsilon=1) for _ in thens]
    errors: list[BaseException | None] = [None] * len(thens)
    first_in = threading.Event()

    def hold(cur: Cursor) -> None:
        first_in.set()
        time.sleep(0.5)
        thens[0](cur)

    def commit(i: int, reservation: Reservation) -> None:
        try:
            reservation.commit(then=hold if i == 0 else thens[i])
        except Exception as err:
            errors[i] = err

    threads = [threading.Thread(target=commit, args=(0, reservations[0]))]
    threads[0].start()
    first_in.wait(10)
    threads += [threading.Thread(target=commit, args=(i, r)) for i, r in enumerate(reservations) if i]
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_concurrent_commits_share_one_synced_transaction(ledger: Ledger) -> None:
    count = _count_durable(ledger)
    errors = _batch(ledger, [lambda cur: None] * 8)
    assert errors == [None] * 8
    assert count[0] == 2  # the first alone, then the seven that queued behind it together
    spends = ledger.spends("alice", "db")
    assert [s.state for s in spends] == ["committed"] * 8
    assert ledger.budget("alice", "db").epsilon_spent == 8


def test_a_job_that_fails_in_a_batch_fails_alone(ledger: Ledger) -> None:
    """Its savepoint is rolled back: its spend stays reserved (still counted), the others commit."""

    def broken(cur: Cursor) -> None:
        cur.execute("UPDATE budgets SET epsilon_spent = '0/1'")  # undone with the job
        raise RuntimeError("storing the answer failed")

    errors = _batch(ledger, [lambda cur: None, lambda cur: None, broken, lambda cur: None])
    assert [type(e).__name__ if e else None for e in errors] == [None, None, "RuntimeError", None]
    assert [s.state for s in ledger.spends("alice", "db")] == ["committed"] * 2 + ["reserved", "committed"]
    assert ledger.budget("alice", "db").epsilon_spent == 4  # the reserved one stays counted


def test_concurrent_reservations_never_overspend(ledger: Ledger) -> None:
    """Reservations share transactions too; each checks what the ones before it in the batch took."""
    ledger.set_budget("bob", "db", epsilon=Fraction(5))
    outcomes: list[str] = []

    def ask() -> None:
        for _ in range(10):
            try:
                ledger.reserve("bob", "db", epsilon=Fraction(1, 10)).commit()
                outcomes.append("ok")
            except Exception as err:
                outcomes.append(type(err).__name__)

    threads = [threading.Thread(target=ask) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("ok") == 50 and outcomes.count("BudgetExhausted") == 50
    assert ledger.budget("bob", "db").epsilon_spent == 5


_COMMITTER = textwrap.dedent(
    """
    import sys, threading
    from privdb.accounting.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    out = threading.Lock()
    def work():
        while True:
            r = ledger.reserve("alice", "db", epsilon=0.001)
            r.commit()
            with out:  # acknowledged: the commit returned
                sys.stdout.write(f"{r.id}\\n")
                sys.stdout.flush()
    for _ in range(8):
        threading.Thread(target=work, daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.slow
def test_kill_9_right_after_acknowledged_commits_loses_none(tmp_path: Path) -> None:
    """Eight threads commit spends and print each id once its commit returned; ``kill -9`` right after
    the 300th: every printed spend is committed in the ledger (a commit is acknowledged only after the
    transaction of its batch committed)."""
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("alice", "db", epsilon=10_000)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", _COMMITTER, str(path)],
            stdout=subprocess.PIPE,
            text=True,
            env=os.environ | {"PYTHONUNBUFFERED": "1"},
        )
        assert proc.stdout is not None
        acknowledged = [int(proc.stdout.readline()) for _ in range(300)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with Ledger(path) as ledger:
            states = {s.id: s.state for s in ledger.spends("alice", "db")}
        assert all(states.get(i) == "committed" for i in acknowledged)
