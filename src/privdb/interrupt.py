"""Whether the person at the terminal pressed Ctrl-C (SIGINT) during this command.

An interrupt does not always arrive as ``KeyboardInterrupt``: DuckDB stops its query and raises its own
``RuntimeError("Query interrupted")``, which then looks like any engine failure (and a failed read is charged
and told "the engine failed"). The command line installs :func:`install`'s handler, which notes the signal
before raising ``KeyboardInterrupt`` as Python's default does; code that turns failures into messages asks
:func:`interrupted` first, so an interrupt ends as one: "interrupted", exit status 130. A server never
installs it (uvicorn handles its signals) and there :func:`interrupted` stays false.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["install", "interrupted", "settle"]

_SEEN = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _SEEN.set()
    raise KeyboardInterrupt


def install() -> None:
    """Note SIGINT from now on (main thread only: Python runs signal handlers there)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def interrupted() -> bool:
    """Whether SIGINT arrived since :func:`install`."""
    return _SEEN.is_set()


def settle() -> None:
    """After an interrupt was reported: ignore further SIGINTs while the process winds down, so a second
    Ctrl-C (or one the engine still had pending) cannot end it by a traceback or the signal itself."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
