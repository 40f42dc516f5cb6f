"""``POST /v1/query`` as a plain Starlette route: the busiest endpoint skips FastAPI's per-request
machinery (dependency solving, body-field validation, the endpoint wrapper and its extra hand-offs). The
contract is FastAPI's, kept here by hand and checked by tests/test_query_route.py:

* a body that is not JSON → ``invalid_parameter`` (400) before the token is looked at, as FastAPI reads
  the body before it solves dependencies; then the token (``unauthorized`` 401; the owner's is
  ``forbidden`` 403); then the body's shape, by the same pydantic model (``QueryIn``) and the same message
  as app.py's validation handler;
* the answer by ``negotiate.answer_response`` (JSON or Arrow, ``Vary: Accept``). All of it after reading
  the body runs in one hand-off to the thread pool FastAPI would use (the token check too, so the event
  loop only moves bytes); errors raised are the app's exception handlers' (the route sits in its router).

app.py still declares the FastAPI route, so the OpenAPI document describes ``/v1/query`` as before; this
route is placed before it and answers every request."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from privdb.catalog.store import Principal
from privdb.database import Database
from privdb.errors import Forbidden, InvalidParameter, Unauthorized
from privdb.server.bodies import QueryIn
from privdb.server.negotiate import answer_response
from privdb.sql import engine

__all__ = ["ANALYSTS_ONLY", "bearer", "invalid_body", "query_route"]

ANALYSTS_ONLY = (
    "the owner has no budget: ask DP-SELECTs with an analyst's token (POST /v1/analysts), or run raw SQL "
    "with POST /v1/sql"
)


def bearer(headers: Headers) -> str:
    """The bearer token of a request's headers, or ``unauthorized`` saying what to send."""
    header = headers.get("authorization")
    if not header:
        raise Unauthorized("missing token: send `Authorization: Bearer <token>` (from `privdb grant`)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header must be `Bearer <token>`")
    return token.strip()


def invalid_body(errors: list[Any]) -> str:
    """The ``invalid_parameter`` message for validation errors (pydantic's, located in the body)."""
    where = (".".join(str(p) for p in e.get("loc", ())) or "body" for e in errors[:5])
    problems = "; ".join(f"{w}: {e.get('msg', 'invalid')}" for w, e in zip(where, errors[:5], strict=True))
    return f"the request does not fit the API: {problems}"


def _json_type(content_type: str | None) -> bool:
    """Whether FastAPI reads the body as JSON: ``application/json`` or ``application/…+json``."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    main, _, sub = media.partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


_NO_BODY = object()
_NOT_AN_OBJECT = "Input should be a valid dictionary or object to extract fields from"  # FastAPI's wording


def _body(raw: bytes, content_type: str | None) -> Any:
    """The body as FastAPI reads it: JSON when the Content-Type says so, else the bytes."""
    if not raw:
        return _NO_BODY
    if not _json_type(content_type):
        return raw  # not read as JSON: refused below, as FastAPI does
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise InvalidParameter(invalid_body([{"loc": (err.pos,), "msg": "JSON decode error"}])) from None
    except UnicodeDecodeError:
        raise InvalidParameter("There was an error parsing the body") from None


def query_route(db: Database) -> Route:
    """The route answering ``POST /v1/query`` on ``db``: the body is read on the event loop, everything
    else (the token check included) runs in one hand-off to the thread pool, beside other requests."""

    async def query(request: Request) -> Response:
        raw = await request.body()
        return await run_in_threadpool(_answer, db, raw, request.headers)

    return Route("/v1/query", query, methods=["POST"])


def _answer(db: Database, raw: bytes, headers: Headers) -> Response:
    data = _body(raw, headers.get("content-type"))
    who: Principal = db.catalog.authenticate(bearer(headers))
    if who.is_owner:
        raise Forbidden(ANALYSTS_ONLY)
    if data is _NO_BODY or not isinstance(data, dict):
        what = "Field required" if data is _NO_BODY else _NOT_AN_OBJECT
        raise InvalidParameter(invalid_body([{"msg": what}]))
    try:
        body = QueryIn.model_validate(data)
    except ValidationError as err:
        raise InvalidParameter(invalid_body(err.errors())) from None
    answer = engine.run(db, who.name, body.sql, parameters=body.parameters)
    return answer_response(answer, headers.get("accept"))
