"""The warm process: import once, then fork a fresh copy of itself for each command that connects.

Per connection it forks a *keeper*, which reads the request, checks that the code it imported is still what
is on disk, and forks the command (``become``); the keeper relays the caller's signals to the command and
sends back its wait status. The warm process itself never reads a request, opens a database or runs a
command: a crash or a hostile request takes down one keeper, never the next command's state. Keepers are
reaped by the kernel (SIGCHLD ignored), so nothing grows with the commands served.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import importlib.machinery
import os
import select
import signal
import socket
import sys
import time
from typing import Any, NoReturn

from privdb.cli.warm import address, become, wire

__all__ = ["serve"]

#: What a query, an explanation, a budget or a grant loads before it reads anything: imported once here.
#: Nothing that starts a thread as it imports (pandas and Arrow start jemalloc's): a fork copies only the
#: thread that forks, and a lock another thread held stays held in the copy (tests/test_warm.py checks the
#: warm process has one thread).
PRELOAD = (
    "privdb.cli.commands",
    "privdb.cli.options",
    "privdb.api",
    "privdb.database",
    "privdb.sql.engine",
    "privdb.mechanisms.randomness",
    "duckdb",
    "sqlglot.dialects.duckdb",
    "numpy",
    "rich.console",
    "rich.table",
    "typer.main",
)
DEFAULT_IDLE = 600.0
# what makes a directory's entry a module that shadows one further down the path (a plain directory does not:
# it is only a namespace portion, which any regular module or package later on the path wins over)
_MODULE_FILES = (".py", ".pyc", os.sep + "__init__.py", *importlib.machinery.EXTENSION_SUFFIXES)


def serve(path: str, search: list[str]) -> None:
    """Be the warm process for ``path`` until idle for ``PRIVDB_WARM_IDLE`` seconds (or stale)."""
    lock = _only_one(path)
    if lock is None:
        return  # another warm process already serves (or is starting to serve) this socket
    start = os.getcwd()
    sys.path[:] = [start if entry == address.HERE else entry for entry in search]
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    idle = _idle_seconds()
    files = _loaded_files()
    shadows = _top_level_names()
    os.chdir("/")
    os.environ.clear()  # whatever the first caller's environment held is not kept here
    listener = _listen(path)
    mine, warm = _inode(path), os.getpid()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    # (a keeper forked before it resets this must not leave in the warm process's stead: the pid check)
    signal.signal(signal.SIGTERM, lambda *_: _leave(listener, path, mine if os.getpid() == warm else None))
    listener.settimeout(idle)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            _leave(listener, path, mine)
        except OSError:
            continue
        if _inode(path) != mine:  # the socket was removed or replaced: another warm process took over
            conn.close()
            _leave(listener, path, None)
        if wire.peer_uid(conn) != os.getuid():
            conn.close()
            continue
        try:
            pid = os.fork()
        except OSError:
            conn.close()
            continue
        if pid == 0:  # the keeper: whatever happens in it, it never returns into this loop
            try:
                listener.close()
                os.close(lock)
                _keeper(conn, files, shadows, start, warm)
            finally:
                os._exit(1)
        conn.close()


def _only_one(path: str) -> int | None:
    """The lock that makes this the one warm process of ``path`` (its pid written in), or None if another
    serves it. A warm process that is ending (its code changed) may still hold the lock a moment: wait for
    it, up to 3 s, unless the socket answers (then another one is serving)."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    for _ in range(30):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if _answers(path):
                break
            time.sleep(0.1)
    else:
        os.close(fd)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get("PRIVDB_WARM_IDLE", DEFAULT_IDLE)))
    except ValueError:
        return DEFAULT_IDLE


def _listen(path: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fresh = f"{path}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    old = os.umask(0o177)
    try:
        listener.bind(fresh)
    finally:
        os.umask(old)
    listener.listen(64)
    os.replace(fresh, path)  # atomic: a caller sees the old socket or this one, never none
    return listener


def _leave(listener: socket.socket, path: str, mine: int | None) -> NoReturn:
    """End the warm process, removing its socket if it is still its own (``mine``: the socket's inode)."""
    if mine is not None and _inode(path) == mine:
        with contextlib.suppress(OSError):
            os.unlink(path)
    listener.close()
    os._exit(0)


def _inode(path: str) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def _loaded_files() -> dict[str, int]:
    """Each loaded module's source file and its modification time (ns), to tell when the code changed."""
    found = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            with contextlib.suppress(OSError):
                found[file] = os.stat(file).st_mtime_ns
    return found


def _top_level_names() -> dict[str, str]:
    """Each loaded top-level module and the directory of ``sys.path`` it came from."""
    names = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not isinstance(file, str):
            continue
        names[name] = os.path.dirname(os.path.dirname(file) if file.endswith("__init__.py") else file)
    return names


def _changed(files: dict[str, int]) -> bool:
    for file, mtime in files.items():
        try:
            if os.stat(file).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def _shadowed(request: dict[str, Any], shadows: dict[str, str], start: str) -> bool:
    """Would a fresh process in the caller's directory import a loaded top-level module from elsewhere?"""
    if address.HERE not in request.get("path", ()):
        return False
    cwd = str(request.get("cwd", ""))
    for name, came_from in shadows.items():
        if came_from == start and cwd != start:
            return True  # found in the directory the warm process started in, which this caller is not in
        if came_from != cwd and any(os.path.exists(os.path.join(cwd, name + end)) for end in _MODULE_FILES):
            return True
    return False


def _keeper(
    conn: socket.socket, files: dict[str, int], shadows: dict[str, str], start: str, warm: int
) -> NoReturn:
    """Check, fork the command, relay signals to it, report how it ended; always exits. ``warm``: the warm
    process's pid (told to end when the code changed, if it is still this keeper's parent)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        request, fds = wire.read_request(conn)
    except (OSError, ValueError):
        os._exit(0)
    if _changed(files):  # the code on disk is not what was imported: cold this time, a new warm process next
        if os.getppid() == warm:  # (else it has ended already, and this keeper was adopted by another)
            os.kill(warm, signal.SIGTERM)
        _refuse(conn, fds, wire.STALE)
        os._exit(0)
    if _shadowed(request, shadows, start):
        _refuse(conn, fds)
        os._exit(0)
    try:
        pid = os.fork()
    except OSError:
        _refuse(conn, fds)
        os._exit(0)
    if pid == 0:
        conn.close()
        become.command(request, fds)
    try:  # from here the command runs: whatever fails in this keeper, the command does not run on alone
        for fd in fds:
            os.close(fd)
        ended = _ended(pid)
        conn.sendall(wire.GO)
        _relay(conn, pid, ended)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    os._exit(0)


def _refuse(conn: socket.socket, fds: list[int], answer: bytes = wire.COLD) -> None:
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):
        conn.sendall(answer)


def _relay(conn: socket.socket, pid: int, ended: int | None) -> None:
    """Forward the caller's signals until the command ends, then send its wait status. ``ended``: a pidfd
    of the command (None where the kernel has none: then its end is looked for every 20 ms)."""
    watched = [conn.fileno(), *([ended] if ended is not None else [])]
    status = None
    try:
        while status is None:
            ready, _, _ = select.select(watched, [], [], None if ended is not None else 0.02)
            if ended is None:
                done, found = os.waitpid(pid, os.WNOHANG)
                status = found if done else None
            elif ended in ready:
                status = os.waitpid(pid, 0)[1]
            if status is not None or conn.fileno() not in ready:
                continue
            try:
                got = conn.recv(64)
            except OSError:
                got = b""
            if not got:  # the caller died without a word (SIGKILL): so does its command
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            for signum in got:
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
    finally:
        if ended is not None:
            os.close(ended)
    with contextlib.suppress(OSError):
        wire.send_status(conn, os.waitstatus_to_exitcode(status))


def _ended(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (a pidfd; None where the kernel has none)."""
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return None
