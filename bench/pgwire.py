"""PostgreSQL's wire protocol against HTTP (issue 29): the same DP-SELECT through privdb's Python HTTP client
and through psycopg, to one ``privdb serve --port P --pg-port Q`` serving both, in ms per query.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, row-level: no privacy
unit), one analyst ``bench`` with a budget that never runs out. The queries are bench.server's Q1
(``COUNT(*) WHERE age > 30``) and Q2 (``state, COUNT(*), AVG(income) GROUP BY state``) at ε ≈ 1; every
request's ε moves by 1e-9 (shared by both protocols), so no answer comes from privdb's store, and every
answer is checked to be fresh: over HTTP ``cached`` is false and ``epsilon_spent`` the ε asked; over the
wire protocol the cost NOTICE names no stored answer.

- **HTTP**: ``privdb.connect("http://127.0.0.1:P", token=…)`` (httpx, one kept-alive connection, the
  answer as an Arrow stream), ``.sql(query)``.
- **pgwire**: ``psycopg.connect("postgresql://bench:<token>@127.0.0.1:Q/privdb", autocommit=True)``,
  ``cursor.execute(query)`` and ``fetchall()`` (psycopg's extended protocol: Parse, Bind, Execute).

**1 client**: ``--pairs`` pairs of one query over each protocol, one after the other, their order swapped
every pair (after 5 untimed pairs). **8 clients**: ``--rounds`` rounds, each of a batch of 8 threads over
HTTP and a batch of 8 over pgwire (the order swapped every round), each thread with its own connection
(opened before the clock starts) sending ``--per-client`` queries back to back; q/s = answers ÷ the
batch's wall time, pooled over the rounds. The machine's 1-minute load is read before each figure.

Run: ``.venv/bin/python -m bench.pgwire [--rows N] [--pairs N] [--rounds N] [--per-client N] [--quick]``.
A full run rewrites the ``pgwire`` section of docs/benchmarks.md; ``--quick`` only prints.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

import privdb
from bench.harness import data, machine, report
from bench.harness.query import ANALYST, Query
from bench.harness.timing import nearest_rank
from bench.server.load import free_port, running_server
from bench.server.spec import QUERIES, TABLE, Epsilons, StaleAnswer
from privdb.client import RemoteConnection
from privdb.data.census import generate

PROTOCOLS = ("HTTP", "pgwire")
COLUMNS = ["query", "clients", "protocol", "mean ms", "median ms", "p99 ms", "q/s", "load (1 min)"]
RATIO_COLUMNS = ["query", "clients", "pgwire ÷ HTTP mean", "median", "p99", "q/s"]


class HttpSession:
    """One analyst's HTTP session: privdb's Python client."""

    def __init__(self, url: str, token: str) -> None:
        self.conn = privdb.connect(url, token=token)
        assert isinstance(self.conn, RemoteConnection)
        self.conn.budget()  # open the connection before the clock starts

    def ask(self, query: Query, epsilon: float) -> None:
        result = self.conn.sql(query.dp(epsilon))
        if result.cached or not math.isclose(result.epsilon_spent, epsilon, rel_tol=1e-12):
            raise StaleAnswer(f"{query.key} over HTTP: ε {epsilon!r} came back cached or charged otherwise")

    def close(self) -> None:
        self.conn.close()


class PgSession:
    """One analyst's psycopg connection; the cost NOTICE of each answer is kept to check it is fresh."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.notices: list[str] = []
        self.conn.add_notice_handler(lambda diag: self.notices.append(diag.message_primary or ""))

    def ask(self, query: Query, epsilon: float) -> None:
        self.notices.clear()
        with self.conn.cursor() as cur:
            cur.execute(query.dp(epsilon))
            cur.fetchall()
        cost = [n for n in self.notices if "ε spent" in n]
        if not cost or "stored answer" in cost[0]:
            raise StaleAnswer(f"{query.key} over pgwire: ε {epsilon!r} came back stored or without its cost")

    def close(self) -> None:
        self.conn.close()


Session = HttpSession | PgSession


@dataclass
class Figure:
    """Latencies of one query over one protocol at one number of clients."""

    query: Query
    clients: int
    protocol: str
    latencies: list[float] = field(default_factory=list)  # s
    wall: float = 0.0  # s the batches took (concurrent) or the sum of latencies (sequential)
    loads: list[float] = field(default_factory=list)  # 1-minute load before each batch

    @property
    def qps(self) -> float:
        return len(self.latencies) / self.wall if self.wall else math.nan

    def ms(self) -> tuple[float, float, float]:
        """Mean, median and p99 (nearest rank) in ms."""
        lat = self.latencies
        return 1000 * statistics.fmean(lat), 1000 * statistics.median(lat), 1000 * nearest_rank(lat, 0.99)


def wait_for_port(port: int, seconds: float = 60) -> None:
    """Until something accepts connections on loopback ``port``."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on the PostgreSQL port {port} after {seconds:g} s")
        time.sleep(0.1)


def sequential(
    makers: dict[str, Callable[[], Session]], query: Query, eps: Epsilons, pairs: int
) -> dict[str, Figure]:
    """``pairs`` pairs of one query per protocol over one connection each, order swapped every pair."""
    sessions = {name: make() for name, make in makers.items()}
    figures = {name: Figure(query, 1, name, loads=[os.getloadavg()[0]]) for name in makers}
    try:
        for i in range(pairs + 5):
            order = PROTOCOLS if i % 2 == 0 else PROTOCOLS[::-1]
            for name in order:
                epsilon = eps.next()
                t0 = time.perf_counter()
                sessions[name].ask(query, epsilon)
                if i >= 5:
                    figures[name].latencies.append(time.perf_counter() - t0)
    finally:
        for session in sessions.values():
            session.close()
    for figure in figures.values():
        figure.wall = sum(figure.latencies)
    return figures


def batch(
    make: Callable[[], Session], query: Query, eps: Epsilons, clients: int, each: int, into: Figure
) -> None:
    """``clients`` threads, each with its own connection, sending ``each`` queries back to back."""
    sessions = [make() for _ in range(clients)]
    ready = threading.Barrier(clients + 1)
    found: list[list[float]] = [[] for _ in range(clients)]
    failed: list[BaseException] = []

    def client(k: int) -> None:
        ready.wait()
        try:
            for _ in range(each):
                epsilon = eps.next()
                t0 = time.perf_counter()
                sessions[k].ask(query, epsilon)
                found[k].append(time.perf_counter() - t0)
        except Exception as err:  # reported by the main thread
            failed.append(err)

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    for thread in threads:
        thread.start()
    into.loads.append(os.getloadavg()[0])
    ready.wait()
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    into.wall += time.perf_counter() - t0
    for session in sessions:
        session.close()
    if failed:
        raise failed[0]
    into.latencies += [x for lat in found for x in lat]


def concurrent(
    makers: dict[str, Callable[[], Session]],
    query: Query,
    eps: Epsilons,
    clients: int,
    rounds: int,
    each: int,
) -> dict[str, Figure]:
    """``rounds`` rounds of one batch per protocol, order swapped every round."""
    figures = {name: Figure(query, clients, name) for name in makers}
    for r in range(rounds):
        for name in PROTOCOLS if r % 2 == 0 else PROTOCOLS[::-1]:
            batch(makers[name], query, eps, clients, each, figures[name])
    return figures


def rows(figures: list[Figure]) -> list[list[str]]:
    out = []
    for f in figures:
        mean, median, p99 = f.ms()
        load = f"{min(f.loads):.1f}–{max(f.loads):.1f}" if len(f.loads) > 1 else f"{f.loads[0]:.1f}"
        out.append([f.query.key, str(f.clients), f.protocol, *(f"{v:.2f}" for v in (mean, median, p99))])
        out[-1] += [f"{f.qps:,.0f}", load]
    return out


def ratio_rows(figures: list[Figure]) -> list[list[str]]:
    out = []
    for http, pg in zip(figures[::2], figures[1::2], strict=True):
        assert (http.protocol, pg.protocol) == PROTOCOLS
        cells = [report.ratio(b, a, 2) for a, b in zip(http.ms(), pg.ms(), strict=True)]
        out.append([http.query.key, str(http.clients), *cells, report.ratio(pg.qps, http.qps, 2)])
    return out


def markdown(figures: list[Figure], setup: dict[str, str]) -> str:
    text = (
        f"One `privdb serve --port P --pg-port Q` (1 worker) on {setup['rows']} generated census rows "
        "(row-level), asked the same DP-SELECT at ε ≈ 1 over HTTP with privdb's Python client "
        '(`privdb.connect("http://…", token=…)`, Arrow answers) and over PostgreSQL\'s wire protocol with '
        f"psycopg {machine.version('psycopg')} (`cursor.execute`, `fetchall`). Q1: `COUNT(*) WHERE age > "
        "30`; Q2: `state, COUNT(*), AVG(income) GROUP BY state`. Every request has an ε of its own (1 + "
        "i·1e-9), so none is answered from the store, and every answer is checked to be fresh. 1 client: "
        f"{setup['pairs']} pairs, one query per protocol, their order swapped every pair. 8 clients: "
        f"{setup['rounds']} rounds of a batch per protocol (order swapped every round), 8 threads with a "
        f"connection each sending {setup['each']} queries back to back; q/s = answers ÷ batch wall time. "
        "The load column is the machine's 1-minute load average before the figure's runs (its range over "
        "the rounds); ratios come from the same run, interleaved, so the load falls on both protocols alike."
    )
    lines = [
        report.written_by("bench.pgwire", "bench/pgwire.py"),
        "",
        f"Machine: {setup['machine']}",
        "",
        text,
        "",
        *report.table(COLUMNS, rows(figures)),
        "",
        *report.table(RATIO_COLUMNS, ratio_rows(figures)),
    ]
    return report.section("pgwire", f"PostgreSQL wire protocol against HTTP: {setup['rows']} rows", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows in the table (default 100,000)")
    parser.add_argument("--pairs", type=int, default=300, help="1 client: pairs per query (default 300)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--rounds", type=int, default=4, help="8 clients: rounds per query (default 4)")
    parser.add_argument(
        "--per-client", type=int, default=25, help="queries per client per batch (default 25)"
    )
    parser.add_argument("--quick", action="store_true", help="10,000 rows, short runs; prints only")
    args = parser.parse_args()
    n, pairs, rounds, each = args.rows, args.pairs, args.rounds, args.per_client
    if args.quick:
        n, pairs, rounds, each = 10_000, 20, 2, 5
    console = report.console()
    before = machine.load()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-pgwire-", dir="/var/tmp"))
    figures: list[Figure] = []
    try:
        console.print(f"Generating {n:,} rows …")
        token = data.setting_databases(work, {TABLE: generate(n)}, {"row": data.census_metadata()["row"]},
                                       epsilon=1e9)["row"]  # fmt: skip
        pg_port = free_port()
        with running_server(work / "row", 1, work / "server.log", ["--pg-port", str(pg_port)]) as server:
            wait_for_port(pg_port)
            pg_url = f"postgresql://{ANALYST}:{token}@127.0.0.1:{pg_port}/privdb"
            makers: dict[str, Callable[[], Session]] = {
                "HTTP": lambda: HttpSession(server.url, token),
                "pgwire": lambda: PgSession(pg_url),
            }
            eps = Epsilons()
            for query in QUERIES:
                console.print(f"{query.key}: 1 client, {pairs} pairs")
                figures += sequential(makers, query, eps, pairs).values()
                console.print(f"{query.key}: {args.clients} clients, {rounds} rounds of {each} queries each")
                figures += concurrent(makers, query, eps, args.clients, rounds, each).values()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    line = machine.describe(
        machine.versions(("httpx", "psycopg", "pygwire", "duckdb")),
        f"load (1/5/15 min) {before} before, {machine.load()} after",
    )
    console.print(report.rich_table(f"HTTP and pgwire, {n:,} rows", COLUMNS, rows(figures), right=3))
    console.print(report.rich_table("pgwire ÷ HTTP", RATIO_COLUMNS, ratio_rows(figures), right=2), line)
    if not args.quick:
        setup = {"rows": f"{n:,}", "pairs": f"{pairs:,}", "rounds": str(rounds), "each": str(each)}
        report.write_section("pgwire", markdown(figures, setup | {"machine": line}))
        console.print(f"Wrote the pgwire section of {report.DOC}")


if __name__ == "__main__":
    main()
