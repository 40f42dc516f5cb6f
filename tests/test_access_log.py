"""The server's access log (issue 15): uvicorn's, on by default to standard output, off with
`--no-access-log`, routed by a logging config file (`--log-config` or PRIVDB_LOG_CONFIG), also with two
workers. Real `privdb serve` processes on real ports; the log is read after the server has stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from serverfixtures import Server, make_server_db


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("access") / "db"
    return path, make_server_db(path, people=50)


def _requests(server: Server, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(server.url + "/v1/budget", headers=headers).status_code == 200
    assert httpx.get(server.url + "/v1/log", params={"limit": 5}, headers=headers).status_code == 200
    assert httpx.get(server.url + "/v1/nowhere").status_code == 404


def _served(db: Path, token: str, out: Path, *extra: str, workers: int = 1) -> str:
    server = Server(db, workers=workers, extra=list(extra), stdout=out).start()
    try:
        _requests(server, token)
    finally:
        server.stop()
    return out.read_text(encoding="utf-8") if out.exists() else ""


def test_the_access_log_is_on_by_default(db: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, tokens = db
    written = _served(path, tokens["alice"], tmp_path / "out.log")
    assert '"GET /v1/budget HTTP/1.1" 200' in written
    assert '"GET /v1/log?limit=5 HTTP/1.1" 200' in written
    assert '"GET /v1/nowhere HTTP/1.1" 404' in written
    assert tokens["alice"] not in written  # the token travels in a header, never logged


def test_no_access_log(db: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, tokens = db
    assert "HTTP/1.1" not in _served(path, tokens["alice"], tmp_path / "out.log", "--no-access-log")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_log_config_file_routes_the_access_log(
    db: tuple[Path, dict[str, str]], tmp_path: Path, workers: int
) -> None:
    path, tokens = db
    target = tmp_path / "access.log"
    config = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "%(asctime)s %(message)s"}},
        "handlers": {"file": {"class": "logging.FileHandler", "filename": str(target), "formatter": "plain"}},
        "loggers": {"uvicorn.access": {"handlers": ["file"], "level": "INFO", "propagate": False}},
    }
    (tmp_path / "logging.json").write_text(json.dumps(config))
    logging_json = str(tmp_path / "logging.json")
    stdout = _served(
        path, tokens["alice"], tmp_path / "out.log", "--log-config", logging_json, workers=workers
    )
    assert "HTTP/1.1" not in stdout
    assert target.read_text().count('"GET /v1/budget HTTP/1.1" 200') == 1


def _serve(path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`privdb serve` as its own process, as an owner runs it: checking a logging file applies it
    (`logging.config.dictConfig` closes every handler the process has, a test runner's among them)."""
    return subprocess.run(
        [sys.executable, "-m", "privdb", "serve", "--db", str(path), *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_a_bad_log_config_is_refused_before_serving(db: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, _ = db
    done = _serve(path, "--log-config", str(tmp_path / "none.json"))
    assert done.returncode == 2 and "is not a file" in done.stderr
    (tmp_path / "bad.json").write_text('{"version": 1, "handlers": {"h": {"class": "no.such.Handler"}}}')
    done = _serve(path, env={"PRIVDB_LOG_CONFIG": str(tmp_path / "bad.json")})
    assert done.returncode == 2 and "--log-config" in done.stderr and "cannot be used" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not (path / "serve.json").exists()  # it never started
