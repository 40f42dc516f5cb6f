"""One client connection: PostgreSQL's v3 protocol (start-up, password, simple and extended queries) over a
socket, with pygwire as the codec (docs/dependencies.md) and :class:`Session` answering the statements.

Start-up: TLS if the client asks and the server has a certificate (``SSLRequest``), else plain; then a
cleartext password request: the user name is the analyst's (any name for the owner), the password the
token. Errors in the extended protocol discard the messages up to the next Sync, as PostgreSQL does. A
``Describe`` of a statement tells its columns from the plan, free (privdb.server.pgwire.describe), or
``NoData``; a ``Describe`` of a portal runs its statement (its columns are then exact, with the types the
statement's ``Describe`` announced); ``Execute`` then sends the rows kept, ``max_rows`` at a time as
PostgreSQL pages them (privdb.server.pgwire.portals). A cancel request that reaches a running statement
ends it with 57014 (errors.QueryCanceled).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import ssl
import time
from collections import deque
from dataclasses import dataclass, field

from pygwire import BackendConnection
from pygwire import messages as m
from pygwire.constants import TransactionStatus
from pygwire.exceptions import PygwireError

from privdb.database import Database
from privdb.errors import InternalError, PrivdbError, RequestTooLarge, Unauthorized
from privdb.server.pgwire.admission import Admission
from privdb.server.pgwire.cancel import Cancels
from privdb.server.pgwire.encoding import Answer, retyped
from privdb.server.pgwire.errors import (
    FailedTransaction,
    ProtocolViolation,
    QueryCanceled,
    error_fields,
    from_error,
    notice_fields,
)
from privdb.server.pgwire.params import count_parameters, substitute
from privdb.server.pgwire.portals import page, parameter_types, row_description
from privdb.server.pgwire.running import running
from privdb.server.pgwire.session import Session, first_word, split_statements, strip

__all__ = ["TOO_MANY", "serve_connection"]

log = logging.getLogger("privdb.pgwire")
MAX_STATEMENTS = 1000  # statements in one simple query message
MAX_MESSAGE = 16 << 20  # bytes of one protocol message (HTTP's --max-body default)
MAX_PREPARED = 1000  # named prepared statements a session may hold
MAX_PREPARED_TEXT = 16 << 20  # characters of their texts together
MAX_PORTALS = 64  # open portals a session may hold (each keeps its answer's rows)
TOO_MANY = "sorry, too many clients already"  # PostgreSQL's words for 53300
_STATUS = {
    "I": TransactionStatus.IDLE,
    "T": TransactionStatus.IN_TRANSACTION,
    "E": TransactionStatus.ERROR_TRANSACTION,
}


class _Closed(Exception):
    """The client went away (or must be dropped)."""


class _TooLarge(Exception):
    """A message longer than ``MAX_MESSAGE``: refused as it arrives, before it is all held."""


def _buffered(codec: BackendConnection) -> int:
    """Bytes the codec holds of messages not yet complete (pygwire keeps them in its decoder's buffer;
    tests/test_pgwire_limits.py pins that this is seen)."""
    decoder = getattr(codec, "_decoder", None)
    return len(getattr(decoder, "_buf", b"")) - int(getattr(decoder, "_pos", 0))


class _Unreadable(Exception):
    """A message the codec cannot read (text not UTF-8, a malformed frame): it cannot go on."""


@dataclass
class _Portal:
    text: str
    formats: list[int]
    answer: Answer | None = None
    sent: int = 0  # rows already sent (Execute with max_rows pages through them)
    described: Answer | None = None  # its statement's Describe: the rows go with the types it announced


@dataclass
class _Wire:
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
                raise _Closed
            try:
                self.inbox.extend(self.codec.receive(data))
            except (UnicodeDecodeError, PygwireError) as err:
                raise _Unreadable(str(err)) from None
            if _buffered(self.codec) > MAX_MESSAGE:
                raise _TooLarge
        return self.inbox.popleft()

    def send(self, msg: m.PGMessage) -> None:
        self.out += self.codec.send(msg)
        if len(self.out) > 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.sock.sendall(self.out)
            self.out.clear()


def serve_connection(
    sock: socket.socket,
    peer: str,
    db: Database,
    tls: ssl.SSLContext | None,
    cancels: Cancels,
    admission: Admission | None = None,
) -> None:
    """Speak with one client until it leaves (``admission``: the listener's limits; the start-up slot this
    connection was admitted with is given back when its start-up ends)."""
    admission = admission or Admission()
    address = peer.rsplit(":", 1)[0]
    wire = _Wire(sock)
    session: Session | None = None
    key, seated = 0, False
    try:
        try:
            session = _start(wire, peer, db, tls, cancels, admission)
        finally:
            admission.started(address, sock)
        if session is not None:
            key, seated = session.key, True
            _Loop(wire, session, peer).run()
    except _Unreadable as err:
        text = (
            "privdb speaks UTF-8 only: a message held text that is not valid UTF-8; connect again"
            if "utf" in str(err).lower() or "codec" in str(err).lower()
            else "a message could not be read (malformed); connect again"
        )
        log.info("pgwire %s: unreadable message (%s)", peer, str(err)[:200])
        with contextlib.suppress(OSError):  # past the codec: its state is lost with the message
            wire.sock.sendall(m.ErrorResponse(error_fields("protocol_violation", text, fatal=True)).to_wire())
    except _TooLarge:
        log.info("pgwire %s: a message over %d bytes; connection ended", peer, MAX_MESSAGE)
        text = f"a message is longer than privdb's limit of {MAX_MESSAGE >> 20} MiB; connect again"
        with contextlib.suppress(OSError):
            wire.sock.sendall(m.ErrorResponse(error_fields("request_too_large", text, fatal=True)).to_wire())
    except (_Closed, OSError, PygwireError, ssl.SSLError):
        pass
    finally:
        if session is not None:
            cancels.forget(key)
            session.close()
            if seated:
                admission.close_session(owner=session.principal.is_owner)
        with contextlib.suppress(OSError):
            wire.sock.close()


def _start(
    wire: _Wire, peer: str, db: Database, tls: ssl.SSLContext | None, cancels: Cancels, admission: Admission
) -> Session | None:
    """Start-up and authentication within ``--pg-auth-timeout``; the session (holding one of the
    listener's session slots), or None when the client was refused or dropped."""
    wire.deadline = time.monotonic() + admission.limits.auth_timeout
    try:
        return _authenticate(wire, peer, db, tls, cancels, admission)
    except TimeoutError:
        log.info("pgwire %s: dropped (not authenticated within %g s)", peer, admission.limits.auth_timeout)
        raise _Closed from None
    finally:
        wire.deadline = None
        with contextlib.suppress(OSError):
            wire.sock.settimeout(None)


def _authenticate(
    wire: _Wire, peer: str, db: Database, tls: ssl.SSLContext | None, cancels: Cancels, admission: Admission
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
        raise _Closed
    params = dict(msg.params)
    user = params.get("user", "")
    wire.send(m.AuthenticationCleartextPassword())
    wire.flush()
    reply = wire.next()
    if not isinstance(reply, m.PasswordMessage):
        raise _Closed
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


class _Loop:
    """The query cycle of an authenticated session."""

    def __init__(self, wire: _Wire, session: Session, peer: str) -> None:
        self.wire, self.session, self.peer = wire, session, peer
        self.statements: dict[str, tuple[str, list[int]]] = {}
        self.portals: dict[str, _Portal] = {}
        self.described: dict[str, Answer] = {}  # what each statement's Describe announced
        self.skipping = False  # after an error in the extended protocol: until Sync

    def run(self) -> None:
        while True:
            msg = self.wire.next()
            if isinstance(msg, m.Terminate):
                return
            if isinstance(msg, m.Query):
                self._simple(msg.query_string)
            elif isinstance(msg, m.Sync):
                self.skipping = False
                if self.session.transaction == "I":  # a transaction's end closes its portals (PostgreSQL)
                    self.portals.clear()
                self._ready()
            elif isinstance(msg, m.Flush):
                self.wire.flush()
            elif self.skipping:
                continue
            else:
                try:
                    self._extended(msg)
                except PrivdbError as err:
                    self._error(err)
                    self.skipping = True

    def _ready(self) -> None:
        self.wire.send(m.ReadyForQuery(status=_STATUS[self.session.transaction]))
        self.wire.flush()

    def _error(self, err: PrivdbError) -> None:
        self.wire.send(m.ErrorResponse(from_error(err)))
        if self.session.transaction == "T":
            self.session.transaction = "E"

    def _answer(self, text: str) -> Answer:
        """Run a statement, logging who asked what kind of statement and how it ended."""
        word = first_word(strip(text))
        if self.session.transaction == "E" and word not in ("COMMIT", "END", "ROLLBACK", "ABORT", "RELEASE"):
            raise FailedTransaction
        with running() as statement:  # a cancel request for this session reaches this statement only
            try:
                answer, changed = self.session.run(text)
            except PrivdbError as err:
                if statement.cancelled and not isinstance(err, InternalError):
                    log.info("pgwire %s user %r: %s cancelled", self.peer, self.session.user, word)
                    raise QueryCanceled(err) from None
                log.info("pgwire %s user %r: %s refused (%s)", self.peer, self.session.user, word, err.code)
                raise
            except Exception as err:  # a fault of privdb: no traceback to the client
                log.exception("pgwire %s: internal error", self.peer)
                raise InternalError(f"internal error ({type(err).__name__}); please report it") from None
        log.info("pgwire %s user %r: %s answered (%s)", self.peer, self.session.user, word, answer.tag)
        for notice in answer.notices:
            self.wire.send(m.NoticeResponse(notice_fields(notice)))
        if changed is not None:
            self.wire.send(m.ParameterStatus(name=changed, value=self.session.settings.get(changed)))
        return answer

    def _simple(self, text: str) -> None:
        statements = split_statements(text)
        if len(statements) > MAX_STATEMENTS:  # refused whole, before any runs: nothing spent
            self._error(RequestTooLarge(
                f"one query message holds {len(statements)} statements; privdb runs at most "
                f"{MAX_STATEMENTS} per message: send them in smaller batches"
            ))  # fmt: skip
            self._ready()
            return
        for statement in statements:
            try:
                answer = self._answer(statement)
            except PrivdbError as err:
                self._error(err)
                break
            if answer.tag == "EMPTY":
                self.wire.send(m.EmptyQueryResponse())
                continue
            if answer.columns:
                self.wire.send(row_description(answer, []))
            self._send(page(answer, [], 0, 0)[0])
        self._ready()

    def _extended(self, msg: m.PGMessage) -> None:
        if isinstance(msg, m.Parse):
            if msg.statement and msg.statement in self.statements:
                raise ProtocolViolation(f'prepared statement "{msg.statement}" already exists')
            held = sum(len(text) for text, _ in self.statements.values())
            if len(self.statements) >= MAX_PREPARED or held + len(msg.query) > MAX_PREPARED_TEXT:
                raise RequestTooLarge(
                    f"this session holds {len(self.statements)} prepared statements ({held:,} characters); "
                    f"privdb keeps at most {MAX_PREPARED} ({MAX_PREPARED_TEXT >> 20} Mi characters) per "
                    "session: close (DEALLOCATE) the ones no longer needed"
                )
            self.statements[msg.statement] = (msg.query, list(msg.param_types))
            self.described.pop(msg.statement, None)
            self.wire.send(m.ParseComplete())
        elif isinstance(msg, m.Bind):
            text, oids = self._statement(msg.statement)
            bound = substitute(text, msg.param_values, oids, msg.param_formats)
            if msg.portal not in self.portals and len(self.portals) >= MAX_PORTALS:
                raise RequestTooLarge(
                    f"this session holds {MAX_PORTALS} open portals, privdb's limit per session: close the "
                    "ones no longer needed (or end the transaction)"
                )
            self.portals[msg.portal] = _Portal(bound, list(msg.result_formats))
            self.portals[msg.portal].described = self.described.get(msg.statement)
            self.wire.send(m.BindComplete())
        elif isinstance(msg, m.Describe) and msg.kind == "S":
            text, oids = self._statement(msg.name)
            self.wire.send(m.ParameterDescription(type_oids=parameter_types(oids, count_parameters(text))))
            described = self.session.describe(text)  # from the plan: nothing read, nothing spent
            if described is not None and described.columns:
                self.described[msg.name] = described
                self.wire.send(row_description(described, []))
            else:
                self.wire.send(m.NoData())
        elif isinstance(msg, m.Describe):
            portal = self._portal(msg.name)
            answer = self._run_portal(portal)
            if answer.columns:
                self.wire.send(row_description(answer, portal.formats))
            else:
                self.wire.send(m.NoData())
        elif isinstance(msg, m.Execute):
            portal = self._portal(msg.portal)
            answer = self._run_portal(portal)
            if answer.tag == "EMPTY":
                self.wire.send(m.EmptyQueryResponse())
                return
            sent, portal.sent = page(answer, portal.formats, portal.sent, msg.max_rows)
            self._send(sent)
        elif isinstance(msg, m.Close):
            (self.statements if msg.kind == "S" else self.portals).pop(msg.name, None)
            if msg.kind == "S":
                self.described.pop(msg.name, None)
            self.wire.send(m.CloseComplete())
        else:
            raise ProtocolViolation(f"the {type(msg).__name__} message is not supported by privdb")

    def _statement(self, name: str) -> tuple[str, list[int]]:
        if name not in self.statements:
            raise ProtocolViolation(f'prepared statement "{name}" does not exist')
        return self.statements[name]

    def _portal(self, name: str) -> _Portal:
        if name not in self.portals:
            raise ProtocolViolation(f'portal "{name}" does not exist')
        return self.portals[name]

    def _run_portal(self, portal: _Portal) -> Answer:
        if portal.answer is None:
            answer = self._answer(portal.text)
            portal.answer = answer if portal.described is None else retyped(answer, portal.described)
        return portal.answer

    def _send(self, messages: list[m.PGMessage]) -> None:
        for msg in messages:
            self.wire.send(msg)
