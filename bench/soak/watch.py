"""The server process's open file descriptors (/proc/PID/fd), threads (/proc/PID/status ``Threads``) and
resident memory (``VmRSS``), sampled every few seconds by a thread."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import memory


@dataclass(frozen=True)
class Sample:
    at: float  # s since the run's clock started
    fds: int
    threads: int
    rss_mib: float


def sample(pid: int, clock: float) -> Sample | None:
    """The process's figures now; None once it is gone."""
    fields = memory.status(pid)
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if not fields:
        return None
    threads = int(fields.get("Threads", "0").strip() or 0)
    return Sample(time.perf_counter() - clock, fds, threads, memory.kib(fields, "VmRSS") / 1024)


def open_files_limit(pid: int) -> int | None:
    """The process's soft limit of open files (/proc/PID/limits), None where unknown or unlimited."""
    try:
        text = Path(f"/proc/{pid}/limits").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return int(soft) if soft.isdigit() else None
    return None


@dataclass
class Watch:
    """Samples ``pid`` every ``interval`` seconds from ``start()`` to ``stop()``."""

    pid: int
    clock: float
    interval: float
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def take(self) -> Sample | None:
        found = sample(self.pid, self.clock)
        if found is not None:
            self.samples.append(found)
        return found

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.take()

    def start(self) -> None:
        self.take()
        self._thread = threading.Thread(target=self._run, name="soak-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.take()

    def between(self, start: float, end: float) -> list[Sample]:
        return [s for s in self.samples if start <= s.at <= end]
