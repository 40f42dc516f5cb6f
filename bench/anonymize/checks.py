"""The privacy checks: privdb's (one grouping, or check then risk) beside pycanon's, which runs in a worker
process with a time budget per table, and a brute-force oracle for recursive (c, l)."""

from __future__ import annotations

import contextlib
import json
import math
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.anonymize.spec import PYCANON_FUNCS, QI, SENSITIVE
from bench.harness.peers import environment, module_argv
from bench.harness.timing import warm_best

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class CheckRow:
    name: str
    rows: int
    classes: int
    together: float  # check + risk sharing one grouping
    separate: float  # check, then risk grouping again (as privdb.anonymize.report does)
    values: dict[str, Any]
    oracle_c: float | None
    pycanon: dict[str, Any] = field(default_factory=dict)
    budget: float = 0.0


def recursive_c_oracle(table: pd.DataFrame, l: int) -> float:  # noqa: E741 (the field's notation)
    """Smallest integer c with r₁ < c·(r_l + … + r_m) in every class, counts sorted descending: groupby."""
    counts = table.groupby([*QI, SENSITIVE], observed=True, sort=False).size()
    worst = 1.0
    for _, cnt in counts.groupby(level=list(range(len(QI))), sort=False):
        r = sorted(cnt.to_list(), reverse=True)
        tail = sum(r[l - 1 :])
        if tail == 0:
            return math.inf
        worst = max(worst, float(r[0] // tail + 1))
    return worst


def measure_checks(
    tables: dict[str, pd.DataFrame], repeats: int, oracle_rows: int, tick: Callable[[], None]
) -> list[CheckRow]:
    from privdb.anonymize.models import check
    from privdb.anonymize.risk import risk

    def together(t: pd.DataFrame) -> tuple[Any, Any]:
        res = check(t, QI, SENSITIVE, distance="equal")
        return res, risk(t, QI, classes=res.classes)

    def separate(t: pd.DataFrame) -> tuple[Any, Any]:
        return check(t, QI, SENSITIVE, distance="equal"), risk(t, QI)

    rows = []
    for name, table in tables.items():
        s_together, out = warm_best(lambda t=table: together(t), repeats)  # type: ignore[misc]
        s_separate, _ = warm_best(lambda t=table: separate(t), repeats)  # type: ignore[misc]
        res, rk = cast("tuple[Any, Any]", out)
        values = {
            "k": res.k,
            "l": res.l,
            "l_entropy": res.l_entropy,
            "recursive_l": res.recursive_l,
            "recursive_c": res.recursive_c,
            "t": res.t,
            "prosecutor_max": rk.prosecutor_max,
            "prosecutor_avg": rk.prosecutor_avg,
        }
        oracle = recursive_c_oracle(table, res.recursive_l) if len(table) <= oracle_rows else None
        rows.append(CheckRow(name, len(table), res.classes.n_classes, s_together, s_separate, values, oracle))
        tick()
    return rows


def run_pycanon(path: Path, budget: float) -> dict[str, Any]:
    """pycanon's five checks in a subprocess; stopped when ``budget`` seconds of checking are spent."""
    proc = subprocess.Popen(
        module_argv(sys.executable, "bench.anonymize.workers", "pycanon"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"path": str(path), "qi": QI, "sensitive": SENSITIVE}))
    proc.stdin.close()
    lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
    stdout = proc.stdout

    def reader() -> None:
        for line in stdout:
            with contextlib.suppress(json.JSONDecodeError):
                lines.put(json.loads(line))
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    out: dict[str, Any] = {"results": {}, "stopped": None}
    try:
        first = lines.get(timeout=300)
        if not first or not first.get("ready"):
            return {"error": "the pycanon worker failed before its first check"}
        deadline = time.perf_counter() + budget
        while True:
            msg = lines.get(timeout=max(deadline - time.perf_counter(), 0.001))
            if msg is None:
                if len(out["results"]) < len(PYCANON_FUNCS):
                    out["error"] = "the pycanon worker stopped early"
                break
            if msg.get("done"):
                break
            out["results"][msg["name"]] = {"seconds": msg["seconds"], "value": msg["value"]}
    except queue.Empty:
        spent = sum(r["seconds"] for r in out["results"].values())
        out["stopped"] = {"name": PYCANON_FUNCS[len(out["results"])], "after": budget - spent}
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    return out
