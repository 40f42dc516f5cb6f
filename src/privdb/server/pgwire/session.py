"""One PostgreSQL client's session: what each statement is and who answers it.

    DP-SELECT …, SELECT on privdb's tables   → privdb.api.Connection.sql (paid, logged in the ledger)
    SELECT on pg_catalog / information_schema, or on no table → the catalog, in its closed language (free)
    SET / SHOW / RESET                        → the session's settings
    BEGIN / COMMIT / ROLLBACK                 → accepted; answers are final (a spend is never rolled back)
    anything else, as the owner              → Connection.owner_sql (the owner's direct access)

The token is checked again before each statement that reads privdb's tables, so a revoked or expired token
stops working at once, as over HTTP. Each answer's cost and the budget left come as a NOTICE.
"""

from __future__ import annotations

import re

from privdb.api import Connection
from privdb.catalog.store import Principal
from privdb.database import Database
from privdb.errors import PrivdbError, Unauthorized
from privdb.result import Result
from privdb.server.pgwire.catalog import Catalog, is_catalog_query
from privdb.server.pgwire.describe import from_plan
from privdb.server.pgwire.encoding import Answer, from_frame
from privdb.server.pgwire.names import pg_name
from privdb.server.pgwire.params import count_parameters, substitute
from privdb.server.pgwire.settings import Settings
from privdb.sql.front.limits import MAX_QUERY_LENGTH, check_text
from privdb.sql.public.answer import PUBLIC_TIMEOUT
from privdb.sql.public.wrapped import granted_session

__all__ = ["Session", "first_word", "split_statements"]

_TX_BEGIN = {"BEGIN", "START"}
_TX_END = {"COMMIT", "END", "ROLLBACK", "ABORT"}
_LOCAL_NOOP = {"DISCARD", "DEALLOCATE", "LISTEN", "UNLISTEN", "CLOSE"}  # no state of these is kept
_COMMENTS = re.compile(r"^(\s+|--[^\n]*(\n|$)|/\*.*?\*/)+", re.S)


def strip(text: str) -> str:
    """The statement without leading comments and blanks, nor trailing blanks and semicolons."""
    return _COMMENTS.sub("", text).strip().rstrip(";").strip()


def first_word(text: str) -> str:
    if text[:9].upper() == "DP-SELECT":
        return "DP-SELECT"
    match = re.match(r"[A-Za-z_]+", text)
    return match.group(0).upper() if match else ""


def split_statements(text: str) -> list[str]:
    """A simple Query's statements, split at semicolons outside quotes and comments (privdb's DP-SELECT
    text has none of its own)."""
    out, current, i, quote = [], [], 0, ""
    while i < len(text):
        char = text[i]
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current.append(char)
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            current.append(text[i:end])
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            current.append(text[i:end])
            i = end
            continue
        elif char == ";":
            out.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    out.append("".join(current))
    return [s for s in out if strip(s)] or [""]


class Session:
    """A connected principal: their library connection, catalog and settings."""

    def __init__(self, db: Database, principal: Principal, token: str, startup: dict[str, str]) -> None:
        self.db, self.principal, self._token = db, principal, token
        self.user = startup.get("user", principal.name)
        self.connection = Connection(db, None if principal.is_owner else principal.name)
        granted = None if principal.is_owner else granted_session(db, principal.name)
        self.settings = Settings(self.user, principal.is_owner, startup, granted)
        self.tables = self.connection.tables()
        timeout = PUBLIC_TIMEOUT if db.query_timeout is None else db.query_timeout  # a plain SELECT's
        self.catalog = Catalog(self.tables, self.user, f"{principal.role}:{principal.name}", timeout)
        self.catalog.settings = self.settings.get  # current_setting() reads what SHOW shows
        self.transaction = "I"  # I idle, T in a transaction block, E in a failed one
        self.key = 0  # the backend key's process id (privdb.server.pgwire.cancel)

    def run(self, text: str) -> tuple[Answer, str | None]:
        """Answer one statement (and the setting to report to the client, if it changed one)."""
        text = strip(text)
        word = first_word(text)
        if not text:
            return Answer("EMPTY"), None
        if word in _TX_BEGIN:
            self.transaction = "T"
            return Answer("BEGIN"), None
        if word == "SAVEPOINT" or word == "RELEASE":
            return Answer(word), None
        if word == "ROLLBACK" and re.match(r"ROLLBACK\s+(WORK\s+|TRANSACTION\s+)?TO\b", text, re.I):
            self.transaction = "T" if self.transaction != "I" else "I"
            return Answer("ROLLBACK"), None
        if word in _TX_END:
            failed, self.transaction = self.transaction == "E", "I"
            return Answer("ROLLBACK" if failed or word in ("ROLLBACK", "ABORT") else "COMMIT"), None
        if word in _LOCAL_NOOP:
            return Answer(word if word != "DEALLOCATE" else "DEALLOCATE"), None
        command = self.settings.command(text)
        if command is not None:
            return command
        if not self.principal.is_owner:
            check_text(text)  # before any parse: a 1 MB statement held the parser (and the GIL) for 50 s
        if (
            word in ("SELECT", "WITH", "VALUES", "TABLE")
            and len(text) <= MAX_QUERY_LENGTH
            and is_catalog_query(text)
        ):
            return self.catalog.answer(text), None
        self._check_token()
        if self.principal.is_owner:
            return _owner_answer(self.connection, text, word), None
        return _dp_answer(self.connection.sql(text, self.settings.dp_session())), None

    def describe(self, text: str) -> Answer | None:
        """The columns a prepared statement will return, told without reading data or spending
        (privdb.server.pgwire.describe); None when they cannot be (sent as NoData)."""
        text = strip(text)
        if len(text) > MAX_QUERY_LENGTH:
            return None  # refused with its error when it is run
        wanted = count_parameters(text)
        bound = substitute(text, [None] * wanted, [], []) if wanted else text
        word = first_word(bound)
        try:
            if word == "DP-SELECT" and not self.principal.is_owner:
                self._check_token()
                return from_plan(self.connection.explain(bound), self.tables)
            if not wanted and word in ("SELECT", "WITH") and is_catalog_query(bound):
                return self.catalog.answer(bound)
        except PrivdbError:
            return None  # refused when it is run, with its error
        return None

    def _check_token(self) -> None:
        """The token still speaks for this principal (not revoked, not expired)."""
        now = self.db.catalog.authenticate(self._token)
        if (now.name, now.role) != (self.principal.name, self.principal.role):
            raise Unauthorized("this token now speaks for someone else; connect again")

    def close(self) -> None:
        self.catalog.close()


def _dp_answer(result: Result) -> Answer:
    """A DP answer: each statistic followed by its interval columns (``to_pandas()``); the cost in a
    notice."""
    answer = from_frame(result.to_pandas())
    answer.columns = [pg_name(c) for c in answer.columns]  # AVG(age) → avg, as PostgreSQL names it
    budget = result.budget
    answer.notices.append(
        f"privdb: ε spent {result.epsilon_spent:g}, δ spent {result.delta_spent:g}"
        + (" (stored answer, no cost)" if result.cached else "")
        + f"; budget left ε {budget.get('epsilon_remaining', 0):g}, δ {budget.get('delta_remaining', 0):g}"
    )
    if result.extra.get("truncated"):
        answer.notices.append("privdb: the answer was cut to the server's row limit")
    return answer


def _owner_answer(connection: Connection, text: str, word: str) -> Answer:
    frame = connection.owner_sql(text)
    if word in ("SELECT", "WITH", "VALUES", "TABLE", "SHOW", "DESCRIBE", "EXPLAIN", "PRAGMA"):
        return from_frame(frame)
    count = int(str(frame.iloc[0, 0])) if frame.shape == (1, 1) and str(frame.columns[0]) == "Count" else 0
    tag = {"INSERT": f"INSERT 0 {count}", "UPDATE": f"UPDATE {count}", "DELETE": f"DELETE {count}"}
    return Answer(tag.get(word, word or "OK"))
