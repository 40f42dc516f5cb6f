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

_PROBE = """
import sys
sys.argv = ["privdb", *{args!r}]
from privdb.cli import main
try:
    main()
except SystemExit:
    pass
print("\\nLOADED", " ".join(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})))
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
    out, _, loaded = ran.stdout.rpartition("\nLOADED")
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
