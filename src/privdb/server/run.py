"""Running the server: uvicorn with privdb's settings, its access log, and the marker that tells the
owner's ``--db`` commands where the server is (:mod:`privdb.inuse`).

The access log is uvicorn's (``uvicorn.access``: client address, request line, status), on by default, to
standard output; uvicorn's own notices go to standard error at WARNING and above. ``log_config`` (a
``logging`` dict-config as JSON or YAML, or an INI file, as uvicorn's ``--log-config``) replaces that
set-up entirely, e.g. to write the access log to a file. Request lines hold no token (tokens travel in the
``Authorization`` header, which is never logged); a ``GET /v1/log?analyst=…`` line shows its filters.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.inuse import announce
from privdb.private_files import owner_only_umask
from privdb.server.app import MAX_BODY, create_app

__all__ = ["PgOptions", "app_from_env", "serve"]

ENV_DB, ENV_TIMEOUT, ENV_MAX_BODY = "PRIVDB_SERVER_DB", "PRIVDB_SERVER_TIMEOUT", "PRIVDB_SERVER_MAX_BODY"
ENV_LEDGER, ENV_MAX_LOAD = "PRIVDB_SERVER_LEDGER", "PRIVDB_SERVER_MAX_LOAD_BYTES"


def app_from_env() -> FastAPI:
    """The factory uvicorn's worker processes call (``--workers N``): settings come from the environment."""
    timeout = os.environ.get(ENV_TIMEOUT)
    return create_app(
        os.environ[ENV_DB],
        read_only=True,
        query_timeout=float(timeout) if timeout else None,
        max_body=int(os.environ.get(ENV_MAX_BODY, MAX_BODY)),
        ledger=os.environ.get(ENV_LEDGER) or None,
        max_load_bytes=int(os.environ[ENV_MAX_LOAD]) if os.environ.get(ENV_MAX_LOAD) else None,
    )


def logging_config(log_config: str | Path | None) -> dict[str, Any] | str:
    """uvicorn's default logging with its notices quietened to warnings (privdb prints its own start
    line), or the owner's file as given."""
    if log_config is not None:
        if not Path(log_config).is_file():
            raise InvalidParameter(
                f"--log-config {str(log_config)!r} is not a file: give a JSON, YAML or INI file"
            )
        return str(log_config)
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["uvicorn.error"]["level"] = "WARNING"
    return config


def local_url(host: str, port: int) -> str:
    """The URL a command on this machine reaches the server at (a wildcard address means loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def serve(
    db_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    query_timeout: float | None = 30.0,
    max_body: int = MAX_BODY,
    access_log: bool = True,
    log_config: str | Path | None = None,
    ledger: str | None = None,
    pg: PgOptions | None = None,
    max_load_bytes: int | None = None,
) -> None:
    """Run the server until interrupted. With ``workers > 1`` each worker process opens the data
    read-only (DuckDB allows one writer per file); budgets stay exact across them (the ledger's SQLite
    transactions serialise processes). ``ledger``: a ``postgresql://`` URL where the budgets, analysts and
    log live, shared with other hosts' servers (whose transactions serialise alike). While it runs,
    ``DIR/serve.json`` names its pid and URL. ``pg``: also accept PostgreSQL clients (privdb.server.pgwire)
    in this process, on the same Database (with ``workers > 1``, one more read-only one).
    ``max_load_bytes``: the largest file a load or append may stream in (None: no limit but the disk's)."""
    import uvicorn

    owner_only_umask()  # before the owner's --log-config creates its files: owner-only too
    logs: dict[str, Any] = {"access_log": access_log, "log_config": logging_config(log_config)}
    logs["log_level"] = None  # the levels are the config's
    try:  # check the owner's logging file now, with a clear error, not in every worker
        uvicorn.Config("privdb.server.run:app_from_env", **logs)  # its constructor applies the logging
    except (OSError, ValueError, KeyError, TypeError, ImportError) as err:
        raise InvalidParameter(f"--log-config {str(log_config)!r} cannot be used: {err}") from None
    with announce(db_dir, local_url(host, port)):
        if workers > 1:
            os.environ[ENV_DB] = str(Path(db_dir).resolve())
            if query_timeout is not None:
                os.environ[ENV_TIMEOUT] = str(query_timeout)
            os.environ[ENV_MAX_BODY] = str(max_body)
            os.environ[ENV_LEDGER] = ledger or ""
            os.environ[ENV_MAX_LOAD] = "" if max_load_bytes is None else str(max_load_bytes)
            opened: list[Database] = []  # the listener's own read-only Database, closed once it stops

            def for_pg() -> Database:
                opened.append(_read_only(db_dir, query_timeout, ledger))
                return opened[-1]

            try:
                with _pg_listener(pg, for_pg, access_log, log_config):
                    uvicorn.run(
                        "privdb.server.run:app_from_env",
                        factory=True,
                        host=host,
                        port=port,
                        workers=workers,
                        **logs,
                    )
            finally:
                for db in opened:
                    db.close()
        else:
            app = create_app(
                db_dir, query_timeout=query_timeout, max_body=max_body, ledger=ledger,
                max_load_bytes=max_load_bytes,
            )  # fmt: skip
            try:  # the Database closed once both doors are shut (a command ends without teardown)
                with _pg_listener(pg, lambda: app.state.db, access_log, log_config):
                    uvicorn.run(app, host=host, port=port, **logs)
            finally:
                app.state.db.close()


@dataclass(frozen=True)
class PgOptions:
    """Where the PostgreSQL listener listens, its TLS certificate and key (PEM files) if any, and its
    limits (privdb.server.pgwire.admission: PostgreSQL's max_connections and authentication_timeout)."""

    port: int
    host: str = "127.0.0.1"
    tls_cert: str | Path | None = None
    tls_key: str | Path | None = None
    max_connections: int = 100
    auth_timeout: float = 60.0
    auth_delay: float = 0.1


def _read_only(db_dir: str | Path, query_timeout: float | None, ledger: str | None) -> Database:
    db = Database(db_dir, read_only=True, ledger=ledger)
    db.query_timeout = query_timeout
    return db


@contextlib.contextmanager
def _pg_listener(
    pg: PgOptions | None, database: Callable[[], Database], access_log: bool, log_config: str | Path | None
) -> Iterator[None]:
    """The PostgreSQL listener for the time the HTTP server runs (nothing without ``pg``). Its log lines
    (logger ``privdb.pgwire``: who connected, each statement's kind and outcome, never a token) go to
    standard output with the access log, or where the owner's ``log_config`` sends them."""
    if pg is None:
        yield
        return
    try:  # optional: the PostgreSQL protocol needs the `pg` extra (pygwire), loaded only with --pg-port
        from privdb.server.pgwire import Limits, PgServer, tls_context
    except ImportError:
        raise InvalidParameter(
            "--pg-port needs the PostgreSQL protocol library: pip install 'privdb[pg]'"
        ) from None
    context = tls_context(pg.tls_cert, pg.tls_key)
    limits = Limits(pg.max_connections, pg.auth_timeout, pg.auth_delay)
    listener = PgServer(pg.host, pg.port, database(), context, limits)
    logger = logging.getLogger("privdb.pgwire")
    if log_config is None and not logger.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO if access_log else logging.WARNING)
        logger.propagate = False
    listener.start()
    try:
        yield
    finally:
        listener.shutdown()
        listener.server_close()
