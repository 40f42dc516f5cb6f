"""A real privdb server on a loopback port, in its own process, for the integration tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from bench.harness.ports import free_port

from privdb.data.census import METADATA, generate
from privdb.database import Database

__all__ = ["Server", "ask_concurrently", "free_port", "make_server_db"]


def make_server_db(
    path: Path, *, people: int = 3000, budget: float = 5.0, ledger: str | None = None
) -> dict[str, str]:
    """A database with a ``people`` table and ``secret`` table, analysts alice (both tables), bob (people
    only) and an owner token (in PostgreSQL with a ``ledger`` URL); returns the tokens."""
    with Database(path, ledger=ledger) as db:
        db.backend.load_frame("people", generate(people, seed=3))
        db.set_metadata("people", METADATA)
        db.backend.load_frame("secret", generate(200, seed=4))
        db.set_metadata("secret", METADATA)
        return {
            "alice": db.grant("alice", epsilon=budget, delta=1e-4),
            "bob": db.grant("bob", epsilon=budget, tables=["people"]),
            "owner": db.catalog.add_owner_token(),
        }


@dataclass
class Server:
    """``privdb serve`` as a subprocess; ``start()`` waits until it answers ``/healthz``."""

    db: Path
    workers: int = 1
    extra: list[str] = field(default_factory=list)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    stdout: Path | None = None  # where the server's standard output (the access log) goes; None: discarded

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        command = [sys.executable, "-m", "privdb", "serve", "--db", str(self.db), "--port", str(self.port)]
        command += ["--workers", str(self.workers), *self.extra]
        with self.stdout.open("ab") if self.stdout else contextlib.nullcontext(subprocess.DEVNULL) as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.PIPE, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.process.stderr.read().decode()}")  # type: ignore[union-attr]
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not come up within 60 s")

    def kill(self) -> None:
        """``kill -9`` the whole process group (uvicorn's workers included)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def ask_concurrently(
    url: str, token: str, queries: list[str], clients: int
) -> list[tuple[str, int, dict[str, Any]]]:
    """Send ``queries`` to one server from ``clients`` threads, each with its own keep-alive connection:
    (query, status, JSON answer) each."""
    local = threading.local()

    def one(query: str) -> tuple[str, int, dict[str, Any]]:
        if not hasattr(local, "client"):
            local.client = httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        response = local.client.post(url + "/v1/query", json={"sql": query})
        return query, response.status_code, response.json()

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(one, queries))
