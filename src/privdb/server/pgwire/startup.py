"""Start-up and authentication of one PostgreSQL client, within ``--pg-auth-timeout``: TLS if asked and
offered, a cleartext password that is the token, a session slot (privdb.server.pgwire.admission), the
reported parameters and the backend key; a failed login answered after the auth delay."""

from __future__ import annotations

import contextlib
import logging
import select
import ssl
import time

from pygwire import messages as m
from pygwire.constants import TransactionStatus

from privdb.database import Database
from privdb.errors import PrivdbError, Unauthorized
from privdb.server.pgwire.admission import Admission
from privdb.server.pgwire.cancel import Cancels
from privdb.server.pgwire.errors import error_fields, from_error
from privdb.server.pgwire.session import Session
from privdb.server.pgwire.wire import Closed, Wire

__all__ = ["TOO_MANY", "start"]

log = logging.getLogger("privdb.pgwire")
TOO_MANY = "sorry, too many clients already"  # PostgreSQL's words for 53300


def start(
    wire: Wire, peer: str, db: Database, tls: ssl.SSLContext | None, cancels: Cancels, admission: Admission
) -> Session | None:
    """Start-up and authentication within ``--pg-auth-timeout``; the session (holding one of the
    listener's session slots), or None when the client was refused or dropped."""
    wire.deadline = time.monotonic() + admission.limits.auth_timeout
    try:
        return authenticate(wire, peer, db, tls, cancels, admission)
    except TimeoutError:
        log.info("pgwire %s: dropped (not authenticated within %g s)", peer, admission.limits.auth_timeout)
        raise Closed from None
    finally:
        wire.deadline = None
        with contextlib.suppress(OSError):
            wire.sock.settimeout(None)


def authenticate(
    wire: Wire, peer: str, db: Database, tls: ssl.SSLContext | None, cancels: Cancels, admission: Admission
) -> Session | None:
    address = peer.rsplit(":", 1)[0]
    while True:
        msg = wire.next()
        if isinstance(msg, m.SSLRequest):
            wire.sock.sendall(wire.codec.send(m.SSLResponse(accepted=tls is not None)))
            if tls is not None:
                wire.sock.settimeout(wire.left())  # the handshake too is within the start-up's time
                wire.sock = tls.wrap_socket(wire.sock, server_side=True)
            continue
        if isinstance(msg, m.GSSEncRequest):
            wire.sock.sendall(b"N")
            continue
        if isinstance(msg, m.CancelRequest):  # answered by closing the connection, whatever the outcome
            done = cancels.cancel(msg.process_id, bytes(msg.secret_key))
            log.info("pgwire %s: cancel request %s", peer, "acted on" if done else "for no known session")
            return None
        if isinstance(msg, m.StartupMessage):
            break
        raise Closed
    params = dict(msg.params)
    user = params.get("user", "")
    wire.send(m.AuthenticationCleartextPassword())
    wire.flush()
    reply = wire.next()
    if not isinstance(reply, m.PasswordMessage):
        raise Closed
    token = reply.password.decode() if isinstance(reply.password, bytes) else reply.password
    token = token.rstrip("\x00")
    try:
        principal = db.catalog.authenticate(token)
        if not principal.is_owner and principal.name != user:
            raise Unauthorized("the token is not this user's")
    except Unauthorized:
        pause = admission.failed(address)
        log.info("pgwire %s user %r: refused (wrong token; answered after %.1f s)", peer, user, pause)
        # auth_delay: guessing tokens is slow from any one address; the pause ends early if the socket is
        # shut (the connection gave way to another address's, privdb.server.pgwire.admission) or the client
        # leaves
        select.select([wire.sock], [], [], min(pause, wire.left()))
        wire.send(
            m.ErrorResponse(
                error_fields("unauthorized", f'password authentication failed for user "{user}"', fatal=True)
            )
        )
        wire.flush()
        return None
    if not admission.open_session(owner=principal.is_owner):
        log.info("pgwire %s user %r: refused (--pg-max-connections reached)", peer, user)
        wire.send(m.ErrorResponse(error_fields("too_many_connections", TOO_MANY, fatal=True)))
        wire.flush()
        return None
    try:
        session = Session(db, principal, token, params)
    except PrivdbError as err:
        admission.close_session(owner=principal.is_owner)
        wire.send(m.ErrorResponse(from_error(err, fatal=True)))
        wire.flush()
        return None
    except BaseException:
        admission.close_session(owner=principal.is_owner)
        raise
    wire.send(m.AuthenticationOk())
    for name, value in session.settings.reported():
        wire.send(m.ParameterStatus(name=name, value=value))
    session.key, secret = cancels.register(session.catalog.interrupt)
    session.catalog.backend_pid = session.key  # pg_backend_pid() names the key cancel requests carry
    wire.send(m.BackendKeyData(process_id=session.key, secret_key=secret))
    wire.send(m.ReadyForQuery(status=TransactionStatus.IDLE))
    wire.flush()
    log.info("pgwire %s user %r: connected", peer, user)
    return session
