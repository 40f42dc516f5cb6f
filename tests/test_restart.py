"""Issue 37: reservations of a process that died are settled when the ledger is opened again — charged if
the query had begun to read, released if it had not — on both stores; only a process known dead is settled
(privdb.accounting.owners), and the log says how each ended."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from privdb.accounting.composition import GaussianCost
from privdb.accounting.ledger import Ledger
from privdb.accounting.owners import is_dead, this_process
from privdb.accounting.restart import notice
from privdb.accounting.sqlstore import open_store
from privdb.catalog.querylog import LogFilter
from privdb.catalog.store import Catalog

# reserves as a query does (before its read), marks some as reading, prints their ids, then waits to be killed
_HOLDER = textwrap.dedent(
    """
    import sys, time
    from privdb.accounting.ledger import Ledger
    ledger = Ledger(sys.argv[1])
    unread = ledger.reserve("alice", "db", epsilon=0.5, note="unread", before_read=True)
    reading = ledger.reserve("alice", "db", epsilon=0.25, note="reading", before_read=True)
    reading.reading()
    plain = ledger.reserve("alice", "db", epsilon=0.125, note="plain", draws=[("table", "people")])
    print(unread.id, reading.id, plain.id, flush=True)
    time.sleep(600)
    """
)


def _hold(target: str) -> tuple[subprocess.Popen[str], list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, target], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, [int(x) for x in proc.stdout.readline().split()]


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _log(target: str) -> dict[str, tuple[str, float, str | None]]:
    catalog = Catalog(target)
    try:
        rows = catalog.log("db", LogFilter())
    finally:
        catalog.close()
    return {r.query: (r.outcome, float(Fraction(r.epsilon)), r.code) for r in rows}


def test_a_dead_process_s_unread_reservation_is_released_and_a_read_one_charged(ledger_target: str) -> None:
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("alice", "db", epsilon=10)
        ledger.set_cap("table", "people", "db", epsilon=10)
    proc, (unread, reading, plain) = _hold(ledger_target)
    with Ledger(ledger_target) as alive:  # its process is alive: nothing is settled, all of it counts
        assert alive.orphans == []
        assert alive.budget("alice", "db").epsilon_spent == Fraction(7, 8)
    _kill(proc)
    with Ledger(ledger_target) as ledger:
        outcomes = {o.id: o.outcome for o in ledger.orphans}
        assert outcomes == {unread: "unread", reading: "read", plain: "read"}
        # the released one costs nothing; the one that reached its read, and the publication-like plain
        # reservation (read from the start), are charged, to the analyst and to the table's cap alike
        assert ledger.budget("alice", "db").epsilon_spent == Fraction(3, 8)
        assert {k: c.epsilon_spent for k, c in ledger.caps("db")} == {"table": Fraction(1, 8)}
        states = {s.id: (s.state, s.ended) for s in ledger.spends("alice", "db")}
        assert states == {
            unread: ("released", "unread"),
            reading: ("committed", "read"),
            plain: ("committed", "read"),
        }
        assert "3 reservations" in notice(ledger.orphans) and "2 charged (ε 0.375" in notice(ledger.orphans)
    with Ledger(ledger_target) as again:  # settled once
        assert again.orphans == [] and again.budget("alice", "db").epsilon_spent == Fraction(3, 8)
    assert _log(ledger_target) == {
        "unread": ("interrupted", 0.0, None),
        "reading": ("interrupted", 0.25, "query_failed"),
        "plain": ("interrupted", 0.125, "query_failed"),
    }


def test_an_unread_gaussian_reservation_a_later_answer_was_priced_with_is_kept(tmp_path: Path) -> None:
    target = str(tmp_path / "ledger.sqlite")
    with Ledger(target) as ledger:
        ledger.set_budget("alice", "db", epsilon=10, delta=1e-3)
    script = textwrap.dedent(
        """
        import sys, time
        from fractions import Fraction
        from privdb.accounting.composition import GaussianCost
        from privdb.accounting.ledger import Ledger
        ledger = Ledger(sys.argv[1])
        g = GaussianCost(rho=0.05, delta=Fraction(1, 10**5), epsilon=Fraction(1))
        first = ledger.reserve("alice", "db", epsilon=1, delta=1e-5, gaussian=g, before_read=True)
        print(first.id, flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script, target], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = int(proc.stdout.readline())
    with Ledger(target) as ledger:  # a later Gaussian answer, charged with the first in its zCDP sum
        gaussian = GaussianCost(rho=0.05, delta=Fraction(1, 10**5), epsilon=Fraction(1))
        ledger.spend("alice", "db", epsilon=1, delta=1e-5, gaussian=gaussian)
        spent = ledger.budget("alice", "db").epsilon_spent
    _kill(proc)
    with Ledger(target) as ledger:
        assert [(o.id, o.outcome) for o in ledger.orphans] == [(first, "kept")]
        assert ledger.budget("alice", "db").epsilon_spent == spent  # returned, the later charge falls short


def _reserve_as(target: str, owner: str | None, pid: int) -> int:
    """A reservation whose row names another process (as a server on another host, a container, a
    rebooted machine, or a ledger from before owners were recorded would have left it)."""
    with Ledger(target) as ledger:
        ledger.set_budget("alice", "db", epsilon=10)
        held = ledger.reserve("alice", "db", epsilon=1, before_read=True)
    con = sqlite3.connect(target)
    with con:
        con.execute("UPDATE spends SET owner = ?, pid = ? WHERE id = ?", (owner, pid, held.id))
    con.close()
    return held.id


def _gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize(
    ("who", "settled"),
    [
        ("rebooted", True),  # a SQLite file's writers all run on one host: an earlier boot's are dead
        ("container", False),  # another pid namespace of this boot: not ours to look at
        ("unknown", False),  # a row from before owners were recorded
        ("reused", True),  # its pid now belongs to a process that started at another time
    ],
)
def test_only_a_process_known_dead_is_settled(tmp_path: Path, who: str, settled: bool) -> None:
    mine = this_process()
    assert mine is not None
    _, boot, namespace, start = mine.split(":")
    owner, pid = {
        "rebooted": (f"linux:another-boot:{namespace}:{start}", os.getpid()),
        "container": (f"linux:{boot}:1:{start}", _gone_pid()),
        "unknown": (None, _gone_pid()),
        "reused": (f"linux:{boot}:{namespace}:{int(start) + 1}", os.getpid()),
    }[who]
    target = str(tmp_path / "ledger.sqlite")
    spend = _reserve_as(target, owner, pid)
    with Ledger(target) as ledger:
        assert [o.id for o in ledger.orphans] == ([spend] if settled else [])
        assert ledger.budget("alice", "db").epsilon_spent == (0 if settled else 1)


def test_another_boot_is_this_host_rebooted_on_sqlite_and_maybe_another_host_on_postgresql(
    ledger_target: str,
) -> None:
    """A SQLite file is written by one host's processes only (WAL), so an earlier boot's are dead; a
    PostgreSQL ledger is shared by hosts, and another boot id may be a live server elsewhere."""
    mine = this_process()
    assert mine is not None
    other = mine.replace(mine.split(":")[1], "another-boot")
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("alice", "db", epsilon=10)
        held = ledger.reserve("alice", "db", epsilon=1, before_read=True)
    store = open_store(ledger_target)
    try:
        store.execute("UPDATE spends SET owner = ? WHERE id = ?", (other, held.id))
    finally:
        store.close()
    on_sqlite = not ledger_target.startswith("postgresql://")
    with Ledger(ledger_target) as ledger:
        assert [o.id for o in ledger.orphans] == ([held.id] if on_sqlite else [])
    assert not is_dead(mine, os.getpid(), one_host=True)  # this very process
