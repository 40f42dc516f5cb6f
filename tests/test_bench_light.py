"""The light load generator of bench.server.compare (bench/server/light.py: wrk with bench/server/query.lua)
against the real server: fresh answers are counted, and every other outcome (a refusal, an answer from the
store of answers) is counted as an error and never as an answer. Skipped where wrk is missing (``make
bench-tools`` installs it; ``make test`` does so first)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is missing: make bench-tools"),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """A server with 1 worker over a 2,000-row user-level census table, and the analyst's token."""
    sys.path.insert(0, str(ROOT))  # the bench package lives beside src/
    try:
        from bench.harness import data
        from bench.server.load import running_server
        from bench.server.spec import TABLE

        from privdb.data.census import generate

        work = tmp_path_factory.mktemp("light")
        meta = {"user": data.census_metadata()["user"]}
        token = data.setting_databases(work, {TABLE: generate(2_000)}, meta, epsilon=1e9)["user"]
        with running_server(work / "user", 1, work / "server.log") as server:
            yield server, token
    finally:
        sys.path.remove(str(ROOT))


def _load(served: tuple[Any, str], token: str, first: int, clients: int = 2) -> Any:
    from bench.server.light import LightCell, Wrk
    from bench.server.spec import QUERIES

    server, _ = served
    return Wrk(token, first=first).load(server, LightCell(QUERIES[0], clients, 1.0), warmup=0)


def test_fresh_answers_are_counted_with_the_cpu_of_both_sides(served: tuple[Any, str]) -> None:
    cell = _load(served, served[1], first=0)
    assert cell.answered > 0 and not cell.errors, cell.errors
    assert cell.qps > 0 and 0 < cell.p50_ms <= cell.p99_ms
    assert cell.server_cpu_ms > 0 and cell.client_cpu_ms > 0


def test_answers_from_the_store_are_errors(served: tuple[Any, str]) -> None:
    first = _load(served, served[1], first=50_000_000, clients=1)
    assert first.answered > 0 and not first.errors
    again = _load(served, served[1], first=50_000_000, clients=1)  # the same ε values, from the first on
    assert again.errors["stale"] >= 1 and set(again.errors) == {"stale"}


def test_refusals_are_errors_by_status(served: tuple[Any, str]) -> None:
    cell = _load(served, "not-a-token", first=90_000_000)
    assert cell.answered == 0 and cell.qps == 0
    assert set(cell.errors) == {"401"} and cell.errors["401"] > 0


def test_compare_runs_with_wrk(tmp_path: Path) -> None:
    """bench.server.compare end to end on a small table: both versions (here the same source) answer."""
    command = [sys.executable, "-m", "bench.server.compare", "--base", "src", "--rows", "2000"]
    command += ["--rounds", "1", "--seconds", "1", "--warmup", "0", "--clients", "2", "--workers", "1"]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rounds = [line for line in done.stdout.splitlines() if line.startswith("round 1 ")]
    assert len(rounds) == 2 and all(", 0 errors," in line for line in rounds), done.stdout
    assert "wrk CPU per request" in done.stdout and "load average after" in done.stdout
