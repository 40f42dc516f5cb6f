"""A real ``privdb serve --pg-port`` and the real PostgreSQL clients the pgwire tests drive."""

from __future__ import annotations

import glob
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from privdb.database import Database
from serverfixtures import Server, free_port, make_server_db

__all__ = ["PSQL", "PgServed", "psql", "start_pg_server"]

_found = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
PSQL = _found[-1] if _found else None  # Debian's package (make test installs PostgreSQL)


@dataclass
class PgServed:
    server: Server
    pg_port: int
    tokens: dict[str, str]

    def url(self, user: str) -> str:
        return f"postgresql://{user}:{self.tokens[user]}@127.0.0.1:{self.pg_port}/privdb"


def start_pg_server(path: Path, *, budget: float = 5.0, extra: list[str] | None = None) -> PgServed:
    """The database of serverfixtures (alice: people and secret, bob: people only) plus a public table
    ``regions``, served over HTTP and PostgreSQL's protocol."""
    tokens = make_server_db(path, budget=budget)
    with Database(path) as db:
        db.backend.load_frame(
            "regions", pd.DataFrame({"code": [1, 2, 3], "name": ["north", "south", "east"]})
        )
        db.set_metadata(
            "regions", {"public": True, "columns": {"code": {"type": "int"}, "name": {"type": "text"}}}
        )
    pg_port = free_port()
    server = Server(path, extra=["--pg-port", str(pg_port), *(extra or [])]).start()
    return PgServed(server, pg_port, tokens)


def psql(
    served: PgServed, user: str, *commands: str, password: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run Debian's psql with ``-c`` for each command (unaligned, tuples only, ``|`` between fields)."""
    assert PSQL is not None
    env = os.environ | {"PGPASSWORD": served.tokens.get(user, "") if password is None else password}
    args = [PSQL, "-h", "127.0.0.1", "-p", str(served.pg_port), "-U", user, "-d", "privdb", "-X", "-A", "-t"]
    args += ["-v", "ON_ERROR_STOP=1", "-F", "|"]
    for command in commands:
        args += ["-c", command]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, check=False)
