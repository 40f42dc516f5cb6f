"""A byte-transparent TCP relay between Superset and privdb's PostgreSQL port that keeps a record of
every statement the client sent (simple ``Query`` and extended ``Parse`` messages) and every error the
server answered with, so the run can say exactly which SQL Superset sent and which privdb refused."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Statement", "WireTap"]

_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104
_CANCEL_REQUEST = 80877102


@dataclass
class Statement:
    """One statement a client sent, and the error privdb answered it with (None: answered)."""

    connection: int
    sql: str
    error: str | None = None


@dataclass
class _Connection:
    number: int
    pending: list[Statement] = field(default_factory=list)  # sent, not yet answered by ReadyForQuery


class WireTap:
    """Listen on a free loopback port and relay each connection to ``target_port``."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.statements: list[Statement] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._count = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def refused(self) -> list[Statement]:
        with self._lock:
            return [s for s in self.statements if s.error is not None]

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._count += 1
                conn = _Connection(self._count)
            threading.Thread(target=self._client_side, args=(client, server, conn), daemon=True).start()
            threading.Thread(target=self._server_side, args=(server, client, conn), daemon=True).start()

    def _client_side(self, source: socket.socket, sink: socket.socket, conn: _Connection) -> None:
        buffer, typed = b"", False
        for chunk in _chunks(source, sink):
            buffer += chunk
            while True:
                if not typed:  # start-up phase: untyped length-prefixed packets
                    if len(buffer) < 8:
                        break
                    (length,) = struct.unpack("!I", buffer[:4])
                    if len(buffer) < length:
                        break
                    (code,) = struct.unpack("!I", buffer[4:8])
                    typed = code not in (_SSL_REQUEST, _GSS_REQUEST, _CANCEL_REQUEST)
                    buffer = buffer[length:]
                    continue
                if len(buffer) < 5:
                    break
                kind, (length,) = buffer[:1], struct.unpack("!I", buffer[1:5])
                if len(buffer) < 1 + length:
                    break
                body, buffer = buffer[5 : 1 + length], buffer[1 + length :]
                if kind == b"Q":
                    self._sent(conn, body[:-1].decode("utf-8", "replace"))
                elif kind == b"P":
                    name_end = body.index(b"\0")
                    sql_end = body.index(b"\0", name_end + 1)
                    self._sent(conn, body[name_end + 1 : sql_end].decode("utf-8", "replace"))

    def _server_side(self, source: socket.socket, sink: socket.socket, conn: _Connection) -> None:
        buffer, started = b"", False
        for chunk in _chunks(source, sink):
            buffer += chunk
            if not started and buffer[:1] in (b"N", b"G"):  # the one-byte answer to SSLRequest/GSSRequest
                buffer, started = buffer[1:], True
            started = True
            while len(buffer) >= 5:
                kind, (length,) = buffer[:1], struct.unpack("!I", buffer[1:5])
                if len(buffer) < 1 + length:
                    break
                body, buffer = buffer[5 : 1 + length], buffer[1 + length :]
                if kind == b"E":
                    self._errored(conn, _error_text(body))
                elif kind == b"Z":
                    with self._lock:
                        conn.pending.clear()

    def _sent(self, conn: _Connection, sql: str) -> None:
        with self._lock:
            statement = Statement(conn.number, sql)
            self.statements.append(statement)
            conn.pending.append(statement)

    def _errored(self, conn: _Connection, error: str) -> None:
        with self._lock:
            target = next((s for s in conn.pending if s.error is None), None)
            if target is None:  # an error before any statement (e.g. at log-in)
                target = Statement(conn.number, "(connection start-up)")
                self.statements.append(target)
            target.error = error


def _chunks(source: socket.socket, sink: socket.socket) -> Iterator[bytes]:
    """Relay ``source`` to ``sink``, yielding what passed; closes both at the end."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
            yield chunk
    except OSError:
        pass
    finally:
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


def _error_text(body: bytes) -> str:
    fields = {}
    for part in body.split(b"\0"):
        if part:
            fields[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return f"{fields.get('C', '?')}: {fields.get('M', '')}"
