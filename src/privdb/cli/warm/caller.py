"""The ``privdb`` side of a warm start: hand the command over, relay signals, end as the command ended."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import sys
from typing import Any

from privdb.cli.warm import address, wire

__all__ = ["hand_over"]

# commands that always start cold: a server belongs to the service (its cgroup, its supervisor) that ran it;
# a load holds the database's write lock for its whole run, and a caller's kill -9 must free it at once
COLD_COMMANDS = frozenset({"serve", "load"})
_PLAIN_ENV = frozenset({"PATH", "HOME", "TMPDIR", "PRIVDB_WARM_IDLE"})
_RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: How long a caller waits for the warm process to take its command (connect, hand over, the keeper's
#: checks) before it runs the command itself.
HAND_OVER_SECONDS = 5.0


def hand_over(argv: list[str]) -> None:
    """Run ``argv`` in the user's warm process and exit as it ended; return (doing nothing visible) where
    there is none to use, after starting one for the next command. Linux only (the peer checks and the
    keeper's process descriptors are Linux's); elsewhere every command starts cold."""
    if sys.platform != "linux" or address.disabled() or (argv and argv[0] in COLD_COMMANDS):
        return
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: the cold start reports it as usual
        return
    path = address.socket_path(cwd)
    if path is None:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HAND_OVER_SECONDS)  # a stopped or stuck warm process: run cold, never hang
    try:
        sock.connect(path)
        if wire.peer_uid(sock) != os.getuid():
            raise ConnectionRefusedError(path)
    except OSError:
        sock.close()
        _start_warm_process(path, cwd)
        return
    fds, opened = _streams()
    # the relayed signals wait (blocked) from the hand-over until the relays are in place: the command may
    # start before this process reads GO, and a Ctrl-C or Ctrl-Z then must reach it, not only this process
    held = {*_RELAYED, signal.SIGTSTP}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        wire.send_request(sock, _request(argv, cwd), fds)
        answer = sock.recv(1)
    except OSError:
        answer = b""
    finally:
        for fd in opened:
            os.close(fd)
    if answer != wire.GO:  # refused: this command runs cold (and, if the code changed, starts a new warm one)
        sock.close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # a Ctrl-C meanwhile: "interrupted", 130 (by main)
        if answer in (wire.STALE, b""):
            _start_warm_process(path, cwd)
        return
    sock.settimeout(None)  # the command's own time from here
    for sig in _RELAYED:
        signal.signal(sig, _relay(sock))
    signal.signal(signal.SIGTSTP, _suspend(sock))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, held)  # what arrived meanwhile is relayed now
    _end_as(wire.read_status(sock))


def _relay(sock: socket.socket) -> Any:
    def relay(signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            sock.send(bytes([signum]))

    return relay


def _suspend(sock: socket.socket) -> Any:
    """Ctrl-Z: stop the command (SIGSTOP: it runs in another session, where a terminal's SIGTSTP would be
    ignored), stop here; once continued (``fg``), continue it."""

    def suspend(_signum: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            sock.send(bytes([signal.SIGSTOP]))
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # this process stops here until SIGCONT
        signal.signal(signal.SIGTSTP, suspend)
        with contextlib.suppress(OSError):
            sock.send(bytes([signal.SIGCONT]))

    return suspend


def _streams() -> tuple[list[int], list[int]]:
    """Descriptors 0, 1, 2 (a closed one replaced by /dev/null) and those opened here to be closed."""
    fds, opened = [], []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            fds.append(null)
            opened.append(null)
    return fds, opened


def _request(argv: list[str], cwd: str) -> dict[str, Any]:
    umask = os.umask(0o022)
    os.umask(umask)
    limits = {}
    for name in address.LIMITS:
        if hasattr(resource, name):
            limits[name] = list(resource.getrlimit(getattr(resource, name)))
    streams = [_shape(s) for s in (sys.stdin, sys.stdout, sys.stderr)]
    return {
        "argv": argv,
        "cwd": cwd,
        "env": dict(os.environ),
        "umask": umask,
        "limits": limits,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "cpus": sorted(os.sched_getaffinity(0)),
        "path": address.search_path(cwd),
        "streams": streams,
    }


def _shape(stream: Any) -> list[Any]:
    """How this interpreter made a standard stream: encoding, errors, line buffering, write-through, and
    whether its binary layer is raw (``-u``)."""
    if stream is None:
        return []
    buffer = getattr(stream, "buffer", None)
    return [
        getattr(stream, "encoding", None),
        getattr(stream, "errors", None),
        bool(getattr(stream, "line_buffering", False)),
        bool(getattr(stream, "write_through", False)),
        buffer is not None and not hasattr(buffer, "raw"),
    ]


def _end_as(status: int | None) -> None:
    """Exit with the command's status, or die of the signal that ended it (as a cold command would)."""
    sys.stdout.flush()
    if status is None:  # the keeper is gone (the warm process was killed): say so, never a silent 0
        sys.stderr.write("error [internal]: the warm privdb process ended before the command; run it again\n")
        os._exit(1)
    if status < 0:
        with contextlib.suppress(OSError, ValueError):  # (SIGKILL's disposition cannot be set, nor needs it)
            signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        os._exit(128 - status)
    os._exit(status)


def _start_warm_process(path: str, cwd: str) -> None:
    """Start the warm process for ``path`` in the background (its own session, no streams of ours)."""
    import json
    import subprocess

    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    # only what its imports read (the key's variables) and where to find things: never the caller's tokens
    # or passwords, which a process's /proc/PID/environ would show for its whole life
    env = {k: v for k, v in os.environ.items() if k.startswith(address.IMPORT_ENV) or k in _PLAIN_ENV}
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, *flags, "-m", "privdb.cli.warm", path, json.dumps(address.search_path(cwd))],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,
            cwd="/",
            env=env,
        )
