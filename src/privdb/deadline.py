"""Time limits for work done in Python before a query reads data: its planning and its calibrations.

The engine's reads are interrupted by the watchdog (privdb.backends.watchdog); Python code cannot be
interrupted from outside, so every loop that calibrates a mechanism or searches for a parameter calls
:func:`check` on each round. Each such loop has a bounded number of rounds anyway (docs/proofs/gaussian.md,
"Every search ends"); the check adds two promises on top:

* **the query's time limit covers its planning.** :func:`limit` sets a deadline for the calling thread
  (``Database.query_timeout``, the server's ``--query-timeout``); a round past it raises
  :class:`PlanningTimeout`, a free refusal, before anything is read;
* **a stopping server stops planning.** :func:`stop` (called on SIGTERM, :func:`stop_on_term`) makes every
  later check raise :class:`ShuttingDown`, also free, so a worker's graceful shutdown is not held up.

Outside a :func:`limit` block (the noise step, mechanisms used directly), :func:`check` does nothing
beyond one context-variable read: a calibration there is bounded by its round counts alone.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from types import FrameType

from privdb.errors import EngineUnavailable, UnsupportedQuery

__all__ = ["PlanningTimeout", "ShuttingDown", "check", "limit", "stop", "stop_on_term", "stopping"]

_DEADLINE: ContextVar[tuple[float, float | None] | None] = ContextVar("privdb_deadline", default=None)
_STOPPING = threading.Event()


class PlanningTimeout(UnsupportedQuery):
    """Planning ran past the query's time limit: refused before any read, nothing spent."""


class ShuttingDown(EngineUnavailable):
    """The server is stopping: the query was refused before any read, nothing spent; ask again later."""


@contextlib.contextmanager
def limit(seconds: float | None) -> Iterator[None]:
    """Run the block as planning, under a deadline ``seconds`` from now (None: no deadline, but a stopping
    server still stops it; an outer, earlier deadline still holds). Outside such a block :func:`check`
    does nothing: the noise step after a read must finish, whatever happens."""
    end = math.inf if seconds is None else time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set((end, seconds) if outer is None or end < outer[0] else outer)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    """Inside :func:`limit`, raise if the server is stopping or the deadline has passed; else nothing."""
    current = _DEADLINE.get()
    if current is None:
        return
    if _STOPPING.is_set():
        raise ShuttingDown(
            "the server is shutting down; the query was stopped before reading any data and nothing was "
            "spent: ask again once it is back"
        )
    if time.monotonic() > current[0]:
        assert current[1] is not None
        raise PlanningTimeout(
            f"planning the query took longer than this server's limit of {current[1]:g} s; it was stopped "
            "before reading any data and nothing was spent. Simplify the query (fewer aggregates or "
            "groups, an ε instead of ACCURACY) or ask the owner to raise --query-timeout"
        )


def stop() -> None:
    """From now on every :func:`check` in this process raises :class:`ShuttingDown`."""
    _STOPPING.set()


def stopping() -> bool:
    return _STOPPING.is_set()


def stop_on_term() -> None:
    """Make SIGTERM call :func:`stop` before the handler already installed (uvicorn's graceful shutdown,
    which waits for the requests in flight: their planning now ends at its next check). From the main
    thread only (elsewhere signals cannot be handled); a no-op in other threads."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: FrameType | None) -> None:
        stop()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:  # the default action: end the process as it would have
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    signal.signal(signal.SIGTERM, handler)
