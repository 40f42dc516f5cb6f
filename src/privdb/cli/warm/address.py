"""Where a user's warm process listens, and the key that keeps different interpreters apart.

Two ``privdb`` commands may share a warm process only if a fresh process of each would have imported the
same code the same way: the same interpreter and flags, the same module search path, the same privdb, the
same environment variables that Python or the libraries read as they import, the same user, groups, cgroup,
namespaces, seccomp and capabilities (so a service's or a sandbox's commands stay inside it), the same
niceness and hard resource limits (which a fork could lower, never raise back). All of that is hashed into
the socket's name.
"""

from __future__ import annotations

import hashlib
import os
import resource
import stat
import sys

__all__ = ["HERE", "disabled", "search_path", "socket_path"]

#: Marks the working directory in ``sys.path`` (``python -m privdb`` puts it first): the key does not
#: depend on where a command runs; the warm process refuses a directory that would shadow a loaded module.
HERE = "\0cwd"
_SUN_PATH = 107
# variables read at import time (by Python, NumPy's BLAS, DuckDB; Arrow and pandas, where a command loads
# them): another value, another process
# (and the locale: Python sets LC_CTYPE from it as it starts, and files opened without an encoding use it)
IMPORT_ENV: tuple[str, ...] = ("PYTHON", "OMP_", "OPENBLAS_", "MKL_", "NUMPY_", "NPY_", "DUCKDB_", "ARROW_")
IMPORT_ENV += ("PANDAS_", "TYPER_", "LANG", "LC_")
#: The resource limits a command takes from its caller (lowered to them; the hard ones are in the key, so a
#: warm process started under a lower hard limit never serves a caller with a higher one).
LIMITS: tuple[str, ...] = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE")
LIMITS += ("RLIMIT_STACK", "RLIMIT_CORE")
_NAMESPACES = ("mnt", "net", "pid", "user", "ipc", "uts", "cgroup")
_CONFINEMENT = ("NoNewPrivs:", "Seccomp:", "CapEff:", "CapBnd:")


def disabled() -> bool:
    """``PRIVDB_WARM=0`` (or off/no/false), or an interpreter that profiles or traces its imports."""
    if os.environ.get("PRIVDB_WARM", "1").strip().lower() in {"0", "off", "no", "false"}:
        return True
    return (
        "importtime" in sys._xoptions
        or bool(os.environ.get("PYTHONPROFILEIMPORTTIME"))
        or sys.flags.verbose > 0
    )


def search_path(cwd: str) -> list[str]:
    """``sys.path`` with the working directory (where it is an entry) replaced by :data:`HERE`."""
    return [HERE if entry in ("", cwd) else entry for entry in sys.path]


def _private_dir() -> str | None:
    """A directory only this user can enter (made 0700 if missing); None if none can be had safely."""
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    base = runtime if runtime and _owned_private(runtime, uid) else "/tmp"
    where = os.path.join(base, "privdb" if base == runtime else f"privdb-{uid}")
    try:
        os.mkdir(where, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return where if _owned_private(where, uid) else None


def _owned_private(path: str, uid: int) -> bool:
    try:
        info = os.lstat(path)  # a symbolic link is refused, not followed
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o077


def _confinement() -> list[str]:
    """What sandboxes a process (bwrap, firejail, unshare, a unit's PrivateNetwork): its namespaces, and its
    no-new-privileges, seccomp and capability lines; a sandboxed caller has a warm process inside its own."""
    found = []
    for space in _NAMESPACES:
        try:
            found.append(os.readlink(f"/proc/self/ns/{space}"))
        except OSError:
            found.append("")
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            found += [line.strip() for line in f if line.startswith(_CONFINEMENT)]
    except OSError:
        pass
    for attr in ("current", "exec"):  # the LSM label (AppArmor, SELinux)
        try:
            with open(f"/proc/self/attr/{attr}", encoding="utf-8", errors="replace") as f:
                found.append(f.read().strip("\0\n"))
        except OSError:
            found.append("")
    return found


def socket_path(cwd: str) -> str | None:
    """The socket of the warm process for this interpreter and user; None where there can be none."""
    where = _private_dir()
    if where is None:
        return None
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            cgroup = f.read()
    except OSError:
        cgroup = ""
    key = repr(
        (
            sys.executable,
            search_path(cwd),
            tuple(sys.flags),
            sys.warnoptions,
            sorted(sys._xoptions.items()),
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            os.getuid(),
            os.getgid(),
            sorted(os.getgroups()),
            cgroup,
            _confinement(),
            os.getpriority(os.PRIO_PROCESS, 0),  # `nice`: a command's niceness can be raised, not lowered
            [resource.getrlimit(getattr(resource, name))[1] for name in LIMITS if hasattr(resource, name)],
            sorted((k, v) for k, v in os.environ.items() if k.startswith(IMPORT_ENV)),
        )
    )
    path = os.path.join(where, f"warm-{hashlib.sha256(key.encode()).hexdigest()[:20]}.sock")
    # a Unix socket's address holds 107 bytes (the warm process first binds ``path.<pid>``): a deeper runtime
    # directory has no warm process, and its commands start cold
    return path if len(os.fsencode(path)) + 12 <= _SUN_PATH else None
