"""A free TCP port on loopback for a server a benchmark or test starts (standard library only).

Asking the kernel for port 0 and closing the socket hands back a port from the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``, 32768–60999 on Linux), the range every outgoing connection
takes its local port from: on a machine running other work (the test suite's second worker opens
thousands of connections) one of them can take the port before the server binds it, and the server fails
with "Address already in use" (CI saw this on a restarted server's PostgreSQL port). So the port is drawn
below the ephemeral range, where no outgoing connection lands, and checked free by binding it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # above the registered services most machines run
_DRAW = random.SystemRandom()
_HANDED: set[int] = set()  # ports this process handed out: two draws before either server binds differ


def _ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing listens on now and no outgoing connection will be given."""
    top = _ephemeral_start()
    for _ in range(200):
        # a machine whose ephemeral range starts below 10,100 leaves no room: the kernel's choice then
        port = _DRAW.randrange(_LOWEST, top) if top > _LOWEST + 100 else 0
        if port in _HANDED:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            chosen = int(s.getsockname()[1])
        _HANDED.add(chosen)
        return chosen
    raise RuntimeError(f"no free port on {host} between {_LOWEST} and {top} after 200 tries")
