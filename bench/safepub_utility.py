"""SafePub's utility on Adult: privdb's scores and searches (issue 31), beside ARX run here.

Data: UCI Adult (``data/adult``, 30,162 records), quasi-identifiers age, workclass, education,
marital-status, occupation, race, sex, native-country with ARX's hierarchies; δ = 1e-5, ε_search = 0.1 (ARX's
default share), ε ∈ {0.5, 1, 2}. Per implementation and ε, ``--runs`` independent releases (CSPRNG and
ARX's SecureRandom), averaged:

* NCP: score ``loss``; the released records' normalised certainty penalty against their originals
  (``privdb.anonymize.utility.ncp``, lower is better).
* Gain: score ``classification``, target salary-class; a majority vote within each released class predicts
  the released records' salary-class, minus always predicting their most frequent value, in points (the
  owner report's ``classification`` entry, ``privdb.publish.report.majority_accuracy``).
* Released: the share of Adult's records in the release (score ``loss``).

privdb rows: the threshold score (ARX's formulas at t = ⌈k/β⌉, ``calibrated=False``) and the
expected-release score (``privdb.publish.expected``), each with SafePub's walk (the lattice's height in steps,
the final node among the pivots by one more exponential-mechanism draw, ``search="walk"``); and the
expected-release score with one draw over every node (``search="lattice"``: the default for the
classification score since issue 31's second part; for ``loss`` an option). ARX (3.x, built from its sources)
runs ``EDDifferentialPrivacy`` with ``--arx-steps`` steps (300 by default) through
``bench/arx/SafePubRun.java``; its node and kept rows are measured by the same privdb code. ARX is
skipped, and said so, unless ``--arx-classpath`` (or ``PRIVDB_ARX_CLASSPATH``) names its classes and jars.

Run: ``python -m bench.safepub_utility [--runs N] [--arx-classpath CP] [--quick]``; a full run rewrites the
``safepub-utility`` section of docs/benchmarks.md, ``--quick`` (2 runs, ε = 1) only prints.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from bench.harness import machine
from bench.harness.data import ADULT, QI, load_adult
from bench.harness.report import section as doc_section
from bench.harness.report import write_section
from privdb.anonymize import load_hierarchies
from privdb.anonymize.hierarchy import Hierarchy
from privdb.anonymize.utility import ncp
from privdb.publish import safepub
from privdb.publish.report import majority_accuracy
from privdb.publish.safepub_search import PublicHierarchy

DELTA = 1e-5
EPS_SEARCH = 0.1
TARGET = "salary-class"
SOURCE = Path(__file__).parent / "arx" / "SafePubRun.java"
NOTE = ("ARX: built from its sources (github arx-deidentifier/arx) and run here. Defaults now: the "
        "classification score (a named --target) searches the lattice, so its gain is the lattice row's; the "
        "loss score walks, so its NCP and released share are the old-default row's (the lattice row's loss "
        "columns are --search lattice). Read in docs/publish.md, \"Which search\".")  # fmt: skip


def measure(
    df: pd.DataFrame, hier: dict[str, Hierarchy], node: dict[str, int], kept: np.ndarray
) -> dict[str, float]:
    """NCP, majority-vote gain (points) and released share of a release given by its node and kept rows."""
    released = pd.DataFrame(
        {c: PublicHierarchy(hier[c]).generalize(df.loc[kept, c].to_numpy(dtype=object), node[c]) for c in QI}
    )
    original = df.loc[kept, QI].reset_index(drop=True)
    per = ncp(original, released, QI, hier) if len(released) else None
    vote = majority_accuracy(released, df.loc[kept, TARGET])
    gain = (
        100 * (vote["majority_in_class"] - vote["majority_overall"])
        if vote["majority_in_class"] is not None
        else 0.0
    )
    return {"ncp": float(np.mean(list(per.values()))) if per else 1.0, "gain": gain, "released": kept.mean()}


def privdb_runs(
    df: pd.DataFrame, hier: dict[str, Hierarchy], eps: float, runs: int, calibrated: bool, search: str
) -> list[dict[str, float]]:
    out = []
    for _ in range(runs):
        loss = safepub(df, QI, hier, epsilon=eps, delta=DELTA, epsilon_search=EPS_SEARCH,
                       calibrated=calibrated, search=search)  # fmt: skip
        cls = safepub(df, QI, hier, epsilon=eps, delta=DELTA, epsilon_search=EPS_SEARCH,
                      calibrated=calibrated, metric="classification", target=TARGET,
                      search=search)  # fmt: skip
        a, b = measure(df, hier, loss.node, loss.kept), measure(df, hier, cls.node, cls.kept)
        out.append({"ncp": a["ncp"], "released": a["released"], "gain": b["gain"]})
    return out


def _arx(
    classpath: str, work: Path, eps: float, steps: int, metric: str, runs: int
) -> list[tuple[dict[str, int], np.ndarray]]:
    """ARX's releases: (node, kept rows) per run."""
    target = TARGET if metric == "classification" else "-"
    args = [str(ADULT / "adult.csv"), str(ADULT / "hierarchies"), ",".join(QI), str(eps), str(DELTA),
            str(EPS_SEARCH), str(steps), metric, target, "-", str(runs)]  # fmt: skip
    cp = f"{work}{os.pathsep}{classpath}"
    text = subprocess.run(
        ["java", "-cp", cp, "SafePubRun", *args], capture_output=True, text=True, check=True
    ).stdout
    releases, node = [], {}
    for line in text.splitlines():
        if line.startswith("node "):
            node = {k: int(v) for k, v in (part.split("=") for part in line.split()[1:])}
        elif line.startswith("kept "):
            releases.append((node, np.frombuffer(line[5:].encode(), dtype=np.uint8) == ord("1")))
    return releases


def arx_runs(
    df: pd.DataFrame, hier: dict[str, Hierarchy], classpath: str, eps: float, runs: int, steps: int
) -> list[dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-nowarn", "-d", tmp, "-cp", classpath, str(SOURCE)], check=True)
        loss = _arx(classpath, Path(tmp), eps, steps, "loss", runs)
        cls = _arx(classpath, Path(tmp), eps, steps, "classification", runs)
    out = []
    for (n1, k1), (n2, k2) in zip(loss, cls, strict=True):
        a, b = measure(df, hier, n1, k1), measure(df, hier, n2, k2)
        out.append({"ncp": a["ncp"], "released": a["released"], "gain": b["gain"]})
    return out


def _cell(rows: list[dict[str, float]], key: str, fmt: str) -> str:
    values = [r[key] for r in rows]
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{format(statistics.mean(values), fmt)} ± {format(spread, fmt)}"


def section(
    results: dict[tuple[float, str], list[dict[str, float]]], runs: int, steps: int, command: str, note: str
) -> str:
    lines = [f"Written by `bench/safepub_utility.py`; command: `{command}`", "",
             f"Machine: {machine.cpu_model()}; {machine.utc_now()} UTC. Adult (30,162 records), "
             f"8 quasi-identifiers, ARX's hierarchies, δ = {DELTA:g}, ε_search = {EPS_SEARCH}; {runs} "
             "releases per cell (mean ± standard deviation). privdb walk: steps = the lattice's height, "
             "final node by one more exponential-mechanism draw; privdb lattice: one exponential-mechanism "
             f"draw over all 6,480 nodes with all of ε_search; ARX: {steps} steps, best visited pivot.", "",
             "| ε | implementation | NCP (loss score) | released (loss score) "
             "| majority-vote gain, points (classification score) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for (eps, who), rows in results.items():
        lines.append(f"| {eps:g} | {who} | {_cell(rows, 'ncp', '.3f')} | {_cell(rows, 'released', '.1%')} "
                     f"| {_cell(rows, 'gain', '+.1f')} |")  # fmt: skip
    lines += ["", note]
    heading = "SafePub's utility: privdb's scores and searches, beside ARX"
    return doc_section("safepub-utility", heading, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--arx-classpath", default=os.environ.get("PRIVDB_ARX_CLASSPATH"))
    parser.add_argument("--arx-steps", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs, epsilons = (2, (1.0,)) if args.quick else (args.runs, (0.5, 1.0, 2.0))
    df = load_adult()
    hier = load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True)
    results: dict[tuple[float, str], list[dict[str, float]]] = {}
    for eps in epsilons:
        for who, calibrated, search in (("privdb threshold score, walk", False, "walk"),
                                        ("privdb calibrated score, walk (old default)", True, "walk"),
                                        ("privdb calibrated score, lattice", True, "lattice")):  # fmt: skip
            results[(eps, who)] = privdb_runs(df, hier, eps, runs, calibrated, search)
        if args.arx_classpath:
            results[(eps, f"ARX ({args.arx_steps} steps)")] = arx_runs(
                df, hier, args.arx_classpath, eps, runs, args.arx_steps
            )
    note = NOTE if args.arx_classpath else "ARX was not run (no --arx-classpath)."
    command = f"python -m bench.safepub_utility --runs {runs} --arx-classpath CLASSPATH"
    text = section(results, runs, args.arx_steps, command, note)
    print(text)
    if not args.quick:
        write_section("safepub-utility", text)


if __name__ == "__main__":
    main()
