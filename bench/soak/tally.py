"""The tallies of the hostile clients: each kind of attack, its attempts and how each ended, and the ε
the hostile analyst received or was charged; shared by the attack threads, sent back to the parent."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any

from bench.soak import wire

KINDS = {  # the statement clients try theirs in this order, one after the other
    "login": "failed login (wrong password)",
    "idle": "idle socket (no start-up message)",
    "short": "short session (log in, close at once)",
    "text_dp": "1 MiB DP-SELECT text",
    "many_over": "1,001 statements in one simple query",
    "many": "1,000 statements in one simple query",
    "text_select": "1 MiB SELECT text, no table",
    "mem_repeat": "SELECT repeat('x', 1500000000)",
    "mem_len": "SELECT len(range(200000000))",
    "mem_unnest": "SELECT unnest(range(300000000))",
    "cancel_catalog": "cancel a running catalog query",
    "cancel_dp": "cancel a running DP-SELECT",
}
TIMEOUT = 300.0  # s a hostile client waits for any one answer


@dataclass
class Tally:
    """One kind's attempts and how each ended."""

    attempts: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: list[float] = field(default_factory=list)  # from the attempt's start to its outcome


@dataclass
class Results:
    """Everything the hostile process reports back."""

    tallies: dict[str, Tally]
    seconds: float  # the attack's length, from go to stop
    epsilon_answered: Fraction = Fraction(0)  # ε of the DP answers the hostile analyst received
    epsilon_charged: Fraction = Fraction(0)  # ε of its statements stopped after reading (charged)
    answered: int = 0
    charged: int = 0
    connections: int = 0  # connections the attackers opened (cancel requests included)


class Tallies:
    """The tallies of every kind, shared by the attack threads; ``live`` counts attempts for the
    parent's progress bar."""

    def __init__(self, live: SynchronizedArray[Any] | None, skip: frozenset[str] = frozenset()) -> None:
        self.by_kind = {kind: Tally() for kind in KINDS}
        self.skip = skip
        self.live = live
        self.lock = threading.Lock()
        self.epsilon_answered = self.epsilon_charged = Fraction(0)
        self.answered = self.charged = self.connections = 0

    def connect(self, port: int) -> wire.Wire:
        """A new raw connection, counted."""
        self.connected()
        return wire.Wire.connect(port, TIMEOUT)

    def connected(self) -> None:
        with self.lock:
            self.connections += 1

    def start(self, kind: str) -> float:
        with self.lock:
            self.by_kind[kind].attempts += 1
            if self.live is not None:
                self.live[list(KINDS).index(kind)] += 1
        return time.perf_counter()

    def end(self, kind: str, outcome: str, started: float) -> None:
        with self.lock:
            self.by_kind[kind].outcomes[outcome] += 1
            self.by_kind[kind].seconds.append(time.perf_counter() - started)

    def spent(self, epsilon: float, *, answered: bool) -> None:
        with self.lock:
            if answered:
                self.epsilon_answered += Fraction(epsilon)
                self.answered += 1
            else:
                self.epsilon_charged += Fraction(epsilon)
                self.charged += 1
