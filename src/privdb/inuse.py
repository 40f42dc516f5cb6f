"""Who holds a database directory: the marker a running ``privdb serve`` leaves in it, and the message the
owner gets when a ``--db`` command meets the DuckDB lock that server holds.

DuckDB lets one process write a data file at a time, so while ``privdb serve`` runs, the owner's ``privdb
sql --db`` cannot open it. The server writes ``DIR/serve.json`` (its pid and URL) while it runs, so the
refusal can say where the same command works: over the server, with ``--url`` and an owner token. The marker
is a hint, never trusted for access: a stale one (its process gone) is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from privdb.errors import DatabaseInUse
from privdb.private_files import open_private

__all__ = ["MARKER", "announce", "in_use", "running_server", "served_already"]

MARKER = "serve.json"


@contextlib.contextmanager
def announce(directory: str | Path, url: str) -> Iterator[None]:
    """Write the marker for the lifetime of the block (a server's run); remove it after, if still ours. A
    live server's marker is never replaced (``DatabaseInUse``, see :func:`served_already`); a dead one's
    is."""
    path = Path(directory) / MARKER
    mine = {"pid": os.getpid(), "url": url}
    _claim(path, directory, json.dumps(mine))
    # uvicorn shuts down gracefully on SIGTERM and then raises it again for the handler it found: make that
    # handler unwind this block (exit status 143, as the default's) instead of ending the process at once
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_term) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        if running_server(directory) in (mine, None):
            path.unlink(missing_ok=True)


def _claim(path: Path, directory: str | Path, text: str) -> None:
    """Create the marker only if no live server holds one (exclusive creation: of two servers starting at
    once, one wins); a stale marker (its process gone, or this one's) is replaced."""
    for _ in range(2):
        try:
            with open_private(path, exclusive=True, encoding="utf-8") as out:  # owner-only: 0600
                out.write(text)
            return
        except FileExistsError:
            refusal = served_already(directory)
            if refusal is not None:
                raise refusal from None
            path.unlink(missing_ok=True)  # stale: its server died without removing it
    refusal = served_already(directory)
    raise (
        refusal
        if refusal is not None
        else DatabaseInUse(f"another `privdb serve` is starting on {path.parent}")
    )


def served_already(directory: str | Path) -> DatabaseInUse | None:
    """The refusal for a second ``privdb serve`` on a directory a live server (another process) serves."""
    server = running_server(directory)
    if server is None or server["pid"] == os.getpid():
        return None
    return DatabaseInUse(
        f"the database {str(directory)!r} is served already by `privdb serve` (pid {server['pid']}) at "
        f"{server['url']}; use that server (--url {server['url']}) or stop it first",
        int(server["pid"]),
    )


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def running_server(directory: str | Path) -> dict[str, int | str] | None:
    """The marker's pid and URL if its process is alive, else None."""
    try:
        found = json.loads((Path(directory) / MARKER).read_text(encoding="utf-8"))
        pid, url = int(found["pid"]), str(found["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, under another user
    return {"pid": pid, "url": url}


def in_use(directory: str | Path, holder: int | None) -> DatabaseInUse:
    """The refusal for a command that needs the data file while another process holds it: it names the
    server (pid, URL) when one runs on this directory, else the holding process, and what to do."""
    where = str(directory)
    server = running_server(directory)
    if server is not None:
        url = server["url"]
        return DatabaseInUse(
            f"the database {where!r} is in use by a running `privdb serve` (pid {server['pid']}); run the "
            f"command over the server: --url {url} --token <owner token> (`privdb token --db {where}` "
            "issues one), or stop the server first",
            holder,
        )
    who = f"another process (pid {holder})" if holder is not None else "another process"
    return DatabaseInUse(
        f"the database {where!r} is in use by {who}; wait for it or stop it, and if it is a `privdb serve`, "
        "run the command over the server: --url URL --token <owner token>",
        holder,
    )
