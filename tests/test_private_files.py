"""Files private by default (issue 37): under a umask of 022, everything privdb creates in a database
directory — the data file and its WAL and spill folder, the ledger and its -wal, -shm and .lock, the
uploads folder, serve.json, the log file of the owner's --log-config, a saved model — is owner-only (files
0600, folders 0700), while the server runs and after. Real commands in their own processes, a real
server on a port."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

import privdb
from privdb.private_files import create_private, open_private, private_dir
from serverfixtures import free_port

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SPILL = (
    "SET memory_limit = '50MB'; SET threads = 1; "
    "SELECT COUNT(*) FROM (SELECT range, md5(range::VARCHAR) AS h FROM range(3000000) ORDER BY h)"
)  # a sort larger than memory: DuckDB spills it to data.duckdb.tmp/


def _privdb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "privdb", *args], capture_output=True, text=True, timeout=300, umask=0o022
    )


def _modes(root: Path) -> dict[str, str]:
    """Path under ``root`` → its mode, a folder's with a trailing ``/``, for every file and folder (``root``
    itself as "."), as they are now: a folder may be gone by the time the modes are checked (DuckDB removes
    its spill folder when the server closes the database)."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode)) + "/"}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = oct(stat.S_IMODE(path.lstat().st_mode)) + "/" * path.is_dir()
    return found


def _all_private(modes: dict[str, str]) -> None:
    wrong = {name: mode for name, mode in modes.items() if mode not in ("0o700/", "0o600")}
    assert wrong == {}, modes


def test_every_file_privdb_creates_in_a_database_is_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "db"
    loaded = _privdb("load", "people", str(EXAMPLES / "people.csv"), "--db", str(db), "--metadata",
                     str(EXAMPLES / "people.yaml"))  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    published = _privdb("publish", "synthetic", "people", "--db", str(db), "--epsilon", "1", "--delta",
                        "1e-9", "--rows", "50", "--columns", "sex,age", "-o", str(tmp_path / "synthetic.csv"),
                        "--save-model", str(db / "model"))  # fmt: skip
    assert published.returncode == 0, published.stderr
    log = {"version": 1, "disable_existing_loggers": False,
           "handlers": {"file": {"class": "logging.FileHandler", "filename": str(db / "server.log")}},
           "loggers": {"uvicorn.access": {"handlers": ["file"], "level": "INFO"}}}  # fmt: skip
    (tmp_path / "log.json").write_text(json.dumps(log))
    issued = _privdb("token", "--db", str(db))
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "privdb", "serve", "--db", str(db), "--port", str(port), "--log-config",
         str(tmp_path / "log.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, umask=0o022, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, server)
        owner = privdb.connect(url, token=token)
        owner.load("people", EXAMPLES / "people.csv", EXAMPLES / "people.yaml")  # an upload, written then
        headers = {"Authorization": f"Bearer {token}"}
        spilled = httpx.post(url + "/v1/sql", json={"sql": SPILL}, headers=headers, timeout=120)
        assert spilled.status_code == 200, spilled.text
        running = _modes(db)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    expected = ["data.duckdb", "data.duckdb.wal", "privdb.sqlite", "privdb.sqlite-wal", "privdb.sqlite-shm",
                "privdb.sqlite.lock", "serve.json", "uploads", "server.log", "data.duckdb.tmp",
                "model/model.json", "model/arrays.npz"]  # fmt: skip
    assert set(expected) <= set(running), running
    _all_private(running)
    _all_private(_modes(db))  # after the server stopped


def _wait_for(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError("the server did not come up")


def test_the_helpers_set_owner_only_modes_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        folder = private_dir(tmp_path / "a" / "b")
        assert stat.S_IMODE(folder.stat().st_mode) == stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
        assert create_private(folder / "f") and not create_private(folder / "f")
        with open_private(folder / "g", encoding="utf-8") as out:
            out.write("x")
        existing = tmp_path / "mine"
        existing.write_text("y")  # the owner's own file, 0644: truncated on writing, its mode kept
        with open_private(existing, encoding="utf-8") as out:
            out.write("z")
        assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in (folder / "f", folder / "g", existing)} == {
            "f": 0o600, "g": 0o600, "mine": 0o644
        }  # fmt: skip
    finally:
        os.umask(previous)
