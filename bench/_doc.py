"""What every benchmark shares: its section of docs/benchmarks.md, rewritten between its own markers; the
machine it ran on; peers and big runs in a worker subprocess that answers in JSON."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
PEERS = (
    Path(__file__).resolve().parent / ".peers"
)  # peers' own venvs: made by the bench scripts, never committed
HEADER = "# Benchmarks\n\nEach section is written by a script in `bench/`; rerun the script to refresh it.\n"


def markers(name: str) -> tuple[str, str]:
    """The comment lines around a benchmark's section."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def wrap(line: str) -> str:
    """A paragraph or list item folded to the repository's 110 columns (table rows stay whole)."""
    if not line or line.startswith(("|", "<!--", "#")):
        return line
    indent = "  " if line.startswith("- ") else ""
    return textwrap.fill(
        line, width=110, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def write_section(name: str, section: str) -> None:
    """Replace the section between ``name``'s markers (``section`` includes them), or append it."""
    start, end = markers(name)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        info = []
    models = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
    return models[0] if models else platform.processor() or platform.machine()


def memory_gib() -> float:
    """The machine's physical memory in GiB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def run_json_worker(argv: list[str], spec: dict[str, Any], failed: str) -> dict[str, Any]:
    """Run ``argv`` with ``spec`` as JSON on its stdin; the worker's last line of stdout is its JSON
    result. If it fails: ``{"error": failed}`` with ``{code}`` in ``failed`` replaced by its exit code."""
    done = subprocess.run(argv, input=json.dumps(spec), stdout=subprocess.PIPE, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": failed.format(code=done.returncode)}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


class PeerUnavailable(RuntimeError):
    """A peer could not be installed or run; the message says why."""


def ensure_venv(venv: Path, requirements: list[str]) -> Path:
    """``venv/bin/python`` with ``requirements`` installed (a peer whose pins the project's venv cannot
    hold), creating the venv under ``PEERS`` if needed; a stamp names what is installed."""
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{hashlib.sha256(' '.join(requirements).encode()).hexdigest()[:12]}"
    if python.exists() and stamp.exists():
        return python
    PEERS.mkdir(parents=True, exist_ok=True)
    (PEERS / ".gitignore").write_text("# peers' venvs, made by bench scripts\n*\n", encoding="utf-8")
    steps = [] if python.exists() else [[sys.executable, "-m", "venv", str(venv)]]
    steps.append(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements]
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            tail = " ".join(([line for line in said if "error" in line.lower()] or said)[-2:])
            raise PeerUnavailable(f"`{shlex.join(step[2:])}` failed ({done.returncode}): {tail}")
    for old in venv.glob(".installed-*"):
        old.unlink()
    stamp.touch()
    return python
