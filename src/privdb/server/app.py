"""The HTTP API of DESIGN.md on FastAPI: a thin face over :class:`privdb.database.Database`.

Roles: the **owner** (tokens from ``privdb token`` or printed by the first ``privdb serve``) loads tables,
grants and revokes analysts, runs raw SQL and reads everyone's log; an **analyst** (token from ``privdb
grant``) asks DP queries on the tables granted and sees only their own budget and log. Every answer is
debited from the analyst's budget in the durable ledger before it leaves (``engine.run`` commits first).

Limits (docs/server.md): request bodies above ``max_body`` bytes get 413 before they are read in full, but a
table's file, which streams to disk under ``max_load_bytes`` (server/uploads.py); a query longer than
``privdb.sql.front.limits.MAX_QUERY_LENGTH`` characters or nested deeper than ``MAX_DEPTH`` levels
is a free ``parse_error``, the same refusal as in the library and the CLI; engine queries longer than
``query_timeout`` seconds are interrupted (and, having read data, charged). Requests run on the thread pool
of anyio (40 threads per worker process). No input yields a 500: validation errors come back as
``invalid_parameter`` (400) in DESIGN.md's error shape.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from privdb import deadline
from privdb.catalog.querylog import LogOptions, Outcome
from privdb.catalog.store import Principal
from privdb.catalog.typed import APPEND_KEEPS_METADATA
from privdb.crashpoint import crash_point
from privdb.database import Database, log_subject
from privdb.errors import Forbidden, InvalidParameter, PrivdbError, RawAccessDenied
from privdb.server.accesslog import off_the_loop
from privdb.server.bodies import AnalystIn, AttachIn, PublishIn, QueryIn, RawIn, SharedBudgetIn, TableIn
from privdb.server.errors import error_response, from_error
from privdb.server.negotiate import ARROW_RESPONSE, answer_response
from privdb.server.queryroute import ANALYSTS_ONLY, bearer, invalid_body, query_route
from privdb.server.surveys import router as surveys
from privdb.server.uploads import UploadIn, Uploads, clear_uploads, upload_file
from privdb.sql import engine

__all__ = ["MAX_BODY", "create_app"]

MAX_BODY = 16 * 2**20  # bytes; a table upload is the largest request
MAX_RAW_ROWS = 10_000  # rows an owner's raw SQL returns over HTTP


class _BodyLimit:
    """Refuses bodies over ``limit`` bytes with 413, by Content-Length or while they stream in; but not a
    file's upload (``PUT /v1/uploads/{id}``): it streams to disk under the owner's own limit (uploads.py)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        upload = scope.get("method") == "PUT" and str(scope.get("path", "")).startswith("/v1/uploads/")
        if scope["type"] != "http" or upload:
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._too_large(scope, receive, send)
            return
        # read the body first (at most limit bytes), then hand it on: a body streamed without
        # Content-Length is refused as soon as it passes the limit
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            "request_too_large",
            f"the request body is larger than the server's limit of {self.limit:,} bytes; send less "
            "(a table's file streams through POST and PUT /v1/uploads, as `privdb load --url` sends it) or "
            "start the server with a larger --max-body",
        )
        await response(scope, receive, send)


# The dependencies are coroutines: they run on the event loop (a token lookup is one indexed SQLite
# read) instead of costing each request extra hand-offs to the thread pool.
async def _principal(request: Request) -> Principal:
    db: Database = request.app.state.db
    return db.catalog.authenticate(bearer(request.headers))


Who = Annotated[Principal, Depends(_principal)]


async def _owner(who: Who) -> Principal:
    if not who.is_owner:
        raise RawAccessDenied("this is for the database owner; analysts ask DP-SELECT queries")
    return who


async def _analyst(who: Who) -> Principal:
    if who.is_owner:
        raise Forbidden(ANALYSTS_ONLY)
    return who


Owner = Annotated[Principal, Depends(_owner)]
Analyst = Annotated[Principal, Depends(_analyst)]


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """At start-up (uvicorn has installed its signal handlers by then, in each worker): SIGTERM also stops
    the planning of queries in flight (privdb.deadline), so the graceful shutdown it starts ends. The access
    log is written by a thread of its own while the app serves (server/accesslog.py)."""
    deadline.stop_on_term()
    with off_the_loop():
        yield


def create_app(
    db_dir: str | Path,
    *,
    read_only: bool = False,
    query_timeout: float | None = 30.0,
    max_body: int = MAX_BODY,
    ledger: str | None = None,
    max_load_bytes: int | None = None,
) -> FastAPI:
    """The application over one database directory (its ledger and catalog in PostgreSQL if ``ledger``
    is a ``postgresql://`` URL: several hosts' servers then share budgets, analysts and the log).
    ``max_load_bytes``: the largest file a load or an append may send (None: no limit but the disk's)."""
    db = Database(db_dir, read_only=read_only, ledger=ledger)
    uploads = Uploads(db, max_load_bytes)
    db.backend  # noqa: B018 (open the data now: the server holds DuckDB's lock from its start, not its first query)
    _start_up_notices(db)
    db.query_timeout = query_timeout
    app = FastAPI(
        title="privdb",
        version="0.1.0",
        description="A private statistical database: differentially private answers paid from budgets.",
        lifespan=_lifespan,
    )
    app.state.db = db

    @app.exception_handler(PrivdbError)
    async def _privdb_error(request: Request, err: PrivdbError) -> JSONResponse:
        return from_error(err)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        located = [e | {"loc": tuple(e.get("loc", ()))[1:]} for e in err.errors()]  # without "body"/"query"
        return error_response("invalid_parameter", invalid_body(located))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, err: StarletteHTTPException) -> JSONResponse:
        code = {404: "unknown_route", 405: "method_not_allowed"}.get(err.status_code, "invalid_parameter")
        return error_response(code, str(err.detail), err.status_code)

    @app.exception_handler(Exception)
    async def _fault(request: Request, err: Exception) -> JSONResponse:
        return error_response("internal_error", f"internal error ({type(err).__name__}); please report it")

    # ---- analysts
    # JSON by default, an Arrow stream when the Accept header asks for it (server/negotiate.py). Answered by
    # the plain route of server/queryroute.py, placed first; this declaration is what /openapi.json shows
    app.router.routes.insert(0, query_route(db))

    @app.post(
        "/v1/query",
        summary="Answer a DP-SELECT, paid from the analyst's budget",
        response_model=dict[str, Any],
        responses=ARROW_RESPONSE,
    )
    def query(body: QueryIn, who: Analyst, request: Request) -> Response:
        answer = engine.run(db, who.name, body.sql, parameters=body.parameters)
        return answer_response(answer, request.headers.get("accept"))

    @app.post("/v1/explain", summary="The plan and cost of a DP-SELECT; spends nothing")
    def explain(body: QueryIn, who: Who) -> dict[str, Any]:
        return engine.explain(db, body.sql, None if who.is_owner else who.name)

    @app.get("/v1/budget", summary="The analyst's budget (the owner: ?analyst=NAME)")
    def budget(who: Who, analyst: str | None = None) -> dict[str, Any]:
        if who.is_owner:
            if analyst is None:
                raise InvalidParameter(
                    "the owner has no budget; ask for an analyst's: /v1/budget?analyst=NAME"
                )
            return db.budget_of(analyst).to_dict()
        if analyst is not None and analyst != who.name:
            raise Forbidden("an analyst sees only their own budget")
        return db.budget(who.name).to_dict()

    @app.get("/v1/tables", summary="Tables with their public metadata")
    def tables(who: Who) -> list[dict[str, Any]]:
        return db.visible_tables(None if who.is_owner else who.name)

    @app.get("/v1/log", summary="Who asked what and what it cost (an analyst: their own entries)")
    def log(
        who: Who,
        response: Response,
        limit: Annotated[int | None, Query(ge=1, le=100_000)] = None,
        offset: Annotated[int, Query(ge=0)] = 0,
        analyst: Annotated[str | None, Query(description="one analyst's entries (the owner)")] = None,
        table: Annotated[str | None, Query(description="entries whose query names this table")] = None,
        since: Annotated[float | datetime | None, Query(description="Unix seconds or ISO 8601")] = None,
        outcome: Annotated[Outcome | None, Query(description="how it ended")] = None,
        order: Annotated[Literal["asc", "desc"], Query(description="desc: newest first")] = "asc",
    ) -> list[dict[str, Any]]:
        subject = log_subject(None if who.is_owner else who.name, analyst)
        start = since.timestamp() if isinstance(since, datetime) else since
        filters: LogOptions = {"table": table, "since": start, "outcome": outcome}
        response.headers["X-Total-Count"] = str(db.log_count(subject, **filters))  # the page's "… of N"
        page: LogOptions = {"limit": limit, "offset": offset, "newest_first": order == "desc"}
        return db.log(subject, **(filters | page))

    # ---- the owner
    @app.post("/v1/analysts", summary="Create an analyst with a budget (or re-grant); returns the token")
    def add_analyst(body: AnalystIn, who: Owner) -> dict[str, Any]:
        token = db.grant(
            body.name,
            epsilon=body.epsilon,
            delta=body.delta,
            tables=body.tables,
            expires_in=body.expires_in,
            group=body.group,
            query_epsilon=body.query_epsilon,
            query_delta=body.query_delta,
        )
        return {"name": body.name, "token": token, "budget": db.budget(body.name).to_dict()}

    @app.post("/v1/budgets", summary="Set a table's lifetime budget or a budget group's")
    def set_shared_budget(body: SharedBudgetIn, who: Owner) -> dict[str, Any]:
        return db.set_shared_budget(
            table=body.table, group=body.group, epsilon=body.epsilon, delta=body.delta, renew=body.renew
        )

    @app.get("/v1/budgets", summary="Every table lifetime budget and budget group (owner)")
    def shared_budgets(who: Owner) -> list[dict[str, Any]]:
        return db.shared_budgets()

    @app.post(
        "/v1/publish", summary="Publish a table once with a DP guarantee, charged to its budget (owner)"
    )
    def publish(body: PublishIn, who: Owner) -> dict[str, Any]:
        # optional: publishing's code (pandas, SciPy) loads at a first release, not before the server listens
        from privdb.publish.service import publish_request

        return publish_request(db, body.method, body.table, body.options)

    @app.get("/v1/budgets/classes", summary="Personalised tables: the ε each class of units has lost (owner)")
    def class_losses(who: Owner) -> list[dict[str, Any]]:
        return db.class_losses()

    @app.get("/v1/analysts", summary="Every analyst, their token's state and budget")
    def list_analysts(who: Owner) -> list[dict[str, Any]]:
        return [a | {"budget": db.budget(a["name"]).to_dict()} for a in db.catalog.analysts()]

    @app.delete("/v1/analysts/{name}", summary="Revoke an analyst's token")
    def revoke(name: str, who: Owner) -> dict[str, Any]:
        db.revoke(name)
        return {"name": name, "revoked": True}

    @app.post("/v1/tables", summary="Load a table from CSV text with its privacy metadata (or add rows)")
    def add_table(body: TableIn, who: Owner) -> dict[str, Any]:
        if body.append and body.metadata is not None:
            raise InvalidParameter(APPEND_KEEPS_METADATA)
        with upload_file(db.path) as path:  # DIR/uploads/, owner-only; emptied at start-up (uploads.py)
            path.write_text(body.csv, encoding="utf-8")
            crash_point("upload-written")
            meta = (
                db.append(body.name, path) if body.append else db.load(body.name, path, body.metadata or {})
            )
        return db.loaded(meta)  # with the row count and where the data strays from the metadata

    # a file of any size: checked first, then streamed to disk (server/uploads.py)
    @app.post("/v1/uploads", summary="Check a load or an append before its file is sent; an upload id")
    def open_upload(body: UploadIn, who: Owner) -> dict[str, Any]:
        return uploads.open(body)

    @app.put("/v1/uploads/{upload}", summary="The file of an upload, as CSV: streamed to disk, then loaded")
    async def put_upload(upload: str, request: Request, who: Owner) -> dict[str, Any]:
        return await uploads.receive(upload, request)

    @app.delete("/v1/uploads/{upload}", summary="Forget an upload whose file will not be sent")
    def forget_upload(upload: str, who: Owner) -> dict[str, Any]:
        return uploads.forget(upload)

    @app.post(
        "/v1/attachments", summary="Register a table that stays in its own engine (SQLite, PostgreSQL…)"
    )
    def attach(body: AttachIn, who: Owner) -> dict[str, Any]:
        meta = db.attach(body.name, body.engine, body.source, body.metadata)
        return {"name": meta.name} | meta.to_dict()

    @app.post("/v1/sql", summary="Raw SQL (the owner's direct access)")
    def raw_sql(body: RawIn, who: Owner) -> dict[str, Any]:
        frame = db.owner_sql(body.sql)
        shown = frame.head(MAX_RAW_ROWS)
        return {
            "columns": [str(c) for c in shown.columns],
            "rows": [[_plain(v) for v in row] for row in shown.itertuples(index=False, name=None)],
            "truncated": len(frame) > len(shown),
        }

    app.include_router(surveys)  # the local model's surveys: server/surveys.py

    # ---- the page and health
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_static("index.html"))

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _STATIC_TYPES:
            return error_response("unknown_route", f"no static file {name!r}", 404)
        return Response(_static(name), media_type=_STATIC_TYPES[name])

    @app.get("/healthz", summary="Liveness")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(_BodyLimit, limit=max_body)
    return app  # whoever serves it closes its Database (server/run.py): a lifespan app runs no on_shutdown


def _start_up_notices(db: Database) -> None:
    """Empty ``DIR/uploads/`` (a crash's leftovers: the data file is held for writing now, so no load is under
    way; a read-only server loads nothing and leaves it) and tell the owner, on standard error, what opening
    the data found a crash had left (privdb.catalog.loads)."""
    removed = 0 if db.read_only else clear_uploads(db.path)
    notices = db.notices + (
        [f"removed {removed} upload(s) a crashed server left in {db.path / 'uploads'}"] if removed else []
    )
    for notice in notices:
        print(f"privdb: notice: {notice}", file=sys.stderr)


_STATIC_TYPES = {
    "common.js": "text/javascript",  # the helpers the three page scripts share: loaded first
    "app.js": "text/javascript",
    "surveys.js": "text/javascript",
    "publish.js": "text/javascript",
    "style.css": "text/css",
}


def _static(name: str) -> str:
    return (resources.files("privdb.server") / "static" / name).read_text(encoding="utf-8")


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)
