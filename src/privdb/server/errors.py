"""privdb's error codes as HTTP statuses, and the JSON error shape of DESIGN.md."""

from __future__ import annotations

import math

from fastapi.responses import JSONResponse

from privdb.errors import PrivdbError, RateLimited

__all__ = ["STATUS", "error_response"]

STATUS = {
    "parse_error": 400,
    "unsupported_query": 400,
    "invalid_parameter": 400,
    "unknown_column": 400,
    "unknown_table": 404,
    "unauthorized": 401,
    "raw_access_denied": 403,
    "forbidden": 403,
    "budget_exhausted": 409,  # a state of the analyst's account: repeating will not help
    "query_failed": 422,  # charged; the engine failed on the data
    "request_too_large": 413,
    "limit_reached": 409,  # a token's lasting allowance (one response, an open survey's cap) is used up
    "rate_limited": 429,  # Retry-After says when the token may send again
    "internal_error": 500,
    "engine_unavailable": 503,  # an attached engine is down: nothing spent, retry later
}


def error_response(code: str, message: str, status: int | None = None) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if code == "unauthorized" else None
    return JSONResponse(
        {"error": {"code": code, "message": message}},
        status_code=status or STATUS.get(code, 400),
        headers=headers,
    )


def from_error(err: PrivdbError) -> JSONResponse:
    response = error_response(err.code, err.message)
    if isinstance(err, RateLimited):
        response.headers["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
    return response
