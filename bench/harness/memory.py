"""Memory and CPU read from /proc (Linux): this process's peak resident set (resettable), a process tree's
resident set and CPU time, the whole machine's busy time. Standard library only (used inside peer venvs)."""

from __future__ import annotations

import contextlib
import os
import resource
import threading
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def reset_peak() -> bool:
    """Reset this process's peak resident set (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    except OSError:
        return False
    return True


def status(pid: int | str = "self") -> dict[str, str]:
    """/proc/PID/status as a dict of its fields ({} where the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return {}
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def kib(fields: dict[str, str], key: str) -> int:
    """A memory field of a status dict (``VmHWM``, ``VmRSS``) in KiB; 0 where it is missing."""
    value = fields.get(key, "0 kB").split()
    return int(value[0]) if value else 0


def status_mib(field: str) -> float | None:
    """A memory figure of /proc/self/status (``VmHWM``, ``VmRSS``) in MiB; None where there is none."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return None


def peak_mib() -> float:
    """This process's peak resident set since the last reset (or since it started), in MiB."""
    peak = status_mib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


def _processes() -> tuple[dict[int, list[int]], dict[int, float]]:
    """Every process's children and CPU seconds (user + system), from /proc/*/stat."""
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / _TICK
    return children, cpu


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants."""
    children, _ = _processes()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_peaks(root: int) -> dict[int, tuple[str, int]]:
    """Each process of ``root``'s tree: its command line (arguments joined by spaces) and its peak
    resident memory (``VmHWM``) in KiB (0 for one that ended between the two reads; left out if it ended
    before)."""
    out: dict[int, tuple[str, int]] = {}
    for pid in process_tree(root):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out[pid] = (line.strip(), kib(status(pid), "VmHWM"))
        except OSError:
            continue
    return out


def process_tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its descendants."""
    children, cpu = _processes()
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy (all cores, from /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text(encoding="utf-8").split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICK


class TreeSampler:
    """Samples the summed RSS of a process tree every ``interval`` seconds; remembers the peak."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        self.root, self.interval, self.peak_kib = root, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = sum(kib(status(pid), "VmRSS") for pid in process_tree(self.root))
            self.peak_kib = max(self.peak_kib, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
