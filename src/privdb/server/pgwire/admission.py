"""Who may hold a connection to the PostgreSQL listener, and for how long: PostgreSQL's own limits.

* ``max_connections`` (``--pg-max-connections``, default 100 as PostgreSQL's): authenticated sessions. One
  more is refused with SQLSTATE 53300, "sorry, too many clients already", except that the owner keeps
  ``OWNER_RESERVED`` slots of their own above it (PostgreSQL's ``superuser_reserved_connections``).
* Connections still in start-up (no password checked yet) are at most ``max_connections`` in all and
  ``per_address`` from one client address; one more is answered 53300 at once, before a byte is read and
  without a thread. So threads and sockets are bounded by twice ``max_connections`` (as PostgreSQL bounds
  its children by twice its backends), whatever clients do.
* ``authentication_timeout`` (``--pg-auth-timeout``, default 60 s as PostgreSQL's): start-up and the
  password must be done within it, else the connection is dropped.
* ``auth_delay``: a failed login is answered only after a pause that doubles with each recent failure from
  the same address (``AUTH_DELAY`` to ``AUTH_DELAY_MAX``; an address's count is forgotten
  ``FORGET_AFTER`` seconds after its last failure), as PostgreSQL's auth_delay module slows password
  guessing. The pause holds one of that address's start-up slots, so a flood from one address throttles
  itself and leaves the other addresses' slots free. The failures of at most ``TRACKED`` addresses are
  kept (least recently failed forgotten first): nothing here grows with the number of clients.
"""

from __future__ import annotations

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
    """The listener's settings (``privdb serve --pg-max-connections``, ``--pg-auth-timeout``)."""

    max_connections: int = MAX_CONNECTIONS
    auth_timeout: float = AUTH_TIMEOUT
    auth_delay: float = AUTH_DELAY

    @property
    def per_address(self) -> int:
        """Start-ups one address may have at once: a quarter of all, at least 4."""
        return max(4, self.max_connections // 4)


@dataclass
class Admission:
    """The counts behind :class:`Limits`, shared by the listener's threads."""

    limits: Limits = field(default_factory=Limits)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _starting: dict[str, int] = field(default_factory=dict)  # address → connections in start-up
    _sessions: int = 0
    _owners: int = 0  # sessions of the owner beyond max_connections (the reserved slots)
    _failures: OrderedDict[str, tuple[int, float]] = field(default_factory=OrderedDict)

    def start(self, address: str) -> bool:
        """A new connection from ``address`` may begin its start-up (then :meth:`started` when it ends)."""
        with self._lock:
            total = sum(self._starting.values())
            mine = self._starting.get(address, 0)
            if total >= self.limits.max_connections or mine >= self.limits.per_address:
                return False
            self._starting[address] = mine + 1
            return True

    def started(self, address: str) -> None:
        """The start-up of a connection from ``address`` is over (authenticated, refused or dropped)."""
        with self._lock:
            left = self._starting.get(address, 0) - 1
            if left > 0:
                self._starting[address] = left
            else:
                self._starting.pop(address, None)

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
            return {"starting": sum(self._starting.values()), "sessions": self._sessions + self._owners}
