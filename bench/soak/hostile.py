"""The hostile clients, in a process of their own (so their Python does not slow the honest analysts'
clients): each kind of attack a thread (the login flood and the idle sockets several), every attempt
counted with how the server answered it.

- **login**: a start-up as one of the honest analysts, then a wrong password (raw protocol: the SQLSTATE
  of the refusal is read from the wire), back to back.
- **idle**: sockets that connect and never send a start-up message, each kept until the server drops it
  or ``hold`` seconds pass (then the client closes it and opens another).
- **short**: log in with a valid token and close at once (every other time without a Terminate message).
- **text_dp**, **text_select**, **many**, **many_over**: one client sending, in turn, a 1 MiB DP-SELECT (a
  WHERE … IN list), a 1 MiB SELECT on no table, and one simple query of 1,000 and of 1,001 statements.
- **mem_***: one client asking, in turn, the catalog (no-table) queries that try to eat memory.
- **cancel_***: one client running a long catalog query (a recursive CTE) or a DP-SELECT and cancelling
  it after a random delay with psycopg's ``conn.cancel()`` (a CancelRequest on a new connection).

Each kind's outcome is a short phrase: ``refused 28P01``, ``answered``, ``dropped by the server``…
"""

from __future__ import annotations

import contextlib
import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.sharedctypes import SynchronizedArray
from typing import Any, Protocol

from bench.soak import wire
from bench.soak.tally import TIMEOUT, Results, Tallies, Tally

MEMORY = {
    "mem_repeat": "SELECT repeat('x', 1500000000)",
    "mem_len": "SELECT len(range(200000000))",
    "mem_unnest": "SELECT unnest(range(300000000))",
}
LONG_CATALOG = (
    "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 100000000) "
    "SELECT count(*) FROM t"
)
CANCELLED_DP = "state, COUNT(*), AVG(income) FROM people GROUP BY state"
MIB = 1 << 20
EPSILON = 0.01  # the hostile analyst's DP-SELECTs ask ε = EPSILON + i·1e-9
_COST = re.compile(r"ε spent ([0-9.eE+-]+)")


class _Events(Protocol):
    def is_set(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> bool: ...
    def set(self) -> None: ...


@dataclass(frozen=True)
class Plan:
    """What the hostile process does (picklable: it crosses into the spawned process)."""

    port: int
    victims: tuple[str, ...]  # honest analysts' names (the login flood guesses their passwords)
    user: str  # the hostile analyst, with a token of its own
    token: str
    idle: int  # idle sockets held at once
    flood: int  # threads flooding failed logins
    hold: float  # s an idle socket is kept when the server does not drop it
    grace: float = 5.0  # s the threads get to finish their attempt after the stop
    skip: frozenset[str] = frozenset()  # kinds not attempted


def _socket_outcome(err: BaseException) -> str:
    if isinstance(err, wire.Closed | ConnectionResetError | BrokenPipeError):
        return "dropped by the server"
    if isinstance(err, ConnectionRefusedError):
        return "TCP connection refused"
    if isinstance(err, TimeoutError):
        return f"no answer within {TIMEOUT:g} s"
    return f"client error {type(err).__name__}"


def _one(kind: str, tallies: Tallies, attempt: Callable[..., str], *args: Any) -> None:
    """One attempt of ``kind``, its outcome tallied (an unexpected exception is an outcome too: the
    attacker goes on); none if ``kind`` is skipped."""
    if kind in tallies.skip:
        return
    started = tallies.start(kind)
    try:
        outcome = attempt(*args)
    except (OSError, wire.Closed) as err:
        outcome = _socket_outcome(err)
    except Exception as err:
        outcome = f"client error {type(err).__name__}"
    tallies.end(kind, outcome, started)


def _failed_login(plan: Plan, tallies: Tallies, rng: random.Random) -> str:
    conn = tallies.connect(plan.port)
    try:
        code = wire.login(conn, rng.choice(plan.victims), f"wrong-{rng.getrandbits(64):x}")
    finally:
        conn.close()
    return "authenticated (!)" if code is None else f"refused {code}"


def _login_flood(plan: Plan, tallies: Tallies, stop: _Events, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        _one("login", tallies, _failed_login, plan, tallies, rng)


def _hold_idle(plan: Plan, tallies: Tallies, stop: _Events) -> str:
    """Connect, send nothing, wait for the server to drop the socket (or ``plan.hold`` to pass)."""
    started = time.perf_counter()
    conn = tallies.connect(plan.port)
    conn.sock.settimeout(1.0)
    try:
        while not stop.is_set():
            if time.perf_counter() - started > plan.hold:
                return f"still open after {plan.hold:g} s, closed by the client"
            with contextlib.suppress(TimeoutError):
                kind, body = conn.read()
                code = wire.error_fields(body).get("C", "?") if kind == b"E" else kind.decode()
                return f"refused {code}, then dropped"
    finally:
        conn.close()
    return "open when the run ended"


def _idle_socket(plan: Plan, tallies: Tallies, stop: _Events, delay: float) -> None:
    if stop.wait(delay):
        return
    while not stop.is_set():
        _one("idle", tallies, _hold_idle, plan, tallies, stop)


def _short_session(plan: Plan, tallies: Tallies, polite: bool) -> str:
    conn = tallies.connect(plan.port)
    try:
        code = wire.login(conn, plan.user, plan.token)
        if code is None and polite:
            conn.send(wire.TERMINATE)
    finally:
        conn.close()
    return f"refused {code}" if code else "logged in, closed"


def _short_sessions(plan: Plan, tallies: Tallies, stop: _Events) -> None:
    polite = False
    while not stop.is_set():
        polite = not polite
        _one("short", tallies, _short_session, plan, tallies, polite)


class _Analyst:
    """The hostile analyst's psycopg connection (reopened when the server drops it)."""

    def __init__(self, plan: Plan, tallies: Tallies) -> None:
        self.plan, self.tallies = plan, tallies
        self.conn: Any = None
        self.notices: list[str] = []
        self.count = 0

    def connect(self) -> Any:
        import psycopg

        if self.conn is None or self.conn.closed:
            url = f"postgresql://{self.plan.user}:{self.plan.token}@127.0.0.1:{self.plan.port}/privdb"
            self.tallies.connected()
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=60)
            self.conn.add_notice_handler(lambda diag: self.notices.append(diag.message_primary or ""))
        return self.conn

    def epsilon(self) -> float:
        self.count += 1
        return EPSILON + self.count * 1e-9

    def run(self, text: str, epsilon: float | None = None) -> str:
        """Run ``text`` as one statement and tell how it ended; a DP answer's ε is added up."""
        import psycopg

        self.notices.clear()
        try:
            conn = self.connect()
        except psycopg.OperationalError as err:  # libpq keeps the SQLSTATE of a refused log-in to itself
            return "log-in refused: " + str(err).split("FATAL:", 1)[-1].split("\n")[0].strip()[:60]
        try:
            with conn.cursor() as cur:
                cur.execute(text)
                if cur.description is not None:
                    cur.fetchall()
        except psycopg.OperationalError as err:
            if err.sqlstate is None:  # the connection itself failed
                with contextlib.suppress(Exception):
                    self.conn.close()
                return "connection lost"
            return self._refused(err, epsilon)
        except psycopg.Error as err:
            return self._refused(err, epsilon)
        if epsilon is not None:
            costs = [float(m.group(1)) for n in self.notices if (m := _COST.search(n))]
            stored = any("stored answer" in n for n in self.notices)
            if costs and not stored and math.isclose(costs[0], epsilon, rel_tol=1e-5):
                self.tallies.spent(epsilon, answered=True)
        return "answered"

    def _refused(self, err: Any, epsilon: float | None) -> str:
        hint = getattr(getattr(err, "diag", None), "message_hint", None) or ""
        # query_failed (22000), or cancelled (57014) after reading: charged, as its HINT says
        charged = err.sqlstate == "22000" or (err.sqlstate == "57014" and "charged" in hint)
        if epsilon is not None and charged:
            self.tallies.spent(epsilon, answered=False)
        return f"refused {err.sqlstate}"


def _huge_statements(plan: Plan, tallies: Tallies, stop: _Events) -> None:
    analyst = _Analyst(plan, tallies)
    in_list = ",".join(str(i % 100) for i in range(MIB // 3))
    dp_head = "COUNT(*) FROM people WHERE age IN ("
    select_text = ("SELECT 1 WHERE 1 IN (" + in_list)[: MIB - 1].rsplit(",", 1)[0] + ")"

    def dp_text() -> str:
        head = f"DP-SELECT {analyst.epsilon()!r} {dp_head}"
        return (head + in_list)[: MIB - 1].rsplit(",", 1)[0] + ")"

    def many(count: int) -> str:
        conn = tallies.connect(plan.port)
        try:
            code = wire.login(conn, plan.user, plan.token)
            if code is not None:
                return f"refused {code} at log-in"
            done, refused = wire.simple_query(conn, "SELECT 1;" * count)
            conn.send(wire.TERMINATE)
        finally:
            conn.close()
        return f"refused {refused[0]}" if refused else f"{done:,} answered"

    while not stop.is_set():
        text = dp_text()
        _one("text_dp", tallies, analyst.run, text, float(text.split()[1]))
        _one("many_over", tallies, many, 1001)
        _one("many", tallies, many, 1000)
        if not stop.is_set():
            _one("text_select", tallies, analyst.run, select_text)


def _memory_queries(plan: Plan, tallies: Tallies, stop: _Events) -> None:
    analyst = _Analyst(plan, tallies)
    while not stop.is_set():
        for kind, text in MEMORY.items():
            if stop.is_set():
                break
            _one(kind, tallies, analyst.run, text)


def _cancels(plan: Plan, tallies: Tallies, stop: _Events, seed: int) -> None:
    rng = random.Random(seed)
    analyst = _Analyst(plan, tallies)

    def cancelled(text: str, delay: float, epsilon: float | None) -> str:
        conn = analyst.connect()

        def cancel() -> None:
            tallies.connected()  # a CancelRequest comes on a connection of its own
            conn.cancel()

        timer = threading.Timer(delay, cancel)
        timer.start()
        try:
            outcome = analyst.run(text, epsilon)
        finally:
            timer.cancel()
            timer.join()
        return "answered before the cancel" if outcome == "answered" else outcome

    while not stop.is_set():
        _one("cancel_catalog", tallies, cancelled, LONG_CATALOG, rng.uniform(0.1, 1), None)
        epsilon = analyst.epsilon()
        text = f"DP-SELECT {epsilon!r} {CANCELLED_DP}"
        _one("cancel_dp", tallies, cancelled, text, rng.uniform(0, 0.05), epsilon)
        stop.wait(0.2)


def attack(
    plan: Plan,
    ready: _Events,
    go: _Events,
    stop: _Events,
    live: SynchronizedArray[Any] | None,
    out: Any,
) -> None:
    """The hostile process: set ``ready`` once loaded, attack from ``go`` to ``stop``, put the
    :class:`Results` on the queue ``out``."""
    import psycopg  # noqa: F401  (loaded before the clock starts)

    tallies = Tallies(live, plan.skip)
    huge, cancels = ("text_dp", "many_over", "many", "text_select"), ("cancel_catalog", "cancel_dp")
    workers: list[tuple[Callable[..., None], tuple[Any, ...], tuple[str, ...]]] = []
    workers += [(_login_flood, (plan, tallies, stop, k), ("login",)) for k in range(plan.flood)]
    workers += [(_idle_socket, (plan, tallies, stop, 0.05 * k), ("idle",)) for k in range(plan.idle)]
    workers += [(_short_sessions, (plan, tallies, stop), ("short",))]
    workers += [(_huge_statements, (plan, tallies, stop), huge)]
    workers += [(_memory_queries, (plan, tallies, stop), tuple(MEMORY))]
    workers += [(_cancels, (plan, tallies, stop, 1), cancels)]
    threads = [
        threading.Thread(target=f, args=a, daemon=True)
        for f, a, kinds in workers
        if not set(kinds) <= plan.skip  # a client whose every kind is skipped is not started
    ]
    ready.set()
    go.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    stop.wait()
    seconds = time.perf_counter() - began
    deadline = time.monotonic() + plan.grace
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with tallies.lock:
        results = Results(
            {
                kind: Tally(t.attempts, Counter(t.outcomes), list(t.seconds))
                for kind, t in tallies.by_kind.items()
            },
            seconds,
            tallies.epsilon_answered,
            tallies.epsilon_charged,
            tallies.answered,
            tallies.charged,
            tallies.connections,
        )
    out.put(results)
