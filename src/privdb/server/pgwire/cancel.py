"""Cancel requests (psql's Ctrl-C): a client's ``CancelRequest`` carries the backend key its session was
given at start-up; the session's running statement is then stopped as the server's time limit stops it,
and answers PostgreSQL's 57014 ``canceling statement due to user request``.

The key is a random process id and a random 4-byte secret per session (compared in constant time), so
one client cannot cancel another's statement without its key. Stopping works through the watchdog
(privdb.backends.watchdog): the deadlines of the engine reads the session's thread is running are brought
to now, so the statement ends exactly as if it had run past ``--query-timeout``: refused free if nothing
was read yet, else charged with the one ``query_failed`` outcome (docs/proofs/sql.md, Outcomes). A
catalog query of the session is interrupted too. Planning in Python and engines without the
watchdog (SQLite, PostgreSQL, Spark) are not interrupted: the request is then a no-op, as PostgreSQL
allows (a cancel is best effort), and the statement ends within the time limit.

What the client is then told: the request first marks the statement the session's thread is running
(privdb.server.pgwire.running), and a marked statement that fails reports 57014, whatever stopped it
(errors.QueryCanceled, its hint saying whether the cost was charged). Which failure it was is never told,
so the data cannot show through the SQLSTATE. A request that finds the session idle marks nothing.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from collections.abc import Callable

from privdb.backends.watchdog import WATCHDOG
from privdb.server.pgwire.running import mark

__all__ = ["Cancels"]


class Cancels:
    """The backend keys of a listener's sessions and, for each, how to stop what it is running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[int, tuple[bytes, int, Callable[[], None]]] = {}

    def register(self, also: Callable[[], None]) -> tuple[int, bytes]:
        """A new key for the session served by the calling thread (``also``: run on cancel as well)."""
        secret = os.urandom(4)
        with self._lock:
            while (pid := secrets.randbelow(0x7FFFFFFF) + 1) in self._sessions:
                continue
            self._sessions[pid] = (secret, threading.get_ident(), also)
        return pid, secret

    def forget(self, pid: int) -> None:
        with self._lock:
            self._sessions.pop(pid, None)

    def cancel(self, pid: int, secret: bytes) -> bool:
        """Stop the running statement of the session with this key; False if the key is not known."""
        with self._lock:
            found = self._sessions.get(pid)
        if found is None or not hmac.compare_digest(found[0], secret):
            return False
        mark(found[1])  # first: a failure the interrupt then causes always finds the mark
        WATCHDOG.now(found[1])
        found[2]()
        return True
