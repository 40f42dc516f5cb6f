"""The README, run as a newcomer would: every ``sh`` and ``python`` block, in order, in a fresh directory
holding a copy of ``examples/``, with ``.venv/bin`` on the PATH (as after ``source .venv/bin/activate``).

Shell blocks run under ``bash -euo pipefail``: a command that fails fails the test (the README marks the ones
meant to fail with ``|| echo …``). A block that starts ``privdb serve … &`` gets a free port instead of 8000,
waits until the server answers, and stops it at the end. ``make`` lines are what CI itself runs: skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from bench.harness.ports import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

pytestmark = pytest.mark.slow

_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, str]]:
    found = _FENCE.findall(README.read_text())
    return [(lang, body) for lang, body in found if lang in ("sh", "python", "yaml")]


_WAIT = (
    'for _ in $(seq 100); do python -c "import httpx,sys; httpx.get(sys.argv[1]).raise_for_status()" '
    '"http://127.0.0.1:{port}/healthz" 2>/dev/null && break; sleep 0.2; done'
)


def _script(body: str) -> str:
    lines = [line for line in body.splitlines() if not line.lstrip().startswith("make ")]
    text = "\n".join(lines)
    if re.search(r"privdb serve .*&", text):
        port = _free_port()
        text = text.replace("8000", str(port))
        out = []
        for line in text.splitlines():
            out.append(line)
            if re.search(r"privdb serve .*&", line):
                out.append("SERVER=$!; trap 'kill $SERVER; wait $SERVER 2>/dev/null || true' EXIT")
                out.append(_WAIT.format(port=port))
        text = "\n".join(out)
    return text


def test_the_readme_yaml_is_the_shipped_example() -> None:
    (metadata,) = [body for lang, body in _blocks() if lang == "yaml"]
    shipped = yaml.safe_load((ROOT / "examples" / "people.yaml").read_text())
    assert yaml.safe_load(metadata) == shipped


def test_every_readme_command_runs(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "120",
    }
    env.pop("PRIVDB_URL", None)
    env.pop("PRIVDB_TOKEN", None)
    ran = 0
    for number, (lang, body) in enumerate(_blocks()):
        if lang == "yaml":
            continue
        if lang == "sh":
            script = _script(body)
            if not script.strip():
                continue
            command = ["bash", "-euo", "pipefail", "-c", script]
        else:
            command = [sys.executable, "-c", body]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        said = done.stderr[-3000:]
        assert done.returncode == 0, f"README block {number} ({lang}) failed:\n{body}\n---\n{said}"
        assert "Traceback" not in done.stderr, done.stderr
        ran += 1
    assert ran >= 8
