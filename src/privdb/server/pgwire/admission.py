"""Who may hold a connection to the PostgreSQL listener, and for how long: PostgreSQL's own limits.

* ``max_connections`` (``--pg-max-connections``, default 100 as PostgreSQL's): authenticated sessions. One
  more is refused with SQLSTATE 53300, "sorry, too many clients already", except that the owner keeps
  ``OWNER_RESERVED`` slots of their own above it (PostgreSQL's ``superuser_reserved_connections``).
* Connections still in start-up (no password checked yet) are at most ``max_connections``. When they are
  all taken, a new one from an address holding fewer of them than some other address takes the place of
  the oldest start-up of the address holding most (that socket is shut, its thread ends); otherwise it is
  answered 53300 at once, before a byte is read and without a thread. So threads and sockets are bounded
  by twice ``max_connections`` (as PostgreSQL bounds its children by twice its backends), whatever clients
  do, and idle sockets from a few addresses cannot keep analysts elsewhere from logging in, while a burst
  of honest logins from one host (a BI tool's pool) is never refused on an idle listener.
* ``authentication_timeout`` (``--pg-auth-timeout``, default 60 s as PostgreSQL's): start-up and the
  password must be done within it, else the connection is dropped.
* ``auth_delay``: a failed login is answered only after a pause that doubles with each recent failure from
  the same address (``AUTH_DELAY`` to ``AUTH_DELAY_MAX``; an address's count is forgotten
  ``FORGET_AFTER`` seconds after its last failure), as PostgreSQL's auth_delay module slows password
  guessing. The pause holds one of that address's start-up slots, so a flood from one address throttles
  itself and is the first to give its slots up. The failures of at most ``TRACKED`` addresses are
  kept (least recently failed forgotten first): nothing here grows with the number of clients.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

__all__ = [
    "AUTH_DELAY",
    "AUTH_DELAY_MAX",
    "AUTH_TIMEOUT",
    "MAX_CONNECTIONS",
    "OWNER_RESERVED",
    "Admission",
    "Limits",
]

MAX_CONNECTIONS = 100
AUTH_TIMEOUT = 60.0  # seconds
AUTH_DELAY = 0.1  # seconds, the first failure's pause; doubled with each further recent failure
AUTH_DELAY_MAX = 5.0
FORGET_AFTER = 600.0  # seconds without a failure after which an address's count starts again
OWNER_RESERVED = 3
TRACKED = 10_000


@dataclass(frozen=True)
class Limits:
    """The listener's settings (``privdb serve --pg-max-connections``, ``--pg-auth-timeout``,
    ``--pg-auth-delay``)."""

    max_connections: int = MAX_CONNECTIONS
    auth_timeout: float = AUTH_TIMEOUT
    auth_delay: float = AUTH_DELAY


@dataclass
class Admission:
    """The counts behind :class:`Limits`, shared by the listener's threads."""

    limits: Limits = field(default_factory=Limits)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # address → its connections in start-up, oldest first (each a socket to shut if it must give way)
    _starting: dict[str, OrderedDict[int, socket.socket]] = field(default_factory=dict)
    _count: int = 0
    _sessions: int = 0
    _owners: int = 0  # sessions of the owner beyond max_connections (the reserved slots)
    _failures: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)

    def start(self, address: str, sock: socket.socket) -> bool:
        """Whether a new connection from ``address`` may begin its start-up (then :meth:`started` when
        it ends); when the slots are full, the oldest start-up of the address holding most gives way."""
        with self._lock:
            mine = self._starting.setdefault(address, OrderedDict())
            if self._count >= self.limits.max_connections:
                hog = max(self._starting, key=lambda a: len(self._starting[a]))
                if len(self._starting[hog]) <= len(mine) + 1:
                    if not mine:
                        del self._starting[address]
                    return False
                _, oldest = self._starting[hog].popitem(last=False)
                self._count -= 1
                with contextlib.suppress(OSError):
                    oldest.shutdown(socket.SHUT_RDWR)  # its thread reads the end and leaves
            mine[id(sock)] = sock
            self._count += 1
            return True

    def started(self, address: str, sock: socket.socket) -> None:
        """The start-up of ``sock`` from ``address`` is over (authenticated, refused or dropped)."""
        with self._lock:
            mine = self._starting.get(address)
            if mine is not None and mine.pop(id(sock), None) is not None:
                self._count -= 1
            if mine is not None and not mine:
                del self._starting[address]

    def open_session(self, *, owner: bool) -> bool:
        """Take a session slot (False: the listener is full; the owner may use the reserved slots)."""
        with self._lock:
            if self._sessions < self.limits.max_connections:
                self._sessions += 1
                return True
            if owner and self._owners < OWNER_RESERVED:
                self._owners += 1
                return True
            return False

    def close_session(self, *, owner: bool) -> None:
        with self._lock:
            if owner and self._owners > 0:
                self._owners -= 1
            else:
                self._sessions -= 1

    def failed(self, address: str) -> float:
        """Record a failed login from ``address``; the seconds to wait before answering it."""
        now = time.monotonic()
        with self._lock:
            count, last = self._failures.pop(address, (0, now))
            count = 1 if now - last > FORGET_AFTER else count + 1
            self._failures[address] = (count, now)
            while len(self._failures) > TRACKED:
                self._failures.popitem(last=False)
        if self.limits.auth_delay <= 0:
            return 0.0
        return float(min(AUTH_DELAY_MAX, self.limits.auth_delay * 2 ** min(count - 1, 32)))

    def counts(self) -> dict[str, int]:
        """Connections in start-up and sessions now (for tests and the log)."""
        with self._lock:
            return {"starting": self._count, "sessions": self._sessions + self._owners}
