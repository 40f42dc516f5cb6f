"""The one error tree of privdb.

Every error a user can cause carries a stable ``code`` (fixed in DESIGN.md) and a message that says what
is wrong and how to fix it. Messages never contain private values.

    PrivdbError
    ├── ParseError            parse_error
    ├── UnsupportedQuery      unsupported_query
    ├── UnknownTable          unknown_table
    ├── UnknownColumn         unknown_column
    ├── RawAccessDenied       raw_access_denied
    ├── BudgetExhausted       budget_exhausted
    ├── InvalidParameter      invalid_parameter
    │   ├── DatabaseInUse     invalid_parameter (another process holds the data file)
    │   └── RequestTooLarge   request_too_large (a request over a documented size limit; HTTP 413)
    ├── Unauthorized          unauthorized
    ├── Forbidden             forbidden
    ├── QueryFailed           query_failed (an engine failure after data was read; charged)
    ├── EngineUnavailable     engine_unavailable (an attached engine cannot be reached; nothing spent)
    ├── RateLimited           rate_limited (a token sent more than its rate allows; HTTP 429, retry later)
    └── LimitReached          limit_reached (a token's lasting allowance is used up; HTTP 409)

``InternalError`` (code ``internal_error``) marks faults of privdb itself; the CLI exits 1 on it and 2 on
every other ``PrivdbError``.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "BudgetExhausted",
    "DatabaseInUse",
    "EngineUnavailable",
    "Forbidden",
    "InternalError",
    "InvalidParameter",
    "LimitReached",
    "ParseError",
    "PrivdbError",
    "QueryFailed",
    "RateLimited",
    "RawAccessDenied",
    "RequestTooLarge",
    "ServerUnreachable",
    "Unauthorized",
    "UnknownColumn",
    "UnknownTable",
    "UnsupportedQuery",
]


class PrivdbError(Exception):
    """Base of all privdb errors: a stable ``code`` and a message that states the fix."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        """The JSON error shape of DESIGN.md: ``{"error": {"code": …, "message": …}}``."""
        return {"error": {"code": self.code, "message": self.message}}


class ParseError(PrivdbError):
    code = "parse_error"


class UnsupportedQuery(PrivdbError):
    code = "unsupported_query"


class UnknownTable(PrivdbError):
    code = "unknown_table"


class UnknownColumn(PrivdbError):
    code = "unknown_column"


class RawAccessDenied(PrivdbError):
    code = "raw_access_denied"


class BudgetExhausted(PrivdbError):
    code = "budget_exhausted"


class InvalidParameter(PrivdbError):
    code = "invalid_parameter"


class DatabaseInUse(InvalidParameter):
    """The data file is locked by another process (DuckDB: one writer per file); ``holder`` is its pid
    when the engine names it."""

    def __init__(self, message: str, holder: int | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class RequestTooLarge(InvalidParameter):
    """A request over one of the server's documented size limits (body bytes, responses per batch): send
    less per request."""

    code = "request_too_large"


class Unauthorized(PrivdbError):
    code = "unauthorized"


class Forbidden(PrivdbError):
    code = "forbidden"


class InternalError(PrivdbError):
    code = "internal_error"


class QueryFailed(PrivdbError):
    """The engine failed after reading data: the spend stands and no detail is given (it may depend on
    the data)."""

    code = "query_failed"


class EngineUnavailable(PrivdbError):
    """An attached engine (a PostgreSQL server, a Spark session) cannot be reached before the query reads
    any data: nothing is spent, and trying again once the engine is back will work. (A code beyond
    DESIGN.md's list, as ``query_failed`` and ``internal_error`` are: none of those says "nothing spent,
    try later".)"""

    code = "engine_unavailable"


class ServerUnreachable(PrivdbError, ConnectionError):
    """The privdb server at a URL cannot be reached (nothing was sent, nothing spent); also a Python
    ``ConnectionError``, so ``except ConnectionError`` catches it as it catches httpx's and the standard
    library's. (A code beyond DESIGN.md's list: the request never reached privdb.)"""

    code = "server_unreachable"


class RateLimited(PrivdbError):
    """A token sent more than its documented rate allows; ``retry_after`` seconds until it may send again.
    Nothing of the refused request was kept. (A code beyond DESIGN.md's list.)"""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LimitReached(PrivdbError):
    """A token's lasting allowance is used up: a respondent token that sent its one response, an open
    survey that took as many responses as its owner allowed. Repeating will not help; nothing was kept.
    (A code beyond DESIGN.md's list.)"""

    code = "limit_reached"


def install_hint(extra: str) -> str:
    """How to add an optional part (a ``pyproject.toml`` extra): privdb is installed from its checkout, not
    from PyPI, so ``pip install 'privdb[extra]'`` would not find it."""
    return f"pip install -e '.[{extra}]' in privdb's checkout (`make test` installs every extra)"
