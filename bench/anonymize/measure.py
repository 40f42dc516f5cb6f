"""Mondrian on Adult in-process, and the full-domain search of privdb and anjana from cold processes, each
release scored by privdb's ``utility``."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.anonymize.spec import QI, SUPPRESSION
from bench.anonymize.workers import ANJANA_COLD, PRIVDB_COLD
from bench.harness.timing import warm_best

if TYPE_CHECKING:
    import pandas as pd


def peer_versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, platform; print(json.dumps({n: m.version(n) for n in "
        "('anjana', 'pycanon', 'pandas', 'numpy')} | {'python': platform.python_version()}))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    out: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@dataclass
class MondrianRow:
    k: int
    seconds: float
    ncp: float
    ncp_utility: float
    classes: int
    smallest: int


def measure_mondrian(
    adult: pd.DataFrame, ks: tuple[int, ...], repeats: int, tick: Callable[[], None]
) -> list[MondrianRow]:
    from privdb.anonymize import anonymize
    from privdb.anonymize.utility import utility

    rows = []
    for k in ks:
        seconds, result = warm_best(lambda k=k: anonymize(adult, QI, k=k), repeats)  # type: ignore[misc]
        a: Any = result
        u = utility(adult, a.table, QI, k=k)  # no hierarchies: Mondrian's ranges and ordered sets
        rows.append(MondrianRow(k, seconds, a.ncp, u.ncp, a.n_classes, int(a.class_sizes().min())))
        tick()
    return rows


@dataclass
class ColdRun:
    tool: str
    k: int
    seconds: float | None = None  # best process wall time minus its write time
    runs: list[float] = field(default_factory=list)
    inner: float | None = None  # the anonymisation call alone, as the process measured it (best run)
    inners: list[float] = field(default_factory=list)
    startup: float | None = None  # best wall time of a process that only imports the library
    node: dict[str, int] | None = None
    loss: float | None = None  # privdb's own metric (ARX's loss)
    ncp: float | None = None  # privdb's utility() on the release
    suppressed: int | None = None
    achieved_k: int | None = None
    error: str | None = None


def cold(
    python: str, code: str, adult_csv: Path, hier: Path, k: int, out: Path
) -> tuple[float, dict[str, Any]]:
    """Wall time of one cold process and what it printed (its last line, JSON)."""
    args = [python, "-c", code, str(adult_csv), str(hier), str(k), str(SUPPRESSION), str(out), json.dumps(QI)]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(" ".join(said[-2:]))
    info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return wall - float(info["write"]), info


def privdb_loss(adult: pd.DataFrame, data: Path, k: int, node: dict[str, int]) -> float | None:
    """privdb's loss (the metric its search minimises) of a lattice node; None if not anonymous there."""
    from privdb.anonymize import load_hierarchies
    from privdb.anonymize.lattice import Lattice
    from privdb.anonymize.resolve import resolve

    hier = resolve(adult, QI, load_hierarchies(data / "hierarchies", QI, fix_labels=True))
    result, _ = Lattice(adult, QI, hier, k, suppression_limit=SUPPRESSION).evaluate([node[c] for c in QI])
    return result.value if result.anonymous else None


def cold_import(python: str, module: str, repeats: int) -> float:
    """Best wall time of a cold process that starts the interpreter and imports ``module``."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([python, "-c", f"import pandas, {module}"], check=True, capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def read_release(adult: pd.DataFrame, path: Path) -> pd.DataFrame:
    """A release written as CSV, as text, one row per original record (rows a tool dropped: ``*``)."""
    import pandas as pd

    out = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)
    release = adult.astype(str).copy()
    if len(out) == len(adult) and "index" not in out.columns:
        release[QI] = out[QI].to_numpy()
        return release
    release[QI] = "*"
    rows = out["index"].astype(int).to_numpy()
    release.loc[rows, QI] = out[QI].to_numpy()
    return release


def measure_lattice(
    adult: pd.DataFrame,
    data: Path,
    ks: tuple[int, ...],
    repeats: int,
    anjana_python: str | None,
    work: Path,
    tick: Callable[[], None],
) -> list[ColdRun]:
    from privdb.anonymize import load_hierarchies
    from privdb.anonymize.models import check
    from privdb.anonymize.utility import utility

    hier = load_hierarchies(data / "hierarchies", QI, fix_labels=True)
    tools = {"privdb": (sys.executable, PRIVDB_COLD)}
    modules = {"privdb": "privdb.anonymize", "anjana": "anjana.anonymity"}
    if anjana_python is not None:
        tools["anjana"] = (anjana_python, ANJANA_COLD)
    startup = {tool: cold_import(python, modules[tool], repeats) for tool, (python, _) in tools.items()}
    rows = []
    for k in ks:
        for tool, (python, code) in tools.items():
            row = ColdRun(tool, k, startup=startup[tool])
            out = work / f"{tool}-{k}.csv"
            try:
                for _ in range(repeats):  # interleaving is by k: each tool's runs for one k in a row
                    seconds, info = cold(python, code, data / "adult.csv", data / "hierarchies", k, out)
                    row.runs.append(seconds)
                    row.inners.append(float(info["inner"]))
                    tick()
            except RuntimeError as err:
                row.error = str(err)
                rows.append(row)
                continue
            row.seconds = min(row.runs)
            row.inner, row.node, row.loss = min(row.inners), info.get("node"), info.get("loss")
            if tool != "privdb" and row.node:  # the peer's node, scored by privdb's own search metric
                row.loss = privdb_loss(adult, data, k, row.node)
            release = read_release(adult, out)
            u = utility(adult, release, QI, hier, k=k)
            row.ncp, row.suppressed = u.ncp, u.suppressed
            row.achieved_k = check(release, QI).k
            rows.append(row)
    return rows
