"""Every benchmark runs end to end on a small size (issue 28): ``python -m bench.<name>`` with the arguments
below, in a subprocess as a developer runs it. A benchmark that writes docs/benchmarks.md writes a copy here
(``PRIVDB_BENCH_DOC``), and its section must keep the heading and first table header of the committed one
(the same output shape). Peers in venvs of their own are used only where their venv already exists
(``PRIVDB_BENCH_PEERS=existing``): a missing peer is reported by the benchmark and skipped, never a failure;
engines whose server is missing here (Java for Spark, initdb for PostgreSQL) are left out of the run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"


def _engines() -> str:
    chosen = ["duckdb", "sqlite"]
    if shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        chosen.append("postgres")
    if shutil.which("java"):
        chosen.append("spark")
    return ",".join(chosen)


# (module, arguments, the section it writes or None when it only prints)
RUNS = [
    ("bench.mechanisms", ["--n", "20000", "--subset", "2000"], "mechanisms"),
    ("bench.sql", ["--rows", "20000", "--repeats", "1", "--pandas-rows", "0"], "sql"),
    ("bench.joins", ["--people", "20011", "--repeats", "1"], "joins"),
    (
        "bench.quantiles",
        [
            "--rows",
            "5000",
            "--repeats",
            "1",
            "--error-reps",
            "3",
            "--subset-reps",
            "5",
            "--subset-rows",
            "1000",
        ],
        "quantiles",
    ),
    (
        "bench.server",
        ["--rows", "5000", "--seconds", "0.3", "--warmup", "0.1", "--embedded", "2", "--settings", "row"],
        "server",
    ),
    ("bench.anonymize", ["--quick", "--rows", "5000", "--pycanon-budget", "5"], None),
    ("bench.anonymize_command", ["--rows", "5000", "--repeats", "1"], "anonymize-command"),
    (
        "bench.engines",
        ["--rows", "20000", "--repeats", "1", "--big-rows", "0", "--engines", _engines()],
        "engines",
    ),
    ("bench.local", ["--users", "5000", "--subset", "1000"], "local"),
    ("bench.publish", ["--quick"], None),
    ("bench.publish_synthetic", ["--quick", "--aim-timeout", "1"], "publish-synthetic"),
    ("bench.timing", ["--rows", "500", "--runs", "4"], "timing"),
    ("bench.quantile_ties", ["--runs", "5"], None),
    ("bench.smooth_median", ["--runs", "5", "--sizes", "300"], "smooth-median"),
    (
        "bench.pgwire",
        ["--rows", "2000", "--pairs", "4", "--clients", "2", "--rounds", "2", "--per-client", "2"],
        "pgwire",
    ),
    ("bench.public_sandbox", ["--timeout", "10", "SELECT len(list_value(1, 2, 3))"], None),
    ("bench.startup", ["--repeats", "1"], "startup"),
]


def _section(text: str, name: str) -> str:
    found = re.search(rf"<!-- {name}:start -->(.*?)<!-- {name}:end -->", text, re.S)
    assert found, f"no {name} section"
    return found.group(1)


def _shape(section: str) -> tuple[str, str]:
    """The section's heading (its figures left out) and its first table's header row."""
    lines = section.splitlines()
    heading = next(line for line in lines if line.startswith("#"))
    header = next(line for i, line in enumerate(lines[:-1]) if lines[i + 1].startswith("|---"))
    return re.sub(r"\d[\d,.]*", "N", heading), header


@pytest.mark.slow
@pytest.mark.parametrize(("module", "args", "section"), RUNS, ids=[run[0] for run in RUNS])
def test_benchmark_runs_small(module: str, args: list[str], section: str | None, tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    shutil.copyfile(DOC, doc)
    env = dict(os.environ, PRIVDB_BENCH_DOC=str(doc), PRIVDB_BENCH_PEERS="existing")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = doc.read_text(encoding="utf-8")
    if section is None:
        assert written == DOC.read_text(encoding="utf-8")
        return
    heading, header = _shape(_section(written, section))
    committed_heading, committed_header = _shape(_section(DOC.read_text(encoding="utf-8"), section))
    assert heading == committed_heading
    assert committed_header.startswith(header.removesuffix(" |"))  # the committed run may have had more
    assert _section(written, section) != _section(DOC.read_text(encoding="utf-8"), section)  # rewritten


SOAK_ARGS = ["--minutes", "0.05", "--rows", "2000", "--analysts", "2", "--idle", "2", "--flood", "1"]
SOAK_ARGS += ["--settle", "1", "--sample", "0.5"]
SOAK_ARGS += ["--skip", "mem_repeat,mem_len,mem_unnest"]  # each takes the server several GiB for a minute
SOAK_STARTED = [  # kinds whose first attempt starts as the attack does (the others wait their turn)
    "failed login (wrong password)",
    "idle socket (no start-up message)",
    "short session (log in, close at once)",
    "1 MiB DP-SELECT text",
    "cancel a running catalog query",
]


@pytest.mark.slow
def test_pgwire_soak_runs_small(tmp_path: Path) -> None:
    """bench.pgwire_soak for 3 seconds of attack: its section has every table, each attacker made its
    attempts and had them answered somehow, every ledger equals the answers received, and the plot is
    written beside the section."""
    doc = tmp_path / "benchmarks.md"
    shutil.copyfile(DOC, doc)
    env = dict(os.environ, PRIVDB_BENCH_DOC=str(doc))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "bench.pgwire_soak", *SOAK_ARGS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    section = _section(doc.read_text(encoding="utf-8"), "pgwire_soak")
    committed = _section(DOC.read_text(encoding="utf-8"), "pgwire_soak")
    assert _shape(section) == _shape(committed)
    rules = [sum(line.startswith("|---") for line in text.splitlines()) for text in (section, committed)]
    assert rules == [4, 4]  # the tables: latency, the server's resources, the attacks, the ledgers
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in section.splitlines()}
    for kind in SOAK_STARTED:
        assert int(rows[kind][1].replace(",", "")) >= 1, rows[kind]
        assert rows[kind][3] != "—", rows[kind]  # each attempt's outcome, or "still waiting"
    assert rows["SELECT len(range(200000000))"][3] == "skipped (--skip)"
    ledgers = [cells for key, cells in rows.items() if re.fullmatch(r"analyst\d+|mallory.*", key)]
    assert len(ledgers) == 3 and all(cells[-1].strip("| ") == "yes" for cells in ledgers), ledgers
    assert (tmp_path / "pgwire_soak.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](pgwire_soak.png)" in section
