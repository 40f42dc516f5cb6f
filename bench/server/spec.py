"""What bench.server measures: the two queries, the loads, the targets, and distinct ε values so that no
answer comes from privdb's store."""

from __future__ import annotations

import itertools
import math
import threading
from typing import Any

from bench.harness.data import SETTINGS as _SETTINGS
from bench.harness.query import EPS, Query

TABLE = "people"
STEP = 1e-9  # request i asks ε = EPS + i·STEP: every query text is new
QUICK_ROWS = 100_000
LOADS = [(1, 1), (1, 8), (1, 32), (2, 8), (2, 32)]  # (server worker processes, concurrent clients)
TARGET_QPS, TARGET_CLIENTS = 300.0, 8  # answered queries per second at 8 clients
TARGET_ADDED_MS = 5.0  # server p50 (1 client) − embedded p50
ROUNDS = 3  # alternating rounds of embedded API and server at one client
QUERY_TIMEOUT = 30.0  # the server's default engine time limit (privdb serve --query-timeout)


QUERIES = [
    Query("Q1", "COUNT(*) WHERE age > 30", f"COUNT(*) FROM {TABLE} WHERE age > 30"),
    Query("Q2", "state: COUNT, AVG(income)", f"state, COUNT(*), AVG(income) FROM {TABLE} GROUP BY state"),
]
SETTINGS = {key: _SETTINGS[key] for key in ("user", "row")}


class Epsilons:
    """Distinct ε values for one database directory, shared by every client thread."""

    def __init__(self) -> None:
        self._count = itertools.count()
        self._lock = threading.Lock()

    def next(self) -> float:
        with self._lock:
            return EPS + next(self._count) * STEP


class StaleAnswer(RuntimeError):
    """privdb answered from its store of answers, or charged a different ε: the timing would be void."""


def check_fresh(answer: dict[str, Any], epsilon: float, what: str) -> None:
    if answer.get("cached") or not math.isclose(float(answer["epsilon_spent"]), epsilon, rel_tol=1e-12):
        raise StaleAnswer(f"{what}: ε {epsilon!r} came back cached or charged {answer.get('epsilon_spent')}")
