"""Which process owns a reservation, and whether that process is known to be dead.

A reservation records its process (``spends.pid``) and, beside it, an *owner* identity that tells a dead
process from a live one without guessing: ``linux:<boot id>:<pid namespace>:<start>``, the kernel's boot id
(``/proc/sys/kernel/random/boot_id``: new at every boot), the inode of the process's pid namespace (a
container has its own pids) and the process's start time in clock ticks after boot (``/proc/<pid>/stat``
field 22: a pid used again later starts later). A process is *known dead* when

* it ran in this pid namespace of this boot and no process has its pid now, or the one that has it started
  at another time (its pid was reused); or
* the ledger is a SQLite file and the boot id is another one: SQLite's WAL mode works only among
  processes of one host (its shared memory), so a file whose writer ran in an earlier boot of this host —
  or on a host it was copied from — has no live writer from that boot.

Anything else is unknown — another container on this host, another host sharing a PostgreSQL ledger, a
process of another user whose start time cannot be read, a system without ``/proc``, a row written before
owners were recorded — and an unknown process is treated as alive: its reservation keeps counting
(privdb.accounting.restart), on the side of the people in the data.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["is_dead", "this_process"]

_PROC = Path("/proc")
_MINE: dict[int, str | None] = {}  # pid → its owner identity (a forked child has its own pid)


def this_process() -> str | None:
    """The calling process's owner identity, or None where the system gives none (no ``/proc``)."""
    pid = os.getpid()
    if pid not in _MINE:
        space, start = _space(), _start(pid)
        _MINE[pid] = None if space is None or start is None else f"linux:{space}:{start}"
    return _MINE[pid]


def is_dead(owner: str | None, pid: int, *, one_host: bool) -> bool:
    """Whether the process ``pid`` with identity ``owner`` is known to be dead (module doc); ``one_host``:
    the ledger can only be shared by processes of one host (a SQLite file)."""
    mine = this_process()
    if owner is None or mine is None:
        return False
    theirs, ours = owner.split(":"), mine.split(":")
    if len(theirs) != 4 or theirs[0] != "linux":
        return False
    boot, namespace, start = theirs[1], theirs[2], theirs[3]
    if boot != ours[1]:
        return one_host  # this host rebooted since (a SQLite file), or another host (unknown)
    if namespace != ours[2]:
        return False  # another container's pids: not ours to look at
    try:
        os.kill(pid, 0)  # signal 0: only asks whether a process has that pid
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # a process of another user has that pid: its start time tells whether it is the owner
    stat = _stat(pid)
    if stat is None:
        return False
    state, now = stat
    return now != start or state in ("Z", "X")  # another process with its pid, or itself ended (a zombie)


def _space() -> str | None:
    """``<boot id>:<pid namespace inode>`` of this process, or None."""
    try:
        boot = (_PROC / "sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.readlink(_PROC / "self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return None
    inode = namespace.partition("[")[2].rstrip("]")
    if not boot or not inode.isdigit() or ":" in boot:
        return None
    return f"{boot}:{inode}"


def _start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks after boot, or None if it cannot be read."""
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _stat(pid: int) -> tuple[str, str] | None:
    """Process ``pid``'s state letter (``R``, ``S``, … ``Z`` for a zombie) and start time, or None."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name (field 2) may hold spaces and parentheses
    # fields 3 (the state) and 22 (the start time) of the line are the 1st and 20th after the name
    if len(fields) < 20 or not fields[19].isdigit():
        return None
    return fields[0], fields[19]
