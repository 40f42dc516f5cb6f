"""The one watchdog thread that stops engine queries at their deadlines (privdb.backends.watchdog)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from privdb.backends.duckdb import DuckDBBackend
from privdb.backends.watchdog import Watchdog


def test_an_alarm_runs_its_action_once_its_deadline_passes() -> None:
    watchdog = Watchdog()
    ran = threading.Event()
    alarm = watchdog.arm(0.01, ran.set)
    assert ran.wait(30)
    assert alarm.cancel() is True  # it fired: the caller learns it
    assert watchdog.pending() == 0


def test_a_cancelled_alarm_never_runs() -> None:
    watchdog = Watchdog()
    ran = threading.Event()
    alarm = watchdog.arm(3600, ran.set)
    assert watchdog.pending() == 1
    assert alarm.cancel() is False
    assert watchdog.pending() == 0
    late = threading.Event()
    watchdog.arm(0, late.set)  # the thread wakes, drops the cancelled one, runs this one
    assert late.wait(30) and not ran.is_set()


def test_each_alarm_runs_only_its_own_action_in_deadline_order() -> None:
    watchdog = Watchdog()
    seen: list[int] = []
    done = threading.Event()
    keep = [watchdog.arm(3600, lambda: seen.append(-1)) for _ in range(5)]
    for i in range(20):
        watchdog.arm(0.001 * i, lambda i=i: seen.append(i))
    watchdog.arm(0.05, done.set)
    assert done.wait(30)
    assert seen == list(range(20))
    assert not any(alarm.cancel() for alarm in keep)


def test_a_repeating_alarm_runs_until_cancelled_and_never_after() -> None:
    watchdog = Watchdog()
    runs: list[int] = []
    thrice = threading.Event()

    def action() -> None:
        runs.append(1)
        if len(runs) >= 3:
            thrice.set()

    alarm = watchdog.arm(0, action, repeat=0.001)
    assert thrice.wait(30)
    assert alarm.cancel() is True
    seen = len(runs)
    later = threading.Event()
    watchdog.arm(0.01, later.set)
    assert later.wait(30) and len(runs) == seen and watchdog.pending() == 0


def test_a_failing_action_does_not_stop_the_watchdog() -> None:
    watchdog = Watchdog()
    ran = threading.Event()

    def fail() -> None:
        raise RuntimeError("boom")

    watchdog.arm(0, fail)
    watchdog.arm(0.001, ran.set)
    assert ran.wait(30)


def test_a_stopped_query_leaves_the_next_query_of_its_cursor_alone(tmp_path: Path) -> None:
    """A query past its limit is interrupted (TimeoutError), even when the limit passes before the engine
    has started it (the interrupt is repeated); the same thread's next query on the same cursor runs to
    its end."""
    backend = DuckDBBackend(tmp_path / "d.duckdb")
    try:
        slow = "SELECT COUNT(*) AS n FROM range(4000000000) t(i) WHERE i % 7 = 3"
        with pytest.raises(TimeoutError):
            backend.fetch(slow, timeout=1e-6)
        for _ in range(20):
            frame = backend.fetch("SELECT COUNT(*) AS n FROM range(100000)", timeout=3600)
            assert int(frame["n"].iloc[0]) == 100000
    finally:
        backend.close()
