"""Superset's half of the run: a throw-away home (SQLite metadata, a random SECRET_KEY, no Celery, no
examples), its set-up commands, the web server (gunicorn, as Superset's images run it) and a REST client
that logs in as a user of the API does (access token, then a CSRF token for the writes)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from privdb_side import free_port, stop_group

__all__ = ["Api", "Superset"]

BIN = Path(sys.executable).parent  # the venv of Superset this script runs in
ADMIN, PASSWORD = "admin", secrets.token_urlsafe(12)

_CONFIG = """\
# written by e2e/superset/run.py for one run; thrown away with its directory
SECRET_KEY = {secret!r}
SQLALCHEMY_DATABASE_URI = {metadata!r}
FEATURE_FLAGS = {{}}
DATA_CACHE_CONFIG = {{"CACHE_TYPE": "NullCache"}}  # every chart load reaches privdb (its stored answers)
SQLLAB_ASYNC_TIME_LIMIT_SEC = 60
"""


@dataclass
class Superset:
    """A Superset home under ``work``; ``setup()`` runs its commands, ``start()`` its web server."""

    work: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def home(self) -> Path:
        return self.work / "superset"

    def env(self) -> dict[str, str]:
        return os.environ | {
            "SUPERSET_HOME": str(self.home),
            "SUPERSET_CONFIG_PATH": str(self.home / "superset_config.py"),
            "FLASK_APP": "superset",
            "PYTHONPATH": "",  # Superset's own packages only
        }

    def configure(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        config = _CONFIG.format(
            secret=secrets.token_urlsafe(42), metadata=f"sqlite:///{self.home / 'superset.db'}"
        )
        (self.home / "superset_config.py").write_text(config)

    def command(self, *args: str, log: Path) -> None:
        """One ``superset`` CLI command (``db upgrade``, ``fab create-admin``, ``init``)."""
        with log.open("ab") as out:
            done = subprocess.run(
                [str(BIN / "superset"), *args],
                env=self.env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=600,
            )
        if done.returncode != 0:
            raise RuntimeError(f"superset {' '.join(args[:2])} exited {done.returncode}; see {log}")

    def create_admin(self, log: Path) -> None:
        self.command(
            "fab", "create-admin", "--username", ADMIN, "--firstname", "Release", "--lastname", "Check",
            "--email", "admin@example.invalid", "--password", PASSWORD, log=log,
        )  # fmt: skip

    def start(self, log: Path) -> None:
        command = [str(BIN / "gunicorn"), "--workers", "1", "--threads", "8", "--timeout", "120"]
        command += ["--bind", f"127.0.0.1:{self.port}", "superset.app:create_app()"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, env=self.env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Superset's web server exited ({self.process.returncode}); see {log}")
            try:
                if requests.get(self.url + "/health", timeout=2).text == "OK":
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"Superset did not answer /health within 180 s; see {log}")

    def stop(self) -> None:
        stop_group(self.process)


class Api:
    """Superset's REST API as the admin: ``POST /api/v1/security/login`` gives a bearer token, and
    ``GET /api/v1/security/csrf_token/`` the CSRF token every write carries (with the same session)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        login: dict[str, str | bool] = {
            "username": ADMIN,
            "password": PASSWORD,
            "provider": "db",
            "refresh": True,
        }
        token = self._ok(self.http.post(url + "/api/v1/security/login", json=login, timeout=60))
        self.http.headers["Authorization"] = f"Bearer {token['access_token']}"
        csrf = self._ok(self.http.get(url + "/api/v1/security/csrf_token/", timeout=60))
        self.http.headers.update({"X-CSRFToken": csrf["result"], "Referer": url})

    @staticmethod
    def _ok(response: requests.Response) -> Any:
        if response.status_code >= 400:
            raise ApiError(response)
        return response.json()

    def get(self, path: str) -> Any:
        return self._ok(self.http.get(self.url + path, timeout=120))

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._ok(self.http.post(self.url + path, json=body, timeout=120))

    def put(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._ok(self.http.put(self.url + path, json=body or {}, timeout=120))

    def create_database(self, uri: str, options: str) -> int:
        """Test the connection, then create it, with ``options`` in the start-up packet of every
        connection (Extra → engine_params → connect_args, as a user types it in the form's Advanced tab)."""
        extra = json.dumps({"engine_params": {"connect_args": {"options": options}}})
        body = {"database_name": "privdb", "sqlalchemy_uri": uri, "extra": extra}
        self.post("/api/v1/database/test_connection/", body)
        created = self.post("/api/v1/database/", body | {"expose_in_sqllab": True})
        return int(created["id"])

    def sql_lab(self, database: int, sql: str, limit: int = 1000) -> dict[str, Any]:
        """Run ``sql`` in SQL Lab (synchronously, as with no Celery worker)."""
        body = {
            "database_id": database, "sql": sql, "schema": "public", "runAsync": False,
            "queryLimit": limit, "client_id": secrets.token_hex(5), "tab": "release check",
        }  # fmt: skip
        answer: dict[str, Any] = self.post("/api/v1/sqllab/execute/", body)
        return answer


class ApiError(RuntimeError):
    """A Superset API call answered with an error status; the message keeps Superset's own words."""

    def __init__(self, response: requests.Response) -> None:
        try:
            body = response.json()
            text = json.dumps(body.get("errors") or body.get("message") or body)[:1500]
        except ValueError:
            text = response.text[:300]
        super().__init__(f"{response.request.method} {response.url} → {response.status_code}: {text}")
        self.status = response.status_code
        self.text = text
