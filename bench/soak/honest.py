"""The honest analysts: each a thread with its own psycopg connection and token, asking a few DP-SELECTs
in turn (a pause between them), every answer's latency and ε kept, every error kept with its SQLSTATE.

Each query asks an ε of its own (``EPSILON + i·1e-9``), so none is answered from privdb's store; an answer
counts as received at that ε when its cost NOTICE says it was charged that ε (to the NOTICE's 6 digits) and
was not a stored answer. The ledger is then checked against the exact sum (fractions) of those ε.
"""

from __future__ import annotations

import math
import re
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from bench.harness.query import Query

TABLE = "people"
QUERIES = [
    Query("Q1", "COUNT(*) WHERE age > 30", f"COUNT(*) FROM {TABLE} WHERE age > 30"),
    Query("Q2", "AVG(income) WHERE age > 30", f"AVG(income) FROM {TABLE} WHERE age > 30"),
    Query("Q3", "state: COUNT, AVG(income)", f"state, COUNT(*), AVG(income) FROM {TABLE} GROUP BY state"),
]
EPSILON = 0.01
_COST = re.compile(r"ε spent ([0-9.eE+-]+)")


@dataclass
class Answer:
    query: str  # the query's key
    start: float  # s since the run's clock started
    seconds: float


@dataclass
class Failure:
    query: str
    start: float
    what: str  # SQLSTATE, or a short description when there is none


@dataclass
class Analyst:
    """One honest analyst's loop and what it saw."""

    name: str
    url: str
    clock: float  # perf_counter() of the run's start
    pause: float
    answers: list[Answer] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    epsilon: Fraction = Fraction(0)  # the sum of the ε of the answers received
    conn: Any = None
    notices: list[str] = field(default_factory=list)
    count: int = 0

    def connect(self) -> None:
        import psycopg

        self.conn = psycopg.connect(self.url, autocommit=True, connect_timeout=60)
        self.conn.add_notice_handler(lambda diag: self.notices.append(diag.message_primary or ""))

    def ask(self, query: Query) -> None:
        """One query: its answer (latency, ε) or its failure recorded."""
        import psycopg

        self.count += 1
        epsilon = EPSILON + self.count * 1e-9
        start = time.perf_counter()
        self.notices.clear()
        try:
            if self.conn is None or self.conn.closed:
                self.connect()
            with self.conn.cursor() as cur:
                cur.execute(query.dp(epsilon))
                rows = cur.fetchall()
        except psycopg.Error as err:
            what = err.sqlstate or f"{type(err).__name__}: {str(err).splitlines()[0][:80]}"
            self.failures.append(Failure(query.key, start - self.clock, what))
            if err.sqlstate is None and self.conn is not None:
                self.conn.close()  # reconnected on the next query
            return
        seconds = time.perf_counter() - start
        costs = [float(m.group(1)) for n in self.notices if (m := _COST.search(n))]
        stored = any("stored answer" in n for n in self.notices)
        if not rows or not costs or stored or not math.isclose(costs[0], epsilon, rel_tol=1e-5):
            what = f"answer without its cost, stored, or charged otherwise: {self.notices[:1]}"
            self.failures.append(Failure(query.key, start - self.clock, what))
            return
        self.epsilon += Fraction(epsilon)
        self.answers.append(Answer(query.key, start - self.clock, seconds))

    def loop(self, stop: threading.Event) -> None:
        i = 0
        while not stop.is_set():
            self.ask(QUERIES[i % len(QUERIES)])
            i += 1
            stop.wait(self.pause)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
