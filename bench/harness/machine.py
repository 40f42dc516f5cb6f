"""Facts about the machine a benchmark ran on: CPU, cores, memory, load, library versions, commit, Java."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from bench.harness import ROOT


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        info = []
    models = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
    return models[0] if models else platform.processor() or platform.machine()


def memory_gib() -> float:
    """The machine's physical memory in GiB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def version(name: str) -> str:
    """An installed distribution's version, or "absent"."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def versions(names: Iterable[str]) -> str:
    """ "name version, name version, …" of installed distributions."""
    return ", ".join(f"{name} {version(name)}" for name in names)


def utc_now() -> str:
    """The time of the run, to the minute (UTC)."""
    return f"{datetime.now(UTC):%Y-%m-%d %H:%M}"


def load(sep: str = " / ", digits: int = 2) -> str:
    """The 1, 5 and 15-minute load averages."""
    return sep.join(f"{x:.{digits}f}" for x in os.getloadavg())


def commit() -> str:
    """The checkout's short commit ("" outside git)."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()


def java_version() -> str:
    """The version ``java -version`` reports ("?" without Java)."""
    try:
        said = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr
    except OSError:
        return "?"
    first = said.strip().splitlines()[0] if said.strip() else "?"
    return first.split('"')[1] if '"' in first else first


def describe(libs: str, *notes: str, memory: bool = True, stamp: bool = True) -> str:
    """The machine line of a section: CPU, cores (and memory), Python and ``libs``, then ``notes`` and the
    time of the run, separated by semicolons."""
    head = f"{cpu_model()}, {os.cpu_count()} CPUs" + (f", {memory_gib():.0f} GiB;" if memory else ",")
    parts = [f"{head} Python {platform.python_version()}, {libs}", *notes]
    if stamp:
        parts.append(f"{utc_now()} UTC")
    return "; ".join(parts)
