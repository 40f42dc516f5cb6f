"""A raw PostgreSQL protocol client for the pgwire tests: messages built one by one (pygwire as the codec)
and every message the server answers, in order, where psycopg would hide them (a row limit on Execute,
PortalSuspended, the exact RowDescription of each step)."""

from __future__ import annotations

import socket
from types import TracebackType

from pygwire import FrontendConnection
from pygwire import messages as m

__all__ = ["RawClient"]


class RawClient:
    """One authenticated connection; :meth:`exchange` sends messages and reads up to ReadyForQuery."""

    def __init__(
        self, port: int, user: str, password: str | None, *, database: str = "privdb", timeout: float = 60
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.codec = FrontendConnection(strict=False)
        self._pending: list[m.PGMessage] = []
        self.send(m.StartupMessage(params={"user": user, "database": database}))
        start = [self.read()]
        if isinstance(start[0], m.AuthenticationCleartextPassword) and password is not None:
            self.send(m.PasswordMessage(password=password))
            start = []
        start += self.until_ready()
        assert not [x for x in start if isinstance(x, m.ErrorResponse)], start
        self.key = next(x for x in start if isinstance(x, m.BackendKeyData))

    def send(self, *messages: m.PGMessage) -> None:
        self.sock.sendall(b"".join(self.codec.send(x) for x in messages))

    def read(self) -> m.PGMessage:
        while not self._pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self._pending.extend(self.codec.receive(data))
        return self._pending.pop(0)

    def until_ready(self) -> list[m.PGMessage]:
        """The messages up to and including the next ReadyForQuery."""
        out = [self.read()]
        while not isinstance(out[-1], m.ReadyForQuery):
            out.append(self.read())
        return out

    def exchange(self, *messages: m.PGMessage) -> list[m.PGMessage]:
        """Send ``messages`` (end them with Sync) and return what came back, ReadyForQuery included."""
        self.send(*messages)
        return self.until_ready()

    def close(self) -> None:
        try:
            self.send(m.Terminate())
        finally:
            self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
