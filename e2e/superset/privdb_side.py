"""privdb's half of the run: a fresh database, an analyst, ``privdb serve --pg-port``, and the ledger.

Everything runs with privdb's own Python (the project's .venv) and the checkout's ``src`` first on the
path, through privdb's CLI as an owner would; Superset's venv holds no privdb."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

__all__ = ["Privdb", "free_port"]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Privdb:
    """A privdb database under ``work`` and its server."""

    python: Path
    work: Path
    analyst: str = "analyst"
    budget: float = 10.0
    http_port: int = field(default_factory=free_port)
    pg_port: int = field(default_factory=free_port)
    token: str = ""
    owner_token: str = ""
    truth: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def db(self) -> Path:
        return self.work / "privdb"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def _env(self) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
        return os.environ | {"PYTHONPATH": path}

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.python), *args], env=self._env(), capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:3])} failed: {done.stderr.strip()[-2000:]}")
        return done.stdout.strip()

    def create(self, people: int) -> None:
        """The ``people`` table (privdb.data.census, as the tests build it), an analyst, an owner token."""
        self.truth = json.loads(
            self._run(str(HERE / "make_people.py"), str(self.db), "--people", str(people))
        )
        grant = ["-m", "privdb", "grant", "--db", str(self.db), self.analyst, "--epsilon", str(self.budget)]
        self.token = self._run(*grant).splitlines()[-1].strip()
        self.owner_token = self._run("-m", "privdb", "token", "--db", str(self.db)).splitlines()[-1].strip()

    def start(self, log: Path) -> None:
        command = [str(self.python), "-m", "privdb", "serve", "--db", str(self.db)]
        command += ["--port", str(self.http_port), "--pg-port", str(self.pg_port)]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, env=self._env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"privdb serve exited ({self.process.returncode}); see {log}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"privdb serve did not answer /healthz within 60 s; see {log}")

    def stop(self) -> None:
        stop_group(self.process)

    def _get(self, path: str, token: str) -> Any:
        response = requests.get(self.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        response.raise_for_status()
        return response.json()

    def spent(self) -> float:
        """The analyst's ε spent, as the ledger has it."""
        return float(self._get("/v1/budget", self.token)["epsilon_spent"])

    def noise_scale(self, column: str) -> float:
        """The Laplace scale of ``column`` in the analyst's last answer, as privdb's explain states it
        (``POST /v1/explain`` of the DP-SELECT the log shows it answered; free)."""
        query = self.log()[-1]["query"]
        response = requests.post(
            self.url + "/v1/explain",
            json={"sql": query},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        response.raise_for_status()
        stated = next(c for c in response.json()["columns"] if c["column"] == column)
        return float(stated["scale"])

    def log(self) -> list[dict[str, Any]]:
        """The analyst's entries in privdb's audit log (the owner's view), oldest first."""
        entries: list[dict[str, Any]] = self._get(f"/v1/log?analyst={self.analyst}", self.owner_token)
        return entries


def stop_group(process: subprocess.Popen[bytes] | None, grace: float = 20) -> None:
    """SIGTERM a server started in its own session (its workers too), then SIGKILL after ``grace`` s."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
    except ProcessLookupError:
        pass
