"""What every benchmark shares: its section of docs/benchmarks.md, rewritten between its own markers; the
machine it ran on; peers and big runs in a worker subprocess that answers in JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import textwrap
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
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
