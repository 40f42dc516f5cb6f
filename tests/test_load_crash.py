"""Nothing of a failed load survives (issue 37). A real `privdb serve` — or the `privdb load` process — is
killed with SIGKILL at each step of every load path (over HTTP with `privdb load --url`, `privdb load --db`,
`privdb attach --url`): at the named steps of privdb.crashpoint (``PRIVDB_CRASH_AT``: the process kills
itself there), and after several delays into a large load. Then the server starts again, and an analyst
granted every table lists them over HTTP and with psql's ``\\dt`` over the PostgreSQL port, and queries each:
no ``__privdb`` name, no partial table (the new rows under the old metadata, or under none), no upload left on
disk, no metadata of a table the data lacks; the owner is told what the restart put right.

Each path's kills follow one another on one database, as an owner's would: each restarted server is looked
at, then (with the next crash point set) takes the next load.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pgwirefixtures import PSQL, PgServed, psql
from privdb.crashpoint import ENV, POINTS
from serverfixtures import Server, free_port, make_server_db

LOAD_POINTS = ["staged", "table-written", "committed", "metadata-written"]
DONE_POINTS = ("committed", "metadata-written")  # past the data file's commit: the restart finishes the load
FINISHED = "finished the load of table 'survey' that a crash had interrupted"
State = tuple[int, int] | None  # the survey table an analyst sees: (rows, the age bound), or none


class Loads:
    """A database with people and secret (alice may query every table), the survey files loaded into it
    (the i-th has its own row count and age bound, so each state tells which load it came from), and an
    empty TMPDIR for the processes started: an upload put in the system's temporary folder would show."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp, self.db = tmp_path, tmp_path / "db"
        self.tokens = make_server_db(self.db, people=300, budget=100.0)
        self.temp = tmp_path / "tmp"
        self.temp.mkdir()

    def version(self, i: int, people: int = 1000) -> tuple[Path, Path, State]:
        """The i-th file (4 rows a person), its metadata file, and the state loading it gives."""
        rows = [f"{p},{(p * 7 + r) % 90}" for p in range(people + i) for r in range(4)]
        csv = self.tmp / f"survey{i}.csv"
        csv.write_text("pid,age\n" + "\n".join(rows) + "\n")
        spec = {"privacy_unit": "pid", "max_contributions": 4,
                "columns": {"age": {"type": "int", "lower": 0, "upper": 90 + i}}}  # fmt: skip
        meta = self.tmp / f"survey{i}.yaml"
        meta.write_text(yaml.safe_dump({"tables": {"survey": spec}}))
        return csv, meta, (len(rows), 90 + i)

    def serve(self, crash_at: str | None = None) -> tuple[Server, int]:
        """``privdb serve --pg-port`` on the database, told to kill itself at ``crash_at`` if given."""
        pg_port = free_port()
        env = {"TMPDIR": str(self.temp)} | ({ENV: crash_at} if crash_at else {})
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        try:
            return Server(self.db, extra=["--pg-port", str(pg_port)]).start(), pg_port
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def privdb(self, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
        env = os.environ | {"TMPDIR": str(self.temp)} | ({ENV: crash_at} if crash_at else {})
        command = [sys.executable, "-m", "privdb", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)

    def look(self, server: Server, pg_port: int) -> State:
        """What alice (every table) sees, checked: only whole tables, each with its own metadata, each
        answered; the reserved names refused; psql lists the same tables. The survey table's state."""
        alice = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {self.tokens['alice']}"})
        owner = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {self.tokens['owner']}"})
        with alice, owner:
            listed = {t["name"]: t for t in alice.get("/v1/tables").json()}
            assert {"people", "secret"} <= set(listed) <= {"people", "secret", "survey"}, listed
            for name in listed:
                answer = alice.post("/v1/query", json={"sql": f"DP-SELECT 0.01 COUNT(*) FROM {name}"})
                assert answer.status_code == 200, answer.text
            for name in ("__privdb_file", "__PRIVDB_FILE", "__privdb_file_named"):
                refused = alice.post("/v1/query", json={"sql": f"DP-SELECT 1 COUNT(*) FROM {name}"})
                assert refused.json()["error"]["code"] == "unknown_table", refused.text
            if PSQL is not None:
                shown = psql(PgServed(server, pg_port, self.tokens), "alice", r"\dt")
                assert shown.returncode == 0, shown.stderr
                assert {line.split("|")[1] for line in shown.stdout.splitlines() if line} == set(listed)
            survey = listed.get("survey")
            if survey is None:
                state: State = None
            else:
                sql = {"sql": "SELECT COUNT(*) FROM survey"}
                state = (
                    owner.post("/v1/sql", json=sql).json()["rows"][0][0],
                    survey["columns"]["age"]["upper"],
                )
                assert survey["privacy_unit"] == "pid" and survey["max_contributions"] == 4
        with sqlite3.connect(self.db / "privdb.sqlite") as ledger:  # no metadata of a table the data lacks
            stored = {r[0] for r in ledger.execute("SELECT name FROM tables")}
        assert stored == set(listed)
        return state

    def no_upload_left(self) -> None:
        uploads = self.db / "uploads"
        assert not uploads.exists() or list(uploads.iterdir()) == []
        assert list(self.temp.iterdir()) == []  # nothing in the system's temporary folder either
        assert [p for p in self.db.rglob("*") if p.suffix in (".csv", ".yaml")] == []


def _killed(server: Server) -> str:
    """Wait for a server that was to kill itself; its standard error (the owner's notices)."""
    assert server.process is not None and server.process.stderr is not None
    assert server.process.wait(timeout=120) == -signal.SIGKILL, "the crash point was not reached"
    return server.process.stderr.read().decode()


def _stopped(server: Server) -> str:
    server.stop()
    assert server.process is not None and server.process.stderr is not None
    return server.process.stderr.read().decode()


def test_the_crash_points_are_the_documented_ones() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "security.md").read_text(encoding="utf-8")
    assert all(f"`{point}`" in doc for point in POINTS)


def _recovered(notices: str, point: str | None, *, upload: bool) -> None:
    """The owner's notices from a server's start after a kill at ``point`` (None: no kill before)."""
    assert ("removed 1 upload(s) a crashed server left" in notices) == (upload and point is not None), notices
    assert (FINISHED in notices) == (point in DONE_POINTS), notices


def test_http_loads_and_an_attach_killed_at_each_step_leave_nothing_half_done(tmp_path: Path) -> None:
    loads = Loads(tmp_path)
    # each server starts with the next point set; its start finishes the load killed before, and that
    # passes "metadata-written" (a kill there, in a restart, is the CLI test's): it follows no committed load
    steps = ["upload-written", "metadata-written", "staged", "committed", "table-written", "attach-writing"]
    engine = tmp_path / "elsewhere.sqlite"
    with sqlite3.connect(engine) as con:
        con.execute("CREATE TABLE elsewhere (pid INTEGER, age INTEGER)")
    attach_meta = tmp_path / "elsewhere.yaml"
    attach_meta.write_text("tables:\n  elsewhere:\n    privacy_unit: pid\n")
    server, pg_port = loads.serve(crash_at=steps[0])
    state = loads.look(server, pg_port)
    for i, point in enumerate(steps):
        owner = ["--url", server.url, "--token", loads.tokens["owner"]]
        if point == "attach-writing":
            expected = state
            sent = loads.privdb("attach", "elsewhere", "--engine", f"sqlite:///{engine}", "--metadata",
                                str(attach_meta), *owner)  # fmt: skip
        else:
            csv, meta, expected = loads.version(i)
            sent = loads.privdb("load", "survey", str(csv), "--metadata", str(meta), *owner)
        assert sent.returncode != 0, sent.stdout
        _recovered(_killed(server), steps[i - 1] if i else None, upload=True)  # its start's notices
        following = steps[i + 1] if i + 1 < len(steps) else None
        server, pg_port = loads.serve(crash_at=following)
        seen = loads.look(server, pg_port)
        assert seen == (expected if point in DONE_POINTS else state), (point, seen)
        state = seen
        loads.no_upload_left()
    _recovered(_stopped(server), None, upload=False)  # the attach left nothing to put right
    with sqlite3.connect(loads.db / "privdb.sqlite") as ledger:  # nor either of its two writes
        assert ledger.execute("SELECT COUNT(*) FROM attachments").fetchone() == (0,)


def test_cli_reloads_killed_at_each_step_leave_the_old_table_or_the_new_one(tmp_path: Path) -> None:
    loads = Loads(tmp_path)
    csv, meta, state = loads.version(0)
    first = loads.privdb("load", "survey", str(csv), "--db", str(loads.db), "--metadata", str(meta))
    assert first.returncode == 0, first.stderr
    for i, point in enumerate(LOAD_POINTS, start=1):
        csv, meta, expected = loads.version(i)
        killed = loads.privdb("load", "survey", str(csv), "--db", str(loads.db), "--metadata", str(meta),
                              crash_at=point)  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        if (
            point == "committed"
        ):  # the next writer, finishing the load, is killed too: the one after finishes it
            again = loads.privdb("sql", "--db", str(loads.db), "SELECT 1", crash_at="metadata-written")
            assert again.returncode == -signal.SIGKILL, again.stderr
        server, pg_port = loads.serve()
        seen = loads.look(server, pg_port)
        assert seen == (expected if point in DONE_POINTS else state), (point, seen)
        state = seen
        _recovered(_stopped(server), point, upload=False)
        loads.no_upload_left()


BIG = 100_000  # people (4 rows each: about 3 MB of CSV), so that kills after a few tenths land in the load
DELAYS = (0.05, 0.2, 0.4, 0.7, 1.2)  # seconds from sending the request to the kill
CLI_DELAYS = (0.0, 0.05, 0.1, 0.2, 0.4)  # seconds from the load's first write to the kill (4 × BIG people)


@pytest.mark.slow
def test_http_reloads_killed_after_several_delays_leave_the_old_table_or_the_new_one(tmp_path: Path) -> None:
    loads = Loads(tmp_path)
    headers = {"Authorization": f"Bearer {loads.tokens['owner']}"}
    server, pg_port = loads.serve()
    try:
        state = loads.look(server, pg_port)
        for i, delay in enumerate(DELAYS):
            csv, meta, expected = loads.version(i, people=BIG)
            spec = yaml.safe_load(meta.read_text())["tables"]["survey"]
            body = {"name": "survey", "csv": csv.read_text(), "metadata": spec}

            def send(url: str = server.url, body: dict[str, Any] = body) -> None:
                with contextlib.suppress(httpx.HTTPError):  # the server dies under it
                    httpx.post(url + "/v1/tables", json=body, headers=headers, timeout=300)

            sender = threading.Thread(target=send)
            sender.start()
            time.sleep(delay)
            server.kill()
            sender.join()
            server, pg_port = loads.serve()
            seen = loads.look(server, pg_port)
            assert seen in (state, expected), (delay, seen)  # whatever step the kill hit
            state = seen
            loads.no_upload_left()
    finally:
        server.stop()


@pytest.mark.slow
def test_cli_reloads_killed_after_several_delays_leave_the_old_table_or_the_new_one(tmp_path: Path) -> None:
    loads = Loads(tmp_path)
    csv, meta, state = loads.version(0)
    assert (
        loads.privdb("load", "survey", str(csv), "--db", str(loads.db), "--metadata", str(meta)).returncode
        == 0
    )
    data = loads.db / "data.duckdb"
    for i, delay in enumerate(CLI_DELAYS, start=1):
        csv, meta, expected = loads.version(i, people=4 * BIG)
        before = data.stat().st_size
        process = subprocess.Popen(
            [sys.executable, "-m", "privdb", "load", "survey", str(csv), "--db", str(loads.db), "--metadata",
             str(meta)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:  # until it writes the new rows
            wal = data.with_name("data.duckdb.wal")
            if data.stat().st_size > before or (wal.exists() and wal.stat().st_size > 1 << 16):
                break
            time.sleep(0.01)
        time.sleep(delay)
        process.kill()
        process.wait()
        server, pg_port = loads.serve()
        seen = loads.look(server, pg_port)
        assert seen in (state, expected), (delay, seen)
        state = seen
        _stopped(server)
        loads.no_upload_left()
