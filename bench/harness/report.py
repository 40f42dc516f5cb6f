"""The Markdown writer: each benchmark's section of docs/benchmarks.md, rewritten between its own markers,
and the tables and cells (seconds, ratios, verdicts) the sections are made of; the same tables in the
terminal through Rich."""

from __future__ import annotations

import math
import os
import shlex
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench.harness import ROOT

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# PRIVDB_BENCH_DOC: another file to write the sections to (the smoke tests point it at a copy)
DOC = Path(os.environ.get("PRIVDB_BENCH_DOC") or ROOT / "docs" / "benchmarks.md")
HEADER = "# Benchmarks\n\nEach section is written by a script in `bench/`; rerun the script to refresh it.\n"
OK = {True: "met", False: "**missed**"}


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


def section(name: str, heading: str, body: Sequence[str]) -> str:
    """A benchmark's section: its markers around the ``## heading`` and ``body``, every line folded."""
    start, end = markers(name)
    return "\n".join(wrap(line) for line in [start, f"## {heading}", "", *body, end])


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


def command(module: str) -> str:
    """The command line that ran this benchmark, as the docs show it."""
    return shlex.join([".venv/bin/python", "-m", module, *sys.argv[1:]])


def written_by(module: str, path: str) -> str:
    """The first line of a section: which file wrote it and the command that ran."""
    return f"Written by `{path}`; command: `{command(module)}`"


def table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table: header, rule, one line per row."""
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(cells) + " |" for cells in rows),
    ]


def secs(value: float | None, digits: int = 3) -> str:
    """Seconds (or any figure) to ``digits`` places; "—" where there is none."""
    return "—" if value is None or not math.isfinite(value) else f"{value:,.{digits}f}"


def ratio(a: float | None, b: float | None, digits: int = 1) -> str:
    """``a ÷ b`` as "n×"; "—" where either is missing or ``b`` is 0."""
    return "—" if a is None or b is None or b == 0 else f"{a / b:,.{digits}f}×"


STAGE_COLUMNS = ["privdb s", "prepare s", "engine SQL s", "noise s", "rest s", "engine SQL ÷ raw"]


def stage_cells(
    total: float | None, parts: dict[str, float], raw: float | None, digits: int = 1
) -> list[str]:
    """privdb by stage as table cells, one under each of STAGE_COLUMNS."""
    stages = [parts[name] for name in ("prepare", "engine SQL", "noise", "rest")]
    return [secs(total), *map(secs, stages), ratio(parts["engine SQL"], raw, digits)]


def mib(value: float | None) -> str:
    """MiB to the unit; "—" where there is none."""
    return "—" if value is None else f"{value:,.0f}"


def plain(line: str) -> str:
    """A Markdown line for the terminal (bold marks dropped)."""
    return line.replace("**", "")


def console() -> Console:
    """Rich's console; logs (no terminal) keep whole rows."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


def rich_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: int | Callable[[int], bool] = 1,
) -> Table:
    """A Rich table: figures right-aligned (the columns from index ``right`` on, or those ``right(i)``
    picks), labels left-aligned."""
    from rich.table import Table

    out = Table(title=title)
    for i, column in enumerate(columns):
        on_right = right(i) if callable(right) else i >= right
        out.add_column(column, justify="right" if on_right else "left")
    for cells in rows:
        out.add_row(*(plain(cell) for cell in cells))
    return out
