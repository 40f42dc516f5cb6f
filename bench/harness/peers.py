"""The peers' environments, written once. A peer whose pins the project's venv cannot hold (SmartNoise SQL
and Synth, Qrlew, anjana, pure-ldp) gets its own venv under ``bench/.peers`` and runs as a worker
subprocess that reads a JSON spec on stdin and answers one JSON line on stdout; a peer in the project's venv
(diffprivlib, OpenDP) is imported where it can be. A peer that cannot be had is reported and skipped, never
the end of the run.

``PRIVDB_BENCH_PEERS=existing`` uses only venvs already made (no install: the smoke tests set it).
Standard library only: the workers import this module in their own venvs."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import ROOT

PEERS = ROOT / "bench" / ".peers"  # peers' own venvs: made by the bench scripts, never committed


class PeerUnavailable(RuntimeError):
    """A peer could not be installed or run; the message says why."""


def ensure_venv(venv: Path, requirements: list[str]) -> Path:
    """``venv/bin/python`` with ``requirements`` installed (a peer whose pins the project's venv cannot
    hold), creating the venv under ``PEERS`` if needed; a stamp names what is installed."""
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{hashlib.sha256(' '.join(requirements).encode()).hexdigest()[:12]}"
    if python.exists() and stamp.exists():
        return python
    if os.environ.get("PRIVDB_BENCH_PEERS") == "existing":
        raise PeerUnavailable(f"{venv.name} has no venv yet and PRIVDB_BENCH_PEERS=existing installs none")
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


def module_argv(python: str | Path, module: str, *args: str) -> list[str]:
    """The command that runs ``module`` (``bench.….worker``) with ``python``."""
    return [str(python), "-m", module, *args]


def environment() -> dict[str, str]:
    """This environment with the repository on PYTHONPATH, so that ``python -m bench.…`` resolves in any
    venv and from any directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_json_worker(argv: list[str], spec: dict[str, Any], failed: str) -> dict[str, Any]:
    """Run ``argv`` with ``spec`` as JSON on its stdin; the worker's last line of stdout is its JSON
    result. If it fails: ``{"error": failed}`` with ``{code}`` in ``failed`` replaced by its exit code."""
    done = subprocess.run(
        argv, input=json.dumps(spec), stdout=subprocess.PIPE, text=True, check=False, env=environment()
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": failed.format(code=done.returncode)}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def worker_main(work: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """A worker's entry point: the spec on stdin, its figures as one JSON line on stdout."""
    spec = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):  # whatever a library prints stays off the JSON channel
        result = work(spec)
    real_stdout.write(json.dumps(result) + "\n")


@dataclass(frozen=True)
class VenvPeer:
    """A peer in a venv of its own: its name in messages, its folder under ``PEERS`` and its pip
    requirements (``{duckdb}`` stands for the project's DuckDB version, so the peer reads the same files)."""

    name: str
    folder: str
    requirements: tuple[str, ...]

    @property
    def venv(self) -> Path:
        return PEERS / self.folder

    def pins(self) -> list[str]:
        duckdb = (
            importlib.metadata.version("duckdb") if any("{duckdb}" in r for r in self.requirements) else ""
        )
        return [r.format(duckdb=duckdb) for r in self.requirements]

    def python(self) -> Path:
        """The venv's interpreter, installing it first if need be (``PeerUnavailable`` if it cannot)."""
        return ensure_venv(self.venv, self.pins())

    def run(self, module: str, spec: dict[str, Any], *args: str, failed: str | None = None) -> dict[str, Any]:
        """The worker ``module`` (with ``args``) in this venv; its figures, or ``{"error": why}``."""
        try:
            python = self.python()
        except (PeerUnavailable, OSError) as err:
            return {"error": f"{self.name} could not be installed: {err}"}
        said = failed or f"the {self.name} worker failed (exit {{code}}); see its output above"
        return run_json_worker(module_argv(python, module, *args), spec, said)


# smartnoise-sql 1.0.10: the latest on PyPI when written; it requires opendp>=0.14.1,<0.15 and pandas<3
SMARTNOISE_SQL = VenvPeer("SmartNoise SQL", "smartnoise", ("smartnoise-sql==1.0.10", "duckdb=={duckdb}"))
SMARTNOISE_SYNTH = VenvPeer("SmartNoise Synth", "smartnoise-synth", ("smartnoise-synth==1.0.8",))
QRLEW = VenvPeer(  # the latest pyqrlew; duckdb-sqlalchemy 1.5.6.4: the newest dialect that accepts duckdb 2.0
    "Qrlew", "qrlew", ("pyqrlew==0.9.27", "duckdb=={duckdb}", "duckdb-sqlalchemy==1.5.6.4")
)
ANJANA = VenvPeer(  # the latest on PyPI when written; pins numpy==2.0.2, pandas==2.3.3, pycanon==1.3.5
    "anjana", "anjana", ("anjana==1.2.3",)
)
PURE_LDP = VenvPeer("pure-ldp", "pureldp", ("pure-ldp==1.2.0", "statsmodels", "scikit-learn", "xxhash<4"))


def optional(module: str) -> types.ModuleType | None:
    """A peer in the project's venv, or None where it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def load_diffprivlib() -> types.ModuleType | None:
    """``diffprivlib.mechanisms``, even where diffprivlib's package ``__init__`` cannot be imported.

    diffprivlib 0.6.6 imports ``sklearn.tree._tree.DOUBLE`` for its models, a name scikit-learn 1.9 removed;
    the mechanisms never touch scikit-learn's trees, so they are loaded without the package ``__init__``.
    """
    try:
        return importlib.import_module("diffprivlib.mechanisms")
    except ImportError:
        spec = importlib.util.find_spec("diffprivlib")
        if spec is None or not spec.submodule_search_locations:
            return None
    for name in [m for m in sys.modules if m == "diffprivlib" or m.startswith("diffprivlib.")]:
        del sys.modules[name]
    package = types.ModuleType("diffprivlib")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["diffprivlib"] = package
    return importlib.import_module("diffprivlib.mechanisms")
