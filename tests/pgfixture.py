"""A throw-away PostgreSQL cluster on a loopback port under a temporary directory, removed afterwards.

`make test` installs Debian's `postgresql` package if it is missing; initdb and the server refuse to run
as root, so as root they run as the `postgres` user the package creates."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.harness.ports import free_port as _port


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """Yields ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL is not installed: `make test` installs Debian's postgresql package")
    root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if root else []
    work = Path(tempfile.mkdtemp(prefix="privdb-pg-"))
    data = work / "data"
    if root:
        shutil.chown(work, "postgres")
    port = _port()
    try:
        subprocess.run([*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, capture_output=True)  # fmt: skip
        options = f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off"
        start = [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(work / "log"), "-w", "start"]
        subprocess.run(start, check=True, capture_output=True)
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        import psycopg

        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def fresh_database(url: str) -> str:
    """A new, empty database in the cluster at ``url`` (each test its own); its URL."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{url.rsplit('/', 1)[0]}/{name}"
