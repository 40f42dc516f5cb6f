"""How many free queries run at once in one process: the bound on their memory, whatever the clients.

Plain SELECTs of public tables (privdb.sql.public.answer) and catalog queries of the PostgreSQL endpoint
(privdb.server.pgwire.catalog) are free, so a client can send as many as it likes, from as many sessions
as it may open. Each runs in a DuckDB sandbox with a memory cap; here the number of sandboxes running at
once is capped too, so their memory together is bounded by a public constant (``count × cap``), however
many HTTP requests or PostgreSQL sessions there are. A principal runs one at a time (a second waits for
its first), so one analyst cannot hold every slot while others wait. A query that finds no slot within
its time limit is refused with ``rate_limited`` before it reads anything, free; try again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from privdb.errors import RateLimited

__all__ = ["CATALOG_SLOTS", "PUBLIC_SLOTS", "Slots"]


class Slots:
    """At most ``count`` holders at once, at most one per key."""

    def __init__(self, count: int, what: str) -> None:
        self.count, self.what = count, what
        self._ready = threading.Condition()
        self._holders: dict[str, int] = {}  # key → how many of its takes hold or wait on its one slot

    @contextlib.contextmanager
    def take(self, key: str, timeout: float) -> Iterator[None]:
        """Hold a slot for ``key`` while the block runs; ``rate_limited`` if none frees within
        ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while key in self._holders or len(self._holders) >= self.count:
                left = deadline - time.monotonic()
                if left <= 0 or not self._ready.wait(left):
                    raise RateLimited(
                        f"the server is busy with other {self.what} (at most {self.count} run at once, one "
                        "per analyst); nothing was read or spent: try again in a moment",
                        retry_after=1.0,
                    )
            self._holders[key] = 1
        try:
            yield
        finally:
            with self._ready:
                del self._holders[key]
                self._ready.notify_all()

    def busy(self) -> int:
        with self._ready:
            return len(self._holders)


# plain SELECTs: sandboxes of at most 1 GB each (privdb.sql.public.answer); catalog queries: 256 MB
PUBLIC_SLOTS = Slots(2, "plain SELECTs")
CATALOG_SLOTS = Slots(4, "catalog queries")
