"""A seam for the crash tests: with ``PRIVDB_CRASH_AT=<point>`` in its environment, a privdb process kills
itself with SIGKILL — as ``kill -9`` would, nothing flushed or cleaned — when it reaches that named step of a
load. Without the variable (always, outside the tests) :func:`crash_point` does nothing.

tests/test_load_crash.py sets it on a real ``privdb serve`` or ``privdb load`` to stop every load path at each
of its steps, then restarts the server and lists and queries as an analyst; docs/security.md lists the
points. A kill is all it can cause, and only in a process whose environment the owner set.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "POINTS", "crash_point"]

ENV = "PRIVDB_CRASH_AT"
POINTS = (
    "upload-written",  # the server wrote the request's CSV to DIR/uploads/, before reading it
    "staged",  # the file is registered as the reader's temporary view, before the transaction
    "table-written",  # inside the load's transaction: the new table written, not committed
    "committed",  # the data file committed the table (marked as an unfinished load), before the catalog
    "metadata-written",  # the catalog holds the metadata (and budgets), before the mark is lifted
    "attach-writing",  # inside the catalog's transaction of an attach, between its two writes
)


def crash_point(name: str) -> None:
    """Die here (SIGKILL) if the environment names this point."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
