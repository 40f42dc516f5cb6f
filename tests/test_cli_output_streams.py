"""The CLI's output streams: a reader that goes away (`| head -0`) or a terminal that cannot show ε must not
turn a paid answer into "internal error" (exit 1); the spend stands either way."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PRIVDB = [sys.executable, "-m", "privdb"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("streams")
    meta = root / "m.yaml"
    meta.write_text("tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n")
    data = root / "p.csv"
    data.write_text("age\n" + "".join(f"{i % 90}\n" for i in range(500)))
    path = str(root / "db")
    for args in (["load", "--db", path, "people", str(data), "--metadata", str(meta)],
                 ["grant", "--db", path, "alice", "--epsilon", "5"]):  # fmt: skip
        assert subprocess.run([*PRIVDB, *args], capture_output=True, check=False).returncode == 0
    return path


def _spent(db: str) -> float:
    done = subprocess.run(
        [*PRIVDB, "budget", "--db", db, "--analyst", "alice", "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout)["epsilon_spent"])


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_a_closed_pipe_ends_quietly_with_141(db: str, output_format: str) -> None:
    before = _spent(db)
    query = f"DP-SELECT 0.25 COUNT(*) FROM people WHERE age > {10 if output_format == 'table' else 20}"
    script = " ".join([*PRIVDB, "query", "--db", db, "--analyst", "alice", "--format", output_format])
    done = subprocess.run(
        ["bash", "-c", f'{script} "{query}" | head -c 0; echo "${{PIPESTATUS[0]}}" >&2'],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.stderr.strip() == "141", done.stderr  # no "internal error", no traceback
    assert _spent(db) == pytest.approx(before + 0.25)


def test_a_terminal_without_epsilon_gets_an_escape_not_an_internal_error(db: str) -> None:
    done = subprocess.run(
        [*PRIVDB, "query", "--db", db, "--analyst", "alice",
         "DP-SELECT 0.25 COUNT(*) FROM people WHERE age < 9"],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\\u03b5 spent 0.25" in done.stdout
