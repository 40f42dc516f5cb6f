"""A plain clone is self-contained (issue 27): no tracked file reads or cites anything outside the repository,
every data set the tests use is tracked here with a README naming its licence, and no test skips for want of
data (a missing file must fail the test that reads it)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

# Paths to the data that lived beside the checkout: the sibling folder, the project machines' absolute path,
# and the two ways tests and benchmarks built it (parents[2] / "shared", ROOT.parent / "shared" / "data").
OUTSIDE = re.compile(r'\.\./shared|/work/shared|parents\[\d\]\s*/\s*"shared"|"shared"\s*/\s*"data"')
# The project's planning files, which are not in the repository: the docs must not send readers to them.
PLANNING = re.compile(r"\b(?:DESIGN|RESEARCH|STYLE)\.md\b")
# CHANGELOG.md's old entries name where things were; this file spells the patterns out.
HISTORY = {"CHANGELOG.md", Path(__file__).name}
DATA_FOLDERS = [DATA / "adult", DATA / "pums", DATA / "examples", ROOT / "examples"]
LICENCE = re.compile(r"^Licen[cs]e\b[^:\n]*:\s*\S", re.M)
SKIP = re.compile(r"skipif|pytest\.skip\(")
MISSING_DATA = re.compile(r"not found|not mounted|not in |shared|PUMS|Adult|data|example", re.I)


def _tracked() -> list[Path]:
    """The repository's tracked files (git ls-files), or every file under the root outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]
    return [ROOT / name for name in out.split("\0") if name and (ROOT / name).is_file()]


def _text(path: Path) -> str | None:
    """The file's text, or None for a binary or a large data file (neither can cite a path)."""
    if path.suffix in {".csv", ".data", ".parquet", ".png", ".ico"} or path.stat().st_size > 2_000_000:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def _hits(pattern: re.Pattern[str], paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        text = _text(path)
        if text is None or path.name in HISTORY:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_tracked_file_reads_or_cites_data_outside_the_repository() -> None:
    assert _hits(OUTSIDE, _tracked()) == []


def test_the_docs_cite_no_planning_file_outside_the_repository() -> None:
    docs = [
        p
        for p in _tracked()
        if p.suffix == ".md" and (p.parent == ROOT or "docs" in p.relative_to(ROOT).parts)
    ]
    docs += [p for p in _tracked() if p.name == "README.md"]
    assert _hits(PLANNING, sorted(set(docs))) == []


def test_the_patterns_catch_what_they_are_for() -> None:
    """The checks above would see each way the old code and docs reached outside (so their silence means
    something)."""
    lines = [
        'ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"',
        'UCI = ROOT.parent / "shared" / "data" / "adult" / "adult_uci.data"',
        'PATIENTS = Path("/work/' + 'shared/data/examples/patients.csv")',
        "runs the HTTP API of `../" + "shared/DESIGN.md` on uvicorn",
    ]
    assert all(OUTSIDE.search(line) for line in lines)
    assert PLANNING.search("a DP answer (DESIGN.md's result JSON)")
    assert not OUTSIDE.search('shared = page.get_by_test_id("shared")')
    assert not PLANNING.search("the README.md and docs/metadata.md")


@pytest.mark.parametrize("folder", DATA_FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_data_folder_has_a_readme_with_a_licence_line(folder: Path) -> None:
    readme = folder / "README.md"
    assert readme.is_file(), f"{folder.relative_to(ROOT)} has no README.md"
    assert LICENCE.search(readme.read_text(encoding="utf-8")), (
        f"{readme.relative_to(ROOT)}: no 'Licence: …' line"
    )


def test_every_data_folder_is_listed_and_none_is_unlisted() -> None:
    """A new folder under data/ must get its README (and join DATA_FOLDERS above)."""
    on_disk = {p for p in DATA.iterdir() if p.is_dir()}
    assert on_disk == {p for p in DATA_FOLDERS if p.parent == DATA}


def test_the_data_the_tests_read_is_tracked_whole() -> None:
    """Each data set is in git and complete (its documented size), so a test that reads it cannot pass
    on a partial copy and a clone has all of it."""
    tracked = {p.relative_to(ROOT).as_posix() for p in _tracked()}
    hierarchies = [
        f"data/adult/hierarchies/{c}.csv" for c in pd.read_csv(DATA / "adult" / "adult.csv", sep=";")
    ]
    expected = [
        "data/adult/adult.csv",
        "data/adult/adult_uci.data",
        *hierarchies,
        "data/pums/PUMS.csv",
        "data/pums/PUMS_pid.csv",
        "data/pums/PUMS.yaml",
        "data/pums/PUMS_pid.yaml",
        *(f"data/examples/{n}.csv" for n in ("dating", "hiv", "patients", "students_os")),
        "src/privdb/data/tax_office.csv",
    ]
    assert [name for name in expected if name not in tracked] == []
    assert len(hierarchies) == 9
    assert len(pd.read_csv(DATA / "adult" / "adult.csv", sep=";")) == 30_162
    assert len(pd.read_csv(DATA / "adult" / "adult_uci.data", header=None)) == 32_561
    assert len(pd.read_csv(DATA / "pums" / "PUMS.csv")) == 1_000
    assert len(pd.read_csv(DATA / "pums" / "PUMS_pid.csv")) == 1_000


def test_no_test_skips_for_missing_data() -> None:
    """A skip condition about data or files would hide a clone without its data; only a missing tool
    (Java, Chromium, an optional package) may skip."""
    tests = [p for p in _tracked() if p.suffix == ".py" and "tests" in p.relative_to(ROOT).parts]
    found = [hit for hit in _hits(SKIP, tests) if MISSING_DATA.search(hit.split(": ", 1)[1])]
    assert found == []
