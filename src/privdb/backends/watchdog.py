"""One thread that stops engine queries at their deadlines, instead of a ``threading.Timer`` per query.

Starting a thread per query costs a thread's start-up (the starter waits until the new thread runs: on a
busy machine a scheduling delay) and its teardown; a server answering hundreds of queries a second paid
that on every one. Here every deadline is an :class:`Alarm` in one heap, watched by one daemon thread per
process (started on first use, and again in a forked child).

An alarm's action runs under the watchdog's lock, and :meth:`Alarm.cancel` takes that lock: once
``cancel`` returns, the action has either finished or will never run again, and ``cancel`` says whether it
ran. So an interrupt meant for one query cannot reach the next query of the same connection later on (a
``Timer.cancel`` does not wait for a callback already running). With ``repeat``, the action runs again at
that interval until the alarm is cancelled: an interrupt that lands just before the engine starts the
query (DuckDB forgets an interrupt of an idle connection) is followed by another, so the limit holds.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable

__all__ = ["WATCHDOG", "Alarm", "Watchdog"]


class Alarm:
    """A deadline and what to do at it (``Watchdog.arm``)."""

    __slots__ = ("_watchdog", "action", "active", "deadline", "fired", "repeat", "thread")

    def __init__(
        self, watchdog: Watchdog, deadline: float, action: Callable[[], object], repeat: float | None
    ) -> None:
        self._watchdog, self.deadline, self.action, self.repeat = watchdog, deadline, action, repeat
        self.active, self.fired = True, False
        self.thread = threading.get_ident()  # who armed it: :meth:`Watchdog.now` finds it by that

    def cancel(self) -> bool:
        """Disarm; True if the deadline came first (the action has then run, and is not running now)."""
        with self._watchdog._cond:
            self.active = False
            return self.fired


class Watchdog:
    """Runs each armed alarm's action at its deadline, in one thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()  # ties in deadline: first armed, first run
        self._thread: threading.Thread | None = None
        self._pid = 0

    def arm(self, timeout: float, action: Callable[[], object], repeat: float | None = None) -> Alarm:
        """Run ``action`` in ``timeout`` seconds unless the alarm is cancelled first (and, with ``repeat``,
        every ``repeat`` seconds after that until it is)."""
        alarm = Alarm(self, time.monotonic() + timeout, action, repeat)
        with self._cond:
            if self._thread is None or self._pid != os.getpid():  # none yet, or a fork left it behind
                self._heap.clear()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._watch, name="privdb-watchdog", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (alarm.deadline, next(self._order), alarm))
            if self._heap[0][2] is alarm:  # the earliest now: the thread waits for a later one
                self._cond.notify()
        return alarm

    def now(self, thread: int) -> int:
        """Bring the deadlines of the alarms ``thread`` armed and has not cancelled to now (a client's
        cancel request: its query stops as at its time limit, with the same outcome); how many there were."""
        with self._cond:
            alarms = [a for _, _, a in self._heap if a.active and a.thread == thread]
            if not alarms:
                return 0
            now = time.monotonic()
            for alarm in alarms:
                alarm.deadline = now
            self._heap = [(a.deadline, order, a) for _, order, a in self._heap]
            heapq.heapify(self._heap)
            self._cond.notify()
        return len(alarms)

    def pending(self) -> int:
        """Alarms not cancelled yet (cancelled ones leave the heap when they reach its top)."""
        with self._cond:
            return sum(1 for _, _, alarm in self._heap if alarm.active)

    def _watch(self) -> None:
        with self._cond:
            while True:
                while self._heap and not self._heap[0][2].active:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, alarm = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                alarm.fired = True
                if alarm.repeat is None:
                    alarm.active = False
                else:
                    alarm.deadline += alarm.repeat
                    heapq.heappush(self._heap, (alarm.deadline, next(self._order), alarm))
                try:
                    alarm.action()
                except Exception:  # one failed interrupt must not stop the others'
                    continue


WATCHDOG = Watchdog()  # the process's one watchdog
