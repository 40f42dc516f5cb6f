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
import socket
import ssl
from dataclasses import dataclass

from pygwire import messages as m
from pygwire.constants import TransactionStatus
from pygwire.exceptions import PygwireError

from privdb.database import Database
from privdb.errors import InternalError, PrivdbError, RequestTooLarge
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
from privdb.server.pgwire.startup import start
from privdb.server.pgwire.wire import MAX_MESSAGE, Closed, TooLarge, Unreadable, Wire

__all__ = ["serve_connection"]

log = logging.getLogger("privdb.pgwire")
MAX_STATEMENTS = 1000  # statements in one simple query message
MAX_PREPARED = 1000  # named prepared statements a session may hold
MAX_PREPARED_TEXT = 16 << 20  # characters of their texts together
MAX_PORTALS = 64  # open portals a session may hold (each keeps its answer's rows)
_STATUS = {
    "I": TransactionStatus.IDLE,
    "T": TransactionStatus.IN_TRANSACTION,
    "E": TransactionStatus.ERROR_TRANSACTION,
}


@dataclass
class _Portal:
    text: str
    formats: list[int]
    answer: Answer | None = None
    sent: int = 0  # rows already sent (Execute with max_rows pages through them)
    described: Answer | None = None  # its statement's Describe: the rows go with the types it announced


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
    wire = Wire(sock)
    session: Session | None = None
    key, seated = 0, False
    try:
        try:
            session = start(wire, peer, db, tls, cancels, admission)
        finally:
            admission.started(address, sock)
        if session is not None:
            key, seated = session.key, True
            _Loop(wire, session, peer).run()
    except Unreadable as err:
        text = (
            "privdb speaks UTF-8 only: a message held text that is not valid UTF-8; connect again"
            if "utf" in str(err).lower() or "codec" in str(err).lower()
            else "a message could not be read (malformed); connect again"
        )
        log.info("pgwire %s: unreadable message (%s)", peer, str(err)[:200])
        with contextlib.suppress(OSError):  # past the codec: its state is lost with the message
            wire.sock.sendall(m.ErrorResponse(error_fields("protocol_violation", text, fatal=True)).to_wire())
    except TooLarge:
        log.info("pgwire %s: a message over %d bytes; connection ended", peer, MAX_MESSAGE)
        text = f"a message is longer than privdb's limit of {MAX_MESSAGE >> 20} MiB; connect again"
        with contextlib.suppress(OSError):
            wire.sock.sendall(m.ErrorResponse(error_fields("request_too_large", text, fatal=True)).to_wire())
    except (Closed, OSError, PygwireError, ssl.SSLError):
        pass
    finally:
        if session is not None:
            cancels.forget(key)
            session.close()
            if seated:
                admission.close_session(owner=session.principal.is_owner)
        with contextlib.suppress(OSError):
            wire.sock.close()


class _Loop:
    """The query cycle of an authenticated session."""

    def __init__(self, wire: Wire, session: Session, peer: str) -> None:
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
