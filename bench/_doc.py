"""What every benchmark shares: its section of docs/benchmarks.md, rewritten between its own markers."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
