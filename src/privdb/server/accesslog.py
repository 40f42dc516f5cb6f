"""The access log off the event loop: uvicorn writes its access line (``uvicorn.access``) from the event
loop, formatting it and writing it to standard output (or the owner's handlers) before the loop serves the
next request. In each worker, for the time it serves, that logger's handlers move behind a queue: the loop
only puts the record on it, and one thread formats and writes the lines, in order, with the same handlers
(so the same format and destination, whatever ``--log-config`` set). The thread drains the queue when the
server stops.
"""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Iterator
from logging.handlers import QueueHandler, QueueListener

__all__ = ["off_the_loop"]

ACCESS = "uvicorn.access"


class _Handoff(QueueHandler):
    """Puts the record itself on the queue: the listener's handlers format it, in their thread (the
    standard QueueHandler formats it first, on the loop)."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


@contextlib.contextmanager
def off_the_loop(name: str = ACCESS) -> Iterator[None]:
    """While the block runs, the logger ``name``'s own handlers are fed by a thread through a queue."""
    logger = logging.getLogger(name)
    handlers = list(logger.handlers)
    if not handlers:  # nothing written by this logger itself (off, or propagated to the root's handlers)
        yield
        return
    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = QueueListener(lines, *handlers, respect_handler_level=True)
    handoff = _Handoff(lines)
    for handler in handlers:
        logger.removeHandler(handler)
    logger.addHandler(handoff)
    listener.start()
    try:
        yield
    finally:
        logger.removeHandler(handoff)
        listener.stop()  # writes what is queued, then ends the thread
        for handler in handlers:
            logger.addHandler(handler)
