"""The PostgreSQL listener of ``privdb serve --pg-port``: a thread per client over the server's Database.

It runs beside the HTTP server in the same process, on the same :class:`privdb.database.Database` (one
ledger, one DuckDB handle; the library is safe across threads, as the HTTP server's thread pool relies on).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import ssl
import threading
from pathlib import Path

from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.server.pgwire.cancel import Cancels
from privdb.server.pgwire.protocol import serve_connection

__all__ = ["PgServer", "tls_context"]

log = logging.getLogger("privdb.pgwire")


def tls_context(cert: str | Path | None, key: str | Path | None) -> ssl.SSLContext | None:
    """The TLS context for ``--pg-tls-cert``/``--pg-tls-key`` (both or neither)."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise InvalidParameter("give both --pg-tls-cert and --pg-tls-key (PEM files), or neither")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as err:
        raise InvalidParameter(f"the TLS certificate or key cannot be used: {err}") from None
    return context


class _Handler(socketserver.BaseRequestHandler):
    server: PgServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        host, port = self.client_address[:2]
        serve_connection(sock, f"{host}:{port}", self.server.db, self.server.tls, self.server.cancels)


class PgServer(socketserver.ThreadingTCPServer):
    """Accepts PostgreSQL clients on ``(host, port)``; ``start()`` serves in a daemon thread."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, host: str, port: int, db: Database, tls: ssl.SSLContext | None = None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _Handler)
        except OSError as err:
            raise InvalidParameter(
                f"cannot listen on {host}:{port} for PostgreSQL clients: {err.strerror}"
            ) from None
        self.db, self.tls = db, tls
        self.cancels = Cancels()  # the sessions' backend keys (cancel requests)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="privdb-pgwire", daemon=True)
        thread.start()
        return thread

    def shutdown_request(self, request: object) -> None:  # serve_connection closes the socket itself
        pass
