"""Time limits for work done in Python before a query reads data: its planning and its calibrations.

The engine's reads are interrupted by the watchdog (privdb.backends.watchdog); Python code cannot be
interrupted from outside, so every loop that calibrates a mechanism or searches for a parameter calls
:func:`check` on each round. Each such loop has a bounded number of rounds anyway (docs/proofs/gaussian.md,
"Every search ends"); the check adds two promises on top:

* **the query's time limit covers its planning.** :func:`limit` sets a deadline for the calling thread
  (``Database.query_timeout``, the server's ``--query-timeout``); a round past it raises
  :class:`PlanningTimeout`, a free refusal, before anything is read;
* **a stopping server stops planning.** :func:`stop` (called from the server's SIGTERM handler) makes every
  later check raise :class:`ShuttingDown`, also free, so a worker's graceful shutdown is not held up.

Without a deadline set (the library, the CLI), :func:`check` costs one context-variable read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar

from privdb.errors import EngineUnavailable, UnsupportedQuery

__all__ = ["PlanningTimeout", "ShuttingDown", "check", "limit", "remaining", "stop", "stopping"]

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("privdb_deadline", default=None)
_STOPPING = threading.Event()


class PlanningTimeout(UnsupportedQuery):
    """Planning ran past the query's time limit: refused before any read, nothing spent."""


class ShuttingDown(EngineUnavailable):
    """The server is stopping: the query was refused before any read, nothing spent; ask again later."""


@contextlib.contextmanager
def limit(seconds: float | None) -> Iterator[None]:
    """Run the block under a deadline ``seconds`` from now (None: no deadline; an outer one still holds)."""
    if seconds is None:
        yield
        return
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set((end, seconds) if outer is None or end < outer[0] else outer)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (None without one); the engine's reads get what planning left."""
    current = _DEADLINE.get()
    return None if current is None else current[0] - time.monotonic()


def check() -> None:
    """Raise if the server is stopping or the calling thread's deadline has passed; otherwise nothing."""
    if _STOPPING.is_set():
        raise ShuttingDown(
            "the server is shutting down; the query was stopped before reading any data and nothing was "
            "spent: ask again once it is back"
        )
    current = _DEADLINE.get()
    if current is not None and time.monotonic() > current[0]:
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
