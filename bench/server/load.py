"""The load: the real server as a subprocess, client threads that each keep one connection busy, the timed
window, and the CPU the server, the clients and everything else spent in it."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.harness import memory
from bench.harness.ports import free_port
from bench.harness.query import Query
from bench.harness.timing import Latencies
from bench.harness.timing import nearest_rank as quantile
from bench.server.spec import Epsilons, check_fresh

if TYPE_CHECKING:
    from rich.progress import Progress


# ------------------------------------------------------------------------------------------- results
@dataclass
class Cell(Latencies):
    """One load: a query against a server with ``workers`` processes from ``clients`` clients."""

    setting: str
    query: Query
    workers: int
    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)  # s, requests inside the window
    errors: Counter[str] = field(default_factory=Counter)
    cpu: CpuMeter | None = None  # over the timed window

    def cores(self, part: str) -> float:
        """Cores busy on average in the window: the server, the clients (this process) or other work."""
        if self.cpu is None or not self.cpu.wall:
            return math.nan
        return float(getattr(self.cpu, part)) / self.cpu.wall

    @property
    def server_cpu_ms(self) -> float:
        """Server CPU per answer (all its threads and processes)."""
        if self.cpu is None or not self.latencies:
            return math.nan
        return 1000 * self.cpu.server / len(self.latencies)

    @property
    def qps(self) -> float:
        return len(self.latencies) / self.seconds


@dataclass
class Embedded(Latencies):
    """The embedded API and the server at one client, measured in alternating rounds."""

    setting: str
    query: Query
    latencies: list[float] = field(default_factory=list)
    server: list[float] = field(default_factory=list)

    @property
    def server_p50_ms(self) -> float:
        return 1000 * quantile(self.server, 0.50)


# ----------------------------------------------------------------------------------------- the server


@dataclass
class CpuMeter:
    """CPU seconds spent between ``start`` and ``stop`` by the server, by this process, and by the rest."""

    server_pid: int
    server: float = 0.0
    bench: float = 0.0
    others: float = 0.0
    wall: float = 0.0
    _at: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    def _now(self) -> tuple[float, float, float, float]:
        return (
            memory.process_tree_cpu(self.server_pid),
            time.process_time(),
            memory.machine_busy(),
            time.perf_counter(),
        )

    def start(self) -> None:
        self._at = self._now()

    def stop(self) -> None:
        (s0, b0, m0, t0), (s1, b1, m1, t1) = self._at, self._now()
        self.server, self.bench, self.wall = s1 - s0, b1 - b0, t1 - t0
        self.others = max(0.0, (m1 - m0) - self.server - self.bench)


@dataclass
class Server:
    url: str
    pid: int


@contextlib.contextmanager
def running_server(db_dir: Path, workers: int, log: Path, extra: Sequence[str] = ()) -> Iterator[Server]:
    """``privdb serve`` on a free loopback port (``extra``: more options) until the block ends; yields its
    URL and process id."""
    import httpx

    port = free_port()
    command = [sys.executable, "-m", "privdb", "serve", "--db", str(db_dir), "--port", str(port)]
    command += ["--workers", str(workers), *extra]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
                raise RuntimeError(f"the server exited ({proc.returncode}): " + " / ".join(tail))
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer /healthz within 60 s; see {log}")
            time.sleep(0.1)
        yield Server(url, proc.pid)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly (the database is closed)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: the server and its workers
                proc.wait()


class Bar:
    """One Rich progress bar over every load, in seconds of load."""

    def __init__(self, progress: Progress, total: float) -> None:
        self.progress, self.done = progress, 0.0
        self.task = progress.add_task("", total=total)

    def say(self, what: str) -> None:
        self.progress.update(self.task, description=what)

    def tick(self, elapsed: float) -> None:
        self.progress.update(self.task, completed=self.done + elapsed)

    def next(self, seconds: float) -> None:
        self.done += seconds
        self.progress.update(self.task, completed=self.done)


class Window:
    """The timed window of one load, set once every client holds an open connection."""

    def __init__(self, clients: int) -> None:
        self.ready = threading.Barrier(clients + 1)  # every client connected, and the main thread
        self._set = threading.Event()
        self.start = self.end = math.inf

    def open(self, warmup: float, seconds: float) -> None:
        now = time.perf_counter()
        self.start, self.end = now + warmup, now + warmup + seconds
        self._set.set()

    def wait(self) -> tuple[float, float]:
        self._set.wait()
        return self.start, self.end


def client_loop(
    url: str, token: str, cell: Cell, epsilons: Epsilons, window: Window, lock: threading.Lock
) -> None:
    """One analyst's client: a query as soon as the last is answered, until the window ends."""
    import httpx

    latencies: list[float] = []
    errors: Counter[str] = Counter()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        client.get("/healthz")  # open the connection before the clock starts
        window.ready.wait()
        t_start, t_end = window.wait()
        while (t0 := time.perf_counter()) < t_end:
            epsilon = epsilons.next()
            try:
                response = client.post("/v1/query", json={"sql": cell.query.dp(epsilon)})
            except httpx.HTTPError as err:
                errors[type(err).__name__] += 1
                continue
            t1 = time.perf_counter()
            if response.status_code != 200:
                errors[str(response.json().get("error", {}).get("code", response.status_code))] += 1
                continue
            check_fresh(response.json(), epsilon, f"{cell.query.key} over HTTP")
            if t0 >= t_start and t1 <= t_end:
                latencies.append(t1 - t0)
    with lock:
        cell.latencies += latencies
        cell.errors.update(errors)


def run_load(
    server: Server, token: str, cell: Cell, epsilons: Epsilons, warmup: float, tick: Callable[[float], None]
) -> Cell:
    """``cell.clients`` client threads for ``warmup + cell.seconds``; fills in the cell. ``tick`` gets the
    seconds elapsed, for a progress bar."""
    lock = threading.Lock()
    window = Window(cell.clients)
    threads = [
        threading.Thread(
            target=client_loop, args=(server.url, token, cell, epsilons, window, lock), daemon=True
        )
        for _ in range(cell.clients)
    ]
    for thread in threads:
        thread.start()
    window.ready.wait()
    window.open(warmup, cell.seconds)
    begun, meter = time.perf_counter(), CpuMeter(server.pid)
    for until, then in ((window.start, meter.start), (window.end, meter.stop)):
        while (now := time.perf_counter()) < until:
            tick(now - begun)
            time.sleep(min(0.1, max(0.0, until - now)))
        then()
    cell.cpu = meter
    for thread in threads:
        thread.join()
    tick(warmup + cell.seconds)
    return cell


def http_floor(url: str, n: int) -> list[float]:
    """Latencies of ``GET /healthz`` (routing only: no token, no query) over one kept-alive connection."""
    import httpx

    out = []
    with httpx.Client(base_url=url, timeout=30) as client:
        for i in range(n + 10):
            t0 = time.perf_counter()
            client.get("/healthz")
            if i >= 10:
                out.append(time.perf_counter() - t0)
    return out


def run_sequential(url: str, token: str, query: Query, epsilons: Epsilons, n: int) -> list[float]:
    """``n`` queries one after another over one kept-alive connection (after 3 untimed)."""
    import httpx

    out = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as client:
        for i in range(n + 3):
            epsilon = epsilons.next()
            t0 = time.perf_counter()
            response = client.post("/v1/query", json={"sql": query.dp(epsilon)})
            elapsed = time.perf_counter() - t0
            response.raise_for_status()
            check_fresh(response.json(), epsilon, f"{query.key} over HTTP")
            if i >= 3:
                out.append(elapsed)
    return out
