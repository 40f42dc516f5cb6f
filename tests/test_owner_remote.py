"""The owner while `privdb serve` runs (issue 15): the server holds DuckDB's lock on the data, so `privdb sql
--db` is refused with a message naming the server's pid and URL and the `--url --token` to use; the same owner
commands (sql, grant, revoke, budget --analyst, log, attach) work over the server with an owner token, and
refuse an analyst's. All against `privdb serve` in its own process on a real port, through the real CLI.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import privdb
from privdb.cli import app
from privdb.inuse import MARKER
from serverfixtures import Server, make_server_db

runner = CliRunner()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("owner") / "db"
    tokens = make_server_db(path, people=300)
    server = Server(path).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def privdb_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command in its own process, as the owner types it."""
    return subprocess.run(
        [sys.executable, "-m", "privdb", *args], capture_output=True, text=True, timeout=120
    )


def owner(server: Server, tokens: dict[str, str], *args: str) -> Any:
    return runner.invoke(app, [*args, "--url", server.url, "--token", tokens["owner"]])


def test_publish_meets_the_servers_lock_and_is_told_what_works(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    """``privdb publish`` has no --url: the refusal must not send the owner there, but name what works."""
    server, _ = served
    out = tmp_path / "h.csv"
    args = ["publish", "histogram", "people", "--db", str(server.db), "--columns", "age", "--epsilon", "1"]
    done = privdb_cli(*args, "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert "in use by a running `privdb serve`" in done.stderr
    assert "--url" not in done.stderr
    assert f"privdb.connect('{server.url}', token=OWNER).publish(" in done.stderr
    assert not out.exists()


def test_a_db_command_meets_the_servers_lock_and_is_told_what_to_do(
    served: tuple[Server, dict[str, str]],
) -> None:
    server, _ = served
    assert server.process is not None
    # before any query reached the server: it takes the lock when it starts
    for args in (["sql", "SELECT COUNT(*) FROM people"], ["attach", "t", "--engine", "sqlite:///x.db",
                                                        "--metadata", "m.yaml"]):  # fmt: skip
        done = privdb_cli(*args, "--db", str(server.db))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(
            f"error [invalid_parameter]: the database '{server.db}' is in use by a running `privdb serve` "
            f"(pid {server.process.pid}); run the command over the server: --url {server.url} --token "
            "<owner token>"
        ), done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
    # what needs no data file works on --db meanwhile: a new owner token, the log, grants
    assert privdb_cli("token", "--db", str(server.db)).returncode == 0
    assert privdb_cli("log", "--db", str(server.db)).returncode == 0


def test_the_owner_works_over_the_server_while_it_holds_the_lock(
    served: tuple[Server, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = served
    done = owner(server, tokens, "sql", "SELECT COUNT(*) AS n FROM people", "--format", "json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["data"] == [[300]]
    done = owner(server, tokens, "sql", "SELECT sex, COUNT(*) AS n FROM people GROUP BY sex ORDER BY sex",
                 "--format", "csv")  # fmt: skip
    assert done.stdout.splitlines()[0] == "sex,n" and len(done.stdout.splitlines()) == 3
    done = owner(server, tokens, "sql", "SELECT * FROM range(10001)")
    assert done.exit_code == 0 and "the first 10,000 rows only" in done.stderr

    # grant: the printed token works at once; budget --analyst; revoke: the token stops
    done = owner(server, tokens, "grant", "carol", "--epsilon", "2", "--tables", "people")
    assert done.exit_code == 0, done.output
    carol = done.stdout.strip()
    with privdb.connect(server.url, token=carol) as conn:
        assert conn.sql("DP-SELECT 0.5 COUNT(*) FROM people").epsilon_spent == 0.5
    done = owner(server, tokens, "budget", "--analyst", "carol", "--format", "json")
    assert json.loads(done.stdout)["epsilon_remaining"] == 1.5
    done = owner(server, tokens, "budget", "--analyst", "nobody")  # refused, not shown as 0 of 0
    assert done.exit_code == 2 and "no analyst 'nobody'" in done.stderr and "privdb grant" in done.stderr
    done = owner(server, tokens, "log", "--analyst", "carol", "--format", "json")
    assert [e["query"] for e in json.loads(done.stdout)] == ["DP-SELECT 0.5 COUNT(*) FROM people"]
    assert owner(server, tokens, "revoke", "carol").exit_code == 0
    done = runner.invoke(app, ["budget", "--url", server.url, "--token", carol])
    assert done.exit_code == 2 and "revoked" in done.stderr

    # attach: the server opens the SQLite file (on its machine) and analysts can query it
    data = tmp_path / "visits.db"
    with sqlite3.connect(data) as con:
        con.execute("CREATE TABLE visits (age INTEGER)")
        con.executemany("INSERT INTO visits VALUES (?)", [(a,) for a in range(20, 80)])
    meta = tmp_path / "visits.yaml"
    meta.write_text("tables:\n  visits:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n")
    done = owner(server, tokens, "attach", "visits", "--engine", f"sqlite:///{data}", "--metadata", str(meta))
    assert done.exit_code == 0, done.output
    assert "attached visits" in done.stdout
    with privdb.connect(server.url, token=tokens["alice"]) as alice:
        assert "visits" in {t["name"] for t in alice.tables()}
        assert alice.sql("DP-SELECT 1 COUNT(*) FROM visits").rows


def test_owner_commands_refuse_an_analysts_token_and_mixed_targets(
    served: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = served
    for args in (["sql", "SELECT 1"], ["grant", "mallory", "--epsilon", "100"], ["revoke", "bob"]):
        done = runner.invoke(app, [*args, "--url", server.url, "--token", tokens["alice"]])
        assert done.exit_code == 2 and "error [raw_access_denied]" in done.stderr, done.output
    done = runner.invoke(app, ["sql", "SELECT 1", "--db", str(server.db), "--url", server.url])
    assert done.exit_code == 2 and "not both" in done.stderr
    done = runner.invoke(app, ["grant", "x", "--epsilon", "1"])
    assert done.exit_code == 2 and "give --db DIR" in done.stderr
    done = runner.invoke(app, ["sql", "SELECT 1", "--url", server.url])
    assert done.exit_code == 2 and "--url needs --token" in done.stderr


def test_the_lock_held_by_another_process_is_named(tmp_path: Path) -> None:
    """Not a server: the message names the holder's pid; a marker left by a server that died is ignored."""
    path = tmp_path / "db"
    make_server_db(path, people=10)
    (path / MARKER).write_text(json.dumps({"pid": 2**22 + 12345, "url": "http://127.0.0.1:1"}))  # no such pid
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(path / 'data.duckdb')!r}); "
         "print('open', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        done = runner.invoke(app, ["sql", "SELECT 1", "--db", str(path)])
        assert done.exit_code == 2
        assert f"is in use by another process (pid {holder.pid})" in done.stderr, done.stderr
        assert "http://127.0.0.1:1" not in done.stderr
    finally:
        holder.communicate("")
    assert runner.invoke(app, ["sql", "SELECT 1", "--db", str(path)]).exit_code == 0  # free again
    assert os.path.exists(path / MARKER)  # a stale marker is only ignored, never trusted


def test_a_second_serve_is_refused_and_leaves_the_first_alone(tmp_path: Path) -> None:
    """Issue 27: a second `privdb serve` on a served database printed "serving" and then deleted the
    running server's marker. It is refused (exit 2, one line naming the running server's pid and URL) and
    changes nothing; once the first has died (kill -9: its marker stays, stale), a new one starts."""
    from serverfixtures import free_port

    path = tmp_path / "db"
    make_server_db(path, people=10)
    first = Server(path).start()
    try:
        assert first.process is not None
        marker = (path / MARKER).read_text()
        done = privdb_cli("serve", "--db", str(path), "--port", str(free_port()))
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "serving" not in done.stderr
        assert f"pid {first.process.pid}" in done.stderr and first.url in done.stderr
        assert (path / MARKER).read_text() == marker
        assert runner.invoke(app, ["sql", "SELECT 1", "--db", str(path)]).exit_code == 2
        assert first.url in runner.invoke(app, ["sql", "SELECT 1", "--db", str(path)]).stderr
    finally:
        first.kill()
    assert (path / MARKER).exists()  # stale: its server died without removing it
    second = Server(path).start()
    try:
        assert second.process is not None
        assert json.loads((path / MARKER).read_text())["pid"] == second.process.pid
    finally:
        second.stop()
