"""`pip install privdb` from the repository: a wheel builds, carries the page and data files, and its
`privdb` entry point runs from the installed copy (not from this checkout)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (found,) = out.glob("privdb-*.whl")
    return found


def test_the_wheel_carries_the_package_data_and_the_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        scripts = archive.read(entry_points).decode()
        metadata = archive.read(next(n for n in names if n.endswith("/METADATA"))).decode()
    for data in ("privdb/py.typed", "privdb/data/tax_office.csv", "privdb/server/static/index.html"):
        assert data in names
    assert not any(n.startswith(("tests/", "bench/")) for n in names)
    # the repository's data sets (data/: Adult, PUMS, the notes' tables) are for tests and examples only
    assert not any(n.startswith(("data/", "examples/")) or n.endswith((".data", "PUMS.csv")) for n in names)
    assert not any("adult" in n.lower() for n in names)
    assert "privdb = privdb.cli:main" in scripts
    # the engines and peers stay optional: the default install is small
    default = [
        line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert default and not any(("psycopg" in d or "pyspark" in d or "opendp" in d) for d in default)
    assert "Provides-Extra: postgres" in metadata and "Provides-Extra: spark" in metadata


def test_the_installed_copy_runs(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target)}
    # the console script pip wrote, run by this interpreter (its dependencies come from this environment)
    script = target / "bin" / "privdb"
    ran = subprocess.run(
        [sys.executable, str(script), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("privdb ")
    where = subprocess.run(
        [sys.executable, "-c", "import privdb; print(privdb.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.strip().startswith(str(target))
    demo = subprocess.run(
        [sys.executable, str(script), "demo", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert demo.returncode == 0, demo.stderr
