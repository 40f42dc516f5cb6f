"""privdb's error codes as PostgreSQL SQLSTATEs, and the ErrorResponse/NoticeResponse fields.

The SQLSTATE depends only on privdb's code (a class per kind of refusal: syntax, refused, budget, …), so it
adds nothing to what the code already says: a failure after data was read stays one data-independent
error (``query_failed``). privdb's code travels in the DETAIL field, its message unchanged in the message.
A statement a cancel request stopped is PostgreSQL's 57014 (:class:`QueryCanceled`), whatever ended it.
"""

from __future__ import annotations

from privdb.errors import PrivdbError, QueryFailed

__all__ = [
    "SQLSTATE",
    "FailedTransaction",
    "ProtocolViolation",
    "QueryCanceled",
    "UnknownSetting",
    "error_fields",
    "from_error",
    "notice_fields",
]

SQLSTATE = {
    "parse_error": "42601",  # syntax_error
    "unsupported_query": "0A000",  # feature_not_supported
    "unknown_table": "42P01",  # undefined_table
    "unknown_column": "42703",  # undefined_column
    "invalid_parameter": "22023",  # invalid_parameter_value
    "unauthorized": "28P01",  # invalid_password
    "raw_access_denied": "42501",  # insufficient_privilege
    "forbidden": "42501",
    "budget_exhausted": "53400",  # configuration_limit_exceeded: the account's limit, retrying won't help
    "limit_reached": "53400",
    "rate_limited": "53000",  # insufficient_resources: retry later
    "too_many_connections": "53300",  # too_many_connections: --pg-max-connections reached
    "request_too_large": "54000",  # program_limit_exceeded
    "query_failed": "22000",  # data_exception: charged, no detail (it could depend on the data)
    "engine_unavailable": "58000",  # system_error: nothing spent, retry when the engine is back
    "internal_error": "XX000",
    "in_failed_transaction": "25P02",
    "query_canceled": "57014",  # query_canceled: a cancel request stopped the statement
    "protocol_violation": "08P01",
    "undefined_object": "42704",
}


class FailedTransaction(PrivdbError):
    """A statement in a transaction block after an error, before ROLLBACK (PostgreSQL's rule)."""

    code = "in_failed_transaction"

    def __init__(self) -> None:
        super().__init__("current transaction is aborted, commands ignored until end of transaction block")


class UnknownSetting(PrivdbError):
    """``SHOW`` of a parameter privdb does not keep."""

    code = "undefined_object"


class ProtocolViolation(PrivdbError):
    """A message out of place (an unknown prepared statement or portal, an unsupported message)."""

    code = "protocol_violation"


class QueryCanceled(PrivdbError):
    """A statement that a cancel request reached, and that then failed (PostgreSQL's ``canceling statement
    due to user request``, 57014). Any failure ends so once the request arrived: whether the interrupt or
    something else (the data, were a proof of totality wrong) stopped it is never told, so the outcome is
    the time of the request against the statement's running time, as at the time limit
    (docs/proofs/sql.md, Outcomes). The hint says whether its cost stands: it does when the failure came
    after the engine had begun reading (``ended`` a ``query_failed``)."""

    code = "query_canceled"

    def __init__(self, ended: PrivdbError) -> None:
        super().__init__("canceling statement due to user request")
        self.hint = (
            "the engine had begun reading the data, so the query's cost was charged"
            if isinstance(ended, QueryFailed)
            else "nothing was spent"
        )


def error_fields(code: str, message: str, *, fatal: bool = False, hint: str | None = None) -> dict[str, str]:
    """The fields of an ErrorResponse for privdb's ``code`` and ``message`` (and a HINT)."""
    severity = "FATAL" if fatal else "ERROR"
    fields = {
        "S": severity,
        "V": severity,
        "C": SQLSTATE.get(code, "XX000"),
        "M": message,
        "D": f"privdb error code: {code}",
    }
    return fields | ({"H": hint} if hint else {})


def from_error(err: PrivdbError, *, fatal: bool = False) -> dict[str, str]:
    hint = err.hint if isinstance(err, QueryCanceled) else None
    return error_fields(err.code, err.message, fatal=fatal, hint=hint)


def notice_fields(message: str) -> dict[str, str]:
    """A NOTICE (psql prints it as ``NOTICE:  …``; psycopg hands it to notice handlers)."""
    return {"S": "NOTICE", "V": "NOTICE", "C": "00000", "M": message}
