"""A small thread-safe least-recently-used map: what a long-lived object keeps of work it may be asked to
redo (a database's planned query shapes, privdb.sql.plan.prepared), bounded in size."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``size`` entries; the least recently used goes first. ``hits`` and ``misses`` are the user's
    to count (whether a found entry is still valid is theirs to decide)."""

    def __init__(self, size: int) -> None:
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self.hits = self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
