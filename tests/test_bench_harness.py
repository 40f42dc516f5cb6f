"""The benchmark harness's own helpers that tests and benchmarks share: a free port below the kernel's
ephemeral range, and the peak memory of each process in a tree."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from typing import Any

import pytest
from bench.harness import memory, ports


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    top = ports._ephemeral_start()
    seen = {ports.free_port() for _ in range(20)}
    assert all(ports._LOWEST <= p < top for p in seen) and len(seen) > 1  # drawn, not one fixed port
    port = seen.pop()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it
        s.listen()


def test_a_taken_or_handed_port_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", ports.free_port()))
        held.listen()
        taken = held.getsockname()[1]
        handed = ports.free_port()
        script = [taken, taken, handed]  # then the real draws

        class Scripted(random.SystemRandom):
            def randrange(self, *args: Any, **kwargs: Any) -> int:
                return script.pop(0) if script else super().randrange(*args, **kwargs)

        monkeypatch.setattr(ports, "_DRAW", Scripted())
        assert ports.free_port() not in (taken, handed) and not script


def test_tree_peaks_names_each_process_with_its_peak() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; b = bytearray(64 << 20); sys.stdout.write('x\\n'); "
         "sys.stdout.flush(); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == b"x\n"  # its 64 MiB are touched
        peaks = memory.tree_peaks(os.getpid())
        line, kib = peaks[child.pid]
        assert "bytearray(64 << 20)" in line and kib >= 64 * 1024
        assert peaks[os.getpid()][1] > 0
    finally:
        child.kill()
        child.wait()
