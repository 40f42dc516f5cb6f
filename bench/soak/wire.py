"""PostgreSQL's v3 protocol spoken by hand, as a hostile client does: a start-up message, a cleartext
password, a simple query, and the SQLSTATE of each ErrorResponse. libpq (under psycopg) hides the SQLSTATE
of a refused connection in its message text; these few lines read it from the wire. Standard library only.
"""

from __future__ import annotations

import socket
import struct

PROTOCOL = 196608  # 3.0
TERMINATE = b"X\x00\x00\x00\x04"


class Closed(Exception):
    """The server closed the connection without a word."""


def startup(user: str, database: str = "privdb") -> bytes:
    """A StartupMessage for ``user`` on ``database``."""
    pairs = b"".join(f"{k}\0{v}\0".encode() for k, v in (("user", user), ("database", database)))
    body = struct.pack("!i", PROTOCOL) + pairs + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def frame(kind: bytes, body: bytes) -> bytes:
    """A typed message: its kind byte, length and body."""
    return kind + struct.pack("!i", len(body) + 4) + body


def password(text: str) -> bytes:
    return frame(b"p", text.encode() + b"\0")


def query(text: str) -> bytes:
    """A simple-protocol Query (several statements may be separated by semicolons)."""
    return frame(b"Q", text.encode() + b"\0")


def error_fields(body: bytes) -> dict[str, str]:
    """An ErrorResponse's or NoticeResponse's fields by their one-letter codes (``C``: the SQLSTATE)."""
    out: dict[str, str] = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


class Wire:
    """One client socket, read message by message."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    @classmethod
    def connect(cls, port: int, timeout: float) -> Wire:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> tuple[bytes, bytes]:
        """The next message's kind and body; Closed when the server closes first."""
        while True:
            if len(self.buffer) >= 5:
                (size,) = struct.unpack("!i", self.buffer[1:5])
                if len(self.buffer) >= 1 + size:
                    kind, body = bytes(self.buffer[:1]), bytes(self.buffer[5 : 1 + size])
                    del self.buffer[: 1 + size]
                    return kind, body
            data = self.sock.recv(65536)
            if not data:
                raise Closed
            self.buffer += data

    def close(self) -> None:
        self.sock.close()


def login(wire: Wire, user: str, secret: str) -> str | None:
    """Start a session as ``user`` with password ``secret``: None once the server is ready for queries,
    else the SQLSTATE of its refusal (at start-up or at the password)."""
    wire.send(startup(user))
    while True:
        kind, body = wire.read()
        if kind == b"E":
            return error_fields(body).get("C", "?")
        if kind == b"R" and body[:4] == struct.pack("!i", 3):  # cleartext password requested
            wire.send(password(secret))
        elif kind == b"Z":
            return None


def simple_query(wire: Wire, text: str) -> tuple[int, list[str]]:
    """Send one Query and read to ReadyForQuery: the statements completed and the SQLSTATEs refused."""
    wire.send(query(text))
    done, refused = 0, []
    while True:
        kind, body = wire.read()
        if kind == b"C":
            done += 1
        elif kind == b"E":
            refused.append(error_fields(body).get("C", "?"))
        elif kind == b"Z":
            return done, refused
