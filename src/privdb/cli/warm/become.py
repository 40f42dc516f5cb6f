"""What a forked copy of the warm process does to become the caller's command, then runs it.

It takes the caller's standard streams (its descriptors, shaped as the caller's interpreter made them),
working directory, umask, environment (and time zone), resource limits (lowered to the caller's, never
raised), niceness, CPU affinity and module search path, resets the signal dispositions a fresh interpreter
has, and runs ``privdb``'s own entry point on the caller's argument list. Its exit, ``atexit`` work
included, is the command's.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import resource
import signal
import sys
import time
import traceback
from typing import Any, NoReturn

from privdb.cli.entry import leave, run_here
from privdb.cli.warm import address

__all__ = ["command"]


def command(request: dict[str, Any], fds: list[int]) -> NoReturn:
    code = 1
    try:
        _die_with_keeper()
        _adopt(request, fds)
        code = run_here()
    except KeyboardInterrupt:  # a Ctrl-C before privdb's own handler was installed: as a cold start says it
        with contextlib.suppress(Exception):
            sys.stderr.write("interrupted\n")
        code = 130
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    leave(code)


def _die_with_keeper() -> None:
    """SIGKILL when the keeper dies (``PR_SET_PDEATHSIG``): a command never runs on with nobody to report
    its status, nor to relay its caller's signals."""
    keeper = os.getppid()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != keeper:  # it died before the request took effect
        os._exit(1)


def _adopt(request: dict[str, Any], fds: list[int]) -> None:
    for sig in (
        signal.SIGCHLD,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    time.tzset()
    for name, (soft, hard) in request.get("limits", {}).items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        with contextlib.suppress(ValueError, OSError):
            _, now_hard = resource.getrlimit(which)
            hard = hard if now_hard == resource.RLIM_INFINITY or 0 <= hard <= now_hard else now_hard
            resource.setrlimit(which, (min(soft, hard) if hard != resource.RLIM_INFINITY else soft, hard))
    with contextlib.suppress(OSError, ValueError, TypeError):  # `nice privdb …`: lowered, never raised
        os.setpriority(os.PRIO_PROCESS, 0, max(int(request["nice"]), os.getpriority(os.PRIO_PROCESS, 0)))
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):  # `taskset -c 0 privdb …`
        os.sched_setaffinity(0, [int(c) for c in request["cpus"]])
    sys.path[:] = [request["cwd"] if entry == address.HERE else entry for entry in request["path"]]
    sys.argv = ["privdb", *request["argv"]]
    _streams(request.get("streams") or [])
    random.seed()  # (already reseeded by CPython at fork; NumPy's legacy global state is not)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _streams(shapes: list[list[Any]]) -> None:
    """``sys.stdin``/``stdout``/``stderr`` over descriptors 0–2, shaped as the caller's interpreter made its
    own (encoding, errors, line buffering, write-through, a raw binary layer under ``-u``): the caller knows
    whether each is a terminal and how Python was told to buffer it."""
    made = []
    for fd, mode in ((0, "r"), (1, "w"), (2, "w")):
        shape = list(shapes[fd]) if fd < len(shapes) and shapes[fd] else []
        encoding, errors, line, through, raw_layer = (shape + [None] * 5)[:5]
        raw = open(fd, mode + "b", buffering=-1 if fd == 0 else 0, closefd=False)  # noqa: SIM115
        layer: Any = raw if fd == 0 or raw_layer else io.BufferedWriter(raw)
        made.append(
            io.TextIOWrapper(
                layer,
                encoding=encoding or "utf-8",
                errors=errors or "strict",
                line_buffering=bool(line),
                write_through=bool(through),
            )
        )
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made  # type: ignore[misc]
