"""The command starts fast: ``privdb --version`` imports neither Typer nor the engine, and ``privdb --help``
(or a command's help) imports no heavy library; each command imports what it uses when it runs.

Checked by behaviour (which modules a start loads), not by wall-clock time, which depends on the machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numpy", "pandas", "scipy", "duckdb", "sqlglot", "fastapi", "uvicorn", "matplotlib", "yaml")
# Typer itself imports pydantic to convert a command's parameters: only ``--version`` goes without it

# listed by an exit function, which runs however the command ends (``--version``'s sys.exit, or the atexit
# work and os._exit of privdb.cli.entry.leave)
_PROBE = """
import atexit, sys
sys.argv = ["privdb", *{args!r}]
heavy = {heavy!r}
listed = lambda: sorted(m for m in sys.modules if m.split(".")[0] in heavy)
atexit.register(lambda: print("\\nLOADED", *listed(), flush=True))
from privdb.cli import main
main()
"""


# the cold start is what these budgets are about (a warm start runs the command in the user's warm process,
# whose imports are its own: tests/test_warm.py)
COLD = os.environ | {"PRIVDB_WARM": "0"}


def _loaded(*args: str) -> tuple[str, set[str]]:
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE.format(args=list(args), heavy=HEAVY)],
        env=COLD,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out, marker, loaded = ran.stdout.rpartition("\nLOADED")
    assert marker, f"the probe listed no modules: {ran.stderr}"
    return out, {m.split(".")[0] for m in loaded.split()}


def test_version_imports_neither_typer_nor_the_engine() -> None:
    out, loaded = _loaded("--version")
    assert out.startswith("privdb "), out
    assert loaded == set()
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE.format(args=["--version"], heavy=("typer", "rich", "pydantic"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.stdout.rstrip().endswith("LOADED"), ran.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("query", "--help"),
        ("publish", "synthetic", "--help"),
        ("load", "--help"),
        ("survey", "--help"),
    ],
)
def test_help_imports_no_heavy_library(args: tuple[str, ...]) -> None:
    out, loaded = _loaded(*args)
    assert "Usage" in out, out
    assert loaded == set(), f"privdb {' '.join(args)} imported {sorted(loaded)}"


def test_a_command_imports_what_it_uses_when_it_runs(tmp_path: Path) -> None:
    data = tmp_path / "people.csv"
    data.write_text("age\n30\n41\n", encoding="utf-8")
    out, loaded = _loaded("load", "people", str(data), "--db", str(tmp_path / "db"))
    assert "people" in out, out
    assert "duckdb" in loaded


def test_a_command_ends_with_its_exit_work_and_flushed_streams_but_no_teardown(tmp_path: Path) -> None:
    """``privdb.cli.entry.leave``: the status given, atexit work done, buffered output written, and none of
    the interpreter's teardown (freeing every object of a million-row command, one by one)."""
    notes = tmp_path / "notes"
    script = f"""
import atexit, sys
from privdb.cli.entry import leave

class Kept:
    def __del__(self, _open=open):  # teardown may have removed the builtin by then
        _open({str(notes)!r}, "a").write("torn down\\n")

kept = Kept()
atexit.register(lambda: open({str(notes)!r}, "a").write("exit work\\n"))
sys.stdout.write("buffered, no newline")
leave(3)
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 3, ran.stderr
    assert ran.stdout == "buffered, no newline"
    assert notes.read_text() == "exit work\n"
