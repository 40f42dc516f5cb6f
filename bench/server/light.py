"""A light load generator: wrk (Debian's ``wrk``, ``make bench-tools``) with bench/server/query.lua, so that
the clients take little of the CPU the server shares with them on one machine. The Python clients of
load.py cost about 0.7 ms of CPU per request (httpx, JSON, threads under the GIL); wrk costs a fraction of
that, measured per run (``client_cpu_ms``). Every answer is still checked, in the Lua script: a 200 with a
JSON answer charged exactly the ε its request asked for and not from privdb's store; anything else is
counted as an error and not as an answer."""

from __future__ import annotations

import json
import math
import re
import resource
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.query import Query
from bench.server.load import CpuMeter, Server

SCRIPT = Path(__file__).with_name("query.lua")
BLOCK = 1_000_000  # request numbers a wrk thread may use in one run (query.lua's BLOCK)
INSTALL = "wrk is not installed: `make bench-tools` (Debian: apt-get install wrk), or use --client python"


@dataclass
class LightCell:
    """One load by wrk: ``clients`` connections over ``threads`` wrk threads for ``seconds`` (rounded to
    whole seconds, at least 1, as wrk takes them; q/s is over the run's length as wrk measured it)."""

    query: Query
    clients: int
    seconds: float
    threads: int = 2
    answered: int = 0
    window: float = math.nan  # s, as wrk measured its run
    errors: Counter[str] = field(default_factory=Counter)
    p50_ms: float = math.nan
    p99_ms: float = math.nan
    cpu: CpuMeter | None = None
    client_cpu: float = math.nan  # s of CPU wrk spent in the timed run

    @property
    def qps(self) -> float:
        return self.answered / self.window if self.answered else 0.0

    @property
    def server_cpu_ms(self) -> float:
        return 1000 * self.cpu.server / self.answered if self.cpu and self.answered else math.nan

    @property
    def client_cpu_ms(self) -> float:
        return 1000 * self.client_cpu / self.answered if self.answered else math.nan


def template(query: Query) -> str:
    """The DP-SELECT with ``%s`` where its ε goes (query.lua formats it)."""
    marker = 123.25
    text = query.dp(marker)
    if text.count(repr(marker)) != 1 or "%" in text:
        raise ValueError(f"{query.key}: cannot make a wrk template of {text!r}")
    return text.replace(repr(marker), "%s")


class Wrk:
    """Runs wrk against one database directory; request numbers (hence ε values) never repeat across runs."""

    def __init__(self, token: str, first: int = 0) -> None:
        self.binary = shutil.which("wrk")
        if self.binary is None:
            raise RuntimeError(INSTALL)
        self.token, self.first = token, first

    def _run(self, server: Server, cell: LightCell, seconds: float) -> dict[str, object]:
        threads = min(cell.threads, cell.clients)
        whole = max(1, round(seconds))  # wrk takes whole seconds
        command = [self.binary or "wrk", "-t", str(threads), "-c", str(cell.clients), f"-d{whole}s"]
        command += ["--timeout", "60s", "-s", str(SCRIPT), server.url, "--"]
        command += [self.token, str(self.first), template(cell.query)]
        self.first += threads * BLOCK
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        found = re.search(r"^RESULT (\{.*\})$", done.stdout, re.MULTILINE)
        if done.returncode != 0 or found is None:
            raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr.strip() or done.stdout[-500:]}")
        result: dict[str, object] = json.loads(found.group(1))
        return result

    def load(self, server: Server, cell: LightCell, warmup: float) -> LightCell:
        """A warm-up run (not counted), then the timed run: answers, errors, latency, CPU."""
        if warmup > 0:
            self._run(server, cell, warmup)
        meter = CpuMeter(server.pid)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        meter.start()
        result = self._run(server, cell, cell.seconds)
        meter.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cell.cpu = meter
        cell.client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cell.answered = int(str(result["answered"]))
        cell.window = float(str(result["seconds"]))
        cell.p50_ms, cell.p99_ms = float(str(result["p50_ms"])), float(str(result["p99_ms"]))
        for kind in str(result["statuses"]).split():
            code, _, n = kind.rpartition("×")
            cell.errors[code] += int(n)
        for key in ("stale", "socket_errors"):
            if int(str(result[key])):
                cell.errors[key] += int(str(result[key]))
        return cell
