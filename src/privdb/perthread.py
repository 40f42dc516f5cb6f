"""One resource per thread (a SQLite connection, a DuckDB cursor), closed when its thread ends.

The ledger's SQLite store and the DuckDB backend give each thread its own connection or cursor, so reads
run in parallel. A server whose threads come and go (one per PostgreSQL client, anyio's worker threads
retiring after idling) would otherwise keep every thread's handle open until the database is closed: file
descriptors grew by 4 per failed PostgreSQL login, until the process hit its limit (issue 36). Here each
thread's resource is tied to a token kept in that thread's ``threading.local``: when the thread ends,
Python drops the token and the resource is closed at once; ``release()`` closes the calling thread's
resource earlier (a PostgreSQL session's end), ``close()`` every one left.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["PerThread"]

T = TypeVar("T")


class _Token:
    """What a thread's ``threading.local`` holds; its collection closes the thread's resource."""

    __slots__ = ("__weakref__",)


class PerThread(Generic[T]):
    """Each thread's own ``T`` from ``opener``, closed with ``closer`` when the thread ends."""

    def __init__(self, opener: Callable[[], T], closer: Callable[[T], None]) -> None:
        self._opener, self._closer = opener, closer
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: dict[int, T] = {}  # id of a live token → its thread's resource

    def get(self) -> T:
        """The calling thread's resource, opened on first use."""
        token: _Token | None = getattr(self._local, "token", None)
        if token is not None and (found := self._open.get(id(token))) is not None:
            return found
        resource = self._opener()
        token = _Token()
        key = id(token)
        with self._lock:
            self._open[key] = resource
        weakref.finalize(token, self._drop, key)
        self._local.token = token
        return resource

    def peek(self) -> T | None:
        """The calling thread's resource if it has one (nothing is opened)."""
        token: _Token | None = getattr(self._local, "token", None)
        return None if token is None else self._open.get(id(token))

    def release(self) -> None:
        """Close the calling thread's resource now (it opens afresh if the thread asks again)."""
        token: _Token | None = getattr(self._local, "token", None)
        if token is not None:
            del self._local.token  # the token's finalizer closes the resource

    def close(self) -> None:
        """Close every thread's resource (the owner of this object is closing)."""
        with self._lock:
            resources, self._open = list(self._open.values()), {}
        for resource in resources:
            self._closer(resource)

    def __len__(self) -> int:
        """How many threads hold a resource now."""
        with self._lock:
            return len(self._open)

    def _drop(self, key: int) -> None:
        with self._lock:
            resource = self._open.pop(key, None)
        if resource is not None:
            self._closer(resource)
