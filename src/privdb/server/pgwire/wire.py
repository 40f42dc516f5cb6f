"""The socket of one PostgreSQL client and pygwire's codec over it: messages in (with the start-up's
deadline, and no message longer than ``MAX_MESSAGE`` held), messages out (buffered, flushed in batches)."""

from __future__ import annotations

import socket
import time
from collections import deque
from dataclasses import dataclass, field

from pygwire import BackendConnection
from pygwire import messages as m
from pygwire.exceptions import PygwireError

__all__ = ["MAX_MESSAGE", "Closed", "TooLarge", "Unreadable", "Wire", "buffered"]

MAX_MESSAGE = 16 << 20  # bytes of one protocol message (HTTP's --max-body default)


class Closed(Exception):
    """The client went away (or must be dropped)."""


class TooLarge(Exception):
    """A message longer than ``MAX_MESSAGE``: refused as it arrives, before it is all held."""


def buffered(codec: BackendConnection) -> int:
    """Bytes the codec holds of messages not yet complete (pygwire keeps them in its decoder's buffer;
    tests/test_pgwire_limits.py pins that this is seen)."""
    decoder = getattr(codec, "_decoder", None)
    return len(getattr(decoder, "_buf", b"")) - int(getattr(decoder, "_pos", 0))


class Unreadable(Exception):
    """A message the codec cannot read (text not UTF-8, a malformed frame): it cannot go on."""


@dataclass
class Wire:
    """The socket, the codec and what is waiting to be written."""

    sock: socket.socket
    codec: BackendConnection = field(default_factory=lambda: BackendConnection(strict=False))
    inbox: deque[m.PGMessage] = field(default_factory=deque)
    out: bytearray = field(default_factory=bytearray)

    deadline: float | None = None  # time.monotonic() by which start-up must be done (None: no limit)

    def left(self) -> float:
        """Seconds left before the deadline (TimeoutError once it has passed)."""
        if self.deadline is None:
            return 1e9
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    def next(self) -> m.PGMessage:
        while not self.inbox:
            if self.deadline is not None:
                self.sock.settimeout(self.left())
            data = self.sock.recv(65536)
            if not data:
                raise Closed
            try:
                self.inbox.extend(self.codec.receive(data))
            except (UnicodeDecodeError, PygwireError) as err:
                raise Unreadable(str(err)) from None
            if buffered(self.codec) > MAX_MESSAGE:
                raise TooLarge
        return self.inbox.popleft()

    def send(self, msg: m.PGMessage) -> None:
        self.out += self.codec.send(msg)
        if len(self.out) > 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.sock.sendall(self.out)
            self.out.clear()
