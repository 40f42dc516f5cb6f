"""The statement each session thread is running, so that a cancel request can mark it (cancel.py) and the
statement's failure be told as PostgreSQL's 57014 (errors.QueryCanceled).

Found by the thread that runs it, as the watchdog finds a session's engine reads (privdb.backends.watchdog):
a session is served by one thread, and a request arriving while that thread runs nothing marks nothing.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["Statement", "mark", "running"]


class Statement:
    """A statement a session's thread is running; ``cancelled`` once a cancel request reached it."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


_RUNNING: dict[int, Statement] = {}  # thread → the statement it runs
_LOCK = threading.Lock()


@contextlib.contextmanager
def running() -> Iterator[Statement]:
    """The calling thread runs a statement until the block ends; a cancel request meanwhile marks it."""
    statement, thread = Statement(), threading.get_ident()
    with _LOCK:
        _RUNNING[thread] = statement
    try:
        yield statement
    finally:
        with _LOCK:
            _RUNNING.pop(thread, None)


def mark(thread: int) -> bool:
    """Mark the statement ``thread`` runs as cancelled; False if it runs none."""
    with _LOCK:
        statement = _RUNNING.get(thread)
        if statement is not None:
            statement.cancelled = True
    return statement is not None
