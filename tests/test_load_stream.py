"""Big tables over HTTP (issue 37): a load's file streams to the server's disk (the server's memory does not
grow with it), under the owner's own --max-load-bytes and no other cap; the metadata is checked before any
row is sent, so a refused load uploads nothing; the CLI shows a progress bar while the file goes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import privdb
from privdb.catalog.reading import ReadOptions
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter, RequestTooLarge, UnknownColumn
from serverfixtures import Server

runner = CliRunner()
META = """tables:
  big:
    privacy_unit: pid
    max_contributions: 3
    columns:
      pid: {type: int, private_id: true}
      age: {type: int, lower: 0, upper: 100}
      income: {type: float, lower: 0, upper: 100000}
"""
MiB = 2**20


def _vm(pid: int, key: str) -> int:
    """A field of /proc/PID/status, in bytes (VmRSS: resident now; VmHWM: the most resident so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def _big_csv(path: Path, size: int) -> int:
    """A CSV of at least ``size`` bytes (people with three rows each, a long note); its rows."""
    note = "n" * 100
    rows = 0
    with path.open("w") as out:
        out.write("pid,age,income,note\n")
        while out.tell() < size:
            out.write(
                "".join(
                    f"{i // 3},{i % 90},{i % 99991}.5,{note}{i % 7}\n" for i in range(rows, rows + 20_000)
                )
            )
            rows += 20_000
    return rows


def _served(path: Path, *extra: str) -> tuple[Server, str]:
    with Database(path) as db:
        token = db.catalog.add_owner_token()
    return Server(path, extra=list(extra), stdout=path.parent / "access.log").start(), token


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    running, token = _served(tmp_path_factory.mktemp("stream") / "db")
    try:
        yield running, token
    finally:
        running.stop()


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    running, token = _served(tmp_path_factory.mktemp("capped") / "db", "--max-load-bytes", "100000")
    try:
        yield running, token
    finally:
        running.stop()


def _uploads(running: Server) -> list[Path]:
    """The server's uploads in progress: its folder is made by the first upload, so a module whose tests
    run on another worker (or in another order) may find none yet, which holds nothing either."""
    folder = running.db / "uploads"
    return list(folder.iterdir()) if folder.exists() else []


def _log(running: Server, token: str) -> str:
    """The server's access log once it holds every request made so far (a last one is waited for)."""
    marker = f"/v1/budget?analyst=marker{time.monotonic_ns()}"
    httpx.get(running.url + marker, headers={"Authorization": f"Bearer {token}"})
    assert running.stdout is not None
    deadline = time.monotonic() + 30
    while marker not in (log := running.stdout.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return log


def test_a_100_mib_file_streams_to_disk_not_into_memory(server: tuple[Server, str], tmp_path: Path) -> None:
    running, token = server
    assert running.process is not None
    pid, uploads = running.process.pid, running.db / "uploads"
    (tmp_path / "big.yaml").write_text(META)
    rows = _big_csv(tmp_path / "big.csv", 100 * MiB)
    with privdb.connect(running.url, token=token) as owner:
        owner.load("small", _write_small(tmp_path))  # the load path warmed up: what follows is the file's
        before = _vm(pid, "VmRSS")
        seen: list[tuple[int, int, int]] = []  # (bytes sent, bytes on the server's disk, server's RSS)
        marks = iter((0.5, 0.9))
        mark = next(marks)

        def progress(sent: int, total: int) -> None:
            nonlocal mark
            if mark is None or sent < mark * total:
                return
            mark = next(marks, None)
            on_disk, deadline = 0, time.monotonic() + 120
            while on_disk < sent - 2 * MiB and time.monotonic() < deadline:  # the socket's buffers drain
                files = list(uploads.glob("*/upload.csv"))
                on_disk = files[0].stat().st_size if files else 0
                time.sleep(0.02)
            seen.append((sent, on_disk, _vm(pid, "VmRSS")))

        answer = owner.load("big", tmp_path / "big.csv", tmp_path / "big.yaml", progress=progress)
    assert answer["rows"] == rows and answer["contributions"]["rows_dropped"] == 0
    size = (tmp_path / "big.csv").stat().st_size
    assert len(seen) == 2
    for sent, on_disk, rss in seen:
        assert on_disk >= sent - 2 * MiB  # on the server's disk as it came
        assert rss - before < 25 * MiB, (
            sent,
            rss - before,
        )  # a quarter of the file at most: its memory is flat
    assert _uploads(running) == []  # the file is gone once loaded
    print(
        f"\n{size / MiB:.0f} MiB sent; server RSS growth at 50%/90%: "
        + ", ".join(f"{(rss - before) / MiB:.1f} MiB" for _, _, rss in seen)
        + f"; peak during the whole load (DuckDB's included): {(_vm(pid, 'VmHWM') - before) / MiB:.0f} MiB"
    )


def _write_small(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text("pid,age,income\n" + "".join(f"{i},{i % 90},{i}.5\n" for i in range(200)))
    return path


COLUMNS = "tables:\n  small:\n    columns:\n"


@pytest.mark.parametrize(
    ("meta", "expected", "error"),
    [
        (COLUMNS + "      agee: {type: int}\n", "names column 'agee', not in the data", UnknownColumn),
        (COLUMNS + "      age: {type: int, lower: 9, upper: 1}\n", r"lower \(9\) is great", InvalidParameter),
        ("tables:\n  other:\n    columns:\n      age: {type: int}\n", "does not describe table 'small'",
         InvalidParameter),
        (COLUMNS + "      age: {type: bool}\n", "declared bool but the data holds int", InvalidParameter),
    ],
)  # fmt: skip
def test_metadata_that_does_not_fit_is_refused_before_any_row_is_sent(
    server: tuple[Server, str], tmp_path: Path, meta: str, expected: str, error: type[Exception]
) -> None:
    running, token = server
    (tmp_path / "m.yaml").write_text(meta)
    before = len(_log(running, token))
    with privdb.connect(running.url, token=token) as owner, pytest.raises(error, match=expected):
        owner.load("small", _write_small(tmp_path), tmp_path / "m.yaml")
    since = _log(running, token)[before:]
    assert "PUT /v1/uploads" not in since and "POST /v1/tables" not in since  # no row was sent
    assert _uploads(running) == []


def test_a_refused_append_or_bad_line_uploads_nothing(server: tuple[Server, str], tmp_path: Path) -> None:
    running, token = server
    with privdb.connect(running.url, token=token) as owner:
        owner.load("small", _write_small(tmp_path))
        before = len(_log(running, token))
        (tmp_path / "other.csv").write_text("pid,years,income\n1,2,3.5\n")
        with pytest.raises(InvalidParameter, match="missing 'age'; not in the table 'years'"):
            owner.load("small", tmp_path / "other.csv", append=True)
        (tmp_path / "late.csv").write_text(
            "pid,age,income\n" + "".join(f"{i},1,2\n" for i in range(30_000)) + "9,x,1\n"
        )
        with pytest.raises(InvalidParameter, match=r"line 30002 of 'late\.csv': column 'age'"):
            owner.load("small", tmp_path / "late.csv", append=True)
    since = _log(running, token)[before:]
    assert since.count("POST /v1/uploads") == 2 and "PUT /v1/uploads" not in since
    assert since.count("DELETE /v1/uploads") == 1  # the second was checked, then given up before sending
    assert _uploads(running) == []


def test_the_owners_limit_is_the_only_cap(capped: tuple[Server, str], tmp_path: Path) -> None:
    running, token = capped
    big = tmp_path / "big.csv"
    big.write_text("pid,age,income\n" + "".join(f"{i},{i % 90},{i}.5\n" for i in range(20_000)))  # ~300 kB
    with privdb.connect(running.url, token=token) as owner:
        with pytest.raises(RequestTooLarge, match="over this server's limit of 100,000 bytes for a load"):
            owner.load("t", big)
        owner.load("t", _write_small(tmp_path))  # under the limit: loaded
        # a body over --max-body (16 MiB by default) is not what limits a load: only --max-load-bytes does
    headers = {"Authorization": f"Bearer {token}"}
    columns = {"pid": "BIGINT", "age": "BIGINT", "income": "DOUBLE"}
    for declared in (True, False):  # a client that says its size, and one that streams without saying it
        slot = httpx.post(
            running.url + "/v1/uploads", json={"name": "t", "columns": columns}, headers=headers
        )
        url = running.url + f"/v1/uploads/{slot.json()['upload']}"
        body = big.read_bytes()
        sent = httpx.put(
            url, content=body if declared else iter([body[:150_000], body[150_000:]]), headers=headers
        )
        assert sent.status_code == 413 and sent.json()["error"]["code"] == "request_too_large"
        assert "--max-load-bytes" in sent.json()["error"]["message"]
    assert _uploads(running) == []
    assert httpx.put(running.url + "/v1/uploads/nope", content=b"x", headers=headers).status_code == 400
    assert httpx.put(running.url + "/v1/uploads/nope", content=b"x").status_code == 401


def test_serve_help_names_the_load_limit() -> None:
    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert (
        result.exit_code == 0
        and "--max-load-bytes" in result.stdout
        and "no limit but the disk" in result.stdout
    )


def test_the_cli_shows_a_progress_bar_while_the_file_goes(server: tuple[Server, str], tmp_path: Path) -> None:
    running, token = server
    small = _write_small(tmp_path)
    env = os.environ | {
        "FORCE_COLOR": "1",
        "COLUMNS": "120",
    }  # stderr is a pipe here: Rich told it is a terminal
    ran = subprocess.run(
        [sys.executable, "-m", "privdb", "load", "bar", str(small), "--url", running.url, "--token", token],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "sending small.csv" in ran.stderr and "loaded" in ran.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "privdb", "load", "bar", str(small), "--url", running.url, "--token", token],
        capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "FORCE_COLOR"},
    )  # fmt: skip
    assert plain.returncode == 0 and plain.stderr == ""  # not a terminal: no bar, not even an empty line


def test_a_column_of_numbers_and_a_word_is_told_with_the_files_own_line(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    running, token = server
    lines = "".join(f"{i},{i % 90},{i}.5\n" for i in range(3000))
    (tmp_path / "m.csv").write_text("pid,age,income\n" + lines + "3000,1,n/a\n" + lines)
    with privdb.connect(running.url, token=token) as owner:
        answer = owner.load("mixed", tmp_path / "m.csv", options=ReadOptions(header=True))
    (told,) = answer["mixed_columns"]
    assert told["column"] == "income" and told["line"] == 3002 and told["not_numbers"] == 1
    assert answer["columns"]["income"]["type"] == "text" and answer["rows"] == 6001


def test_the_json_body_load_adds_rows_too(server: tuple[Server, str]) -> None:
    running, token = server
    headers = {"Authorization": f"Bearer {token}"}
    first = httpx.post(running.url + "/v1/tables", json={"name": "j", "csv": "a,b\n1,x\n"}, headers=headers)
    assert first.status_code == 200 and first.json()["rows"] == 1
    more = httpx.post(running.url + "/v1/tables", json={"name": "j", "csv": "b,a\ny,2\n", "append": True},
                      headers=headers)  # fmt: skip
    assert more.status_code == 200 and more.json()["rows"] == 2 and more.json()["appended"] == 1
    refused = httpx.post(running.url + "/v1/tables", json={"name": "j", "csv": "a,b\n3,z\n", "append": True,
                         "metadata": {}}, headers=headers)  # fmt: skip
    assert refused.status_code == 400 and "keep its metadata" in refused.json()["error"]["message"]
