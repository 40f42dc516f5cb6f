"""The PostgreSQL listener of ``privdb serve --pg-port``: a thread per client over the server's Database.

It runs beside the HTTP server in the same process, on the same :class:`privdb.database.Database` (one
ledger, one DuckDB handle; the library is safe across threads, as the HTTP server's thread pool relies on).
A connection gets its thread only if :mod:`privdb.server.pgwire.admission` lets it start; else it is told
53300 ("too many clients") from the accepting thread and closed, with no thread made for it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import ssl
import threading
from pathlib import Path

from pygwire import messages as m

from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.server.pgwire.admission import Admission, Limits
from privdb.server.pgwire.cancel import Cancels
from privdb.server.pgwire.errors import error_fields
from privdb.server.pgwire.protocol import serve_connection
from privdb.server.pgwire.startup import TOO_MANY

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
        server = self.server
        try:
            serve_connection(sock, f"{host}:{port}", server.db, server.tls, server.cancels, server.admission)
        finally:
            server.db.release_thread()  # this thread's ledger and DuckDB handles (privdb.perthread)


class PgServer(socketserver.ThreadingTCPServer):
    """Accepts PostgreSQL clients on ``(host, port)``; ``start()`` serves in a daemon thread."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        host: str,
        port: int,
        db: Database,
        tls: ssl.SSLContext | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            super().__init__((host, port), _Handler)
        except OSError as err:
            raise InvalidParameter(
                f"cannot listen on {host}:{port} for PostgreSQL clients: {err.strerror}"
            ) from None
        self.db, self.tls = db, tls
        self.cancels = Cancels()  # the sessions' backend keys (cancel requests)
        self.admission = Admission(limits or Limits())

    def process_request(self, request: socket.socket, client_address: tuple[str, int]) -> None:  # type: ignore[override]
        """A thread for the connection if its start-up is admitted; else 53300 at once, and closed."""
        address = str(client_address[0])
        if not self.admission.start(address, request):
            log.info("pgwire %s: refused (too many connections starting)", address)
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                refusal = m.ErrorResponse(error_fields("too_many_connections", TOO_MANY, fatal=True))
                request.sendall(refusal.to_wire())
            with contextlib.suppress(OSError):
                request.close()
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread could be started: the slot is given back
            self.admission.started(address, request)
            with contextlib.suppress(OSError):
                request.close()
            raise

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="privdb-pgwire", daemon=True)
        thread.start()
        return thread

    def shutdown_request(self, request: object) -> None:  # serve_connection closes the socket itself
        pass
