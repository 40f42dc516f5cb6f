"""Heuristic full-domain search beside the optimal lattice (issue 31): ``python -m bench.anonymize_search``.

Adult (30,162 rows, 8 quasi-identifiers, ARX's hierarchies with ``fix_labels``, k = 10, 5 % suppression):
the optimal node's loss against Lightning's at 1, 5 and 10 s and the genetic search's at 10 s. Then a
high-dimensional variant where only the heuristics run: Adult's 9 columns plus, for each, a copy taken
from a seeded shuffle of the rows (18 quasi-identifiers, a lattice of 1.7·10⁸ nodes). Prints a
Markdown table (the figures in docs/benchmarks.md).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from privdb.anonymize import Search, anonymize, load_hierarchies

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "workclass", "education", "marital-status", "occupation", "race", "sex", "native-country"]
ALL = [*QI, "salary-class"]


def wide(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str], dict[str, object]]:
    """Adult's 9 columns and a shuffled copy of each (``<name>-2``, the same hierarchy)."""
    hs = load_hierarchies(ADULT / "hierarchies", ALL, fix_labels=True)
    order = np.random.default_rng(31).permutation(len(df))
    out = df[ALL].copy()
    given: dict[str, object] = dict(hs)
    for c in ALL:
        out[f"{c}-2"] = df[c].to_numpy()[order]
        twin = load_hierarchies(ADULT / "hierarchies", [c], fix_labels=True)[c]
        twin.name = f"{c}-2"
        given[f"{c}-2"] = twin
    return out, list(out.columns), given


def row(label: str, res: object, seconds: float) -> str:
    p = res.params  # type: ignore[attr-defined]
    done = {True: "yes", False: "no"}.get(p.get("complete"), "—")
    return (
        f"| {label} | {res.ncp:.2%} | {res.n_suppressed:,} | {p.get('evaluations', 0):,} | "  # type: ignore[attr-defined]
        f"{seconds:.1f} | {done} |"
    )


def main() -> None:
    df = pd.read_csv(ADULT / "adult.csv", sep=";")
    kw = {"k": 10, "algorithm": "lattice", "fix_labels": True}
    lines = [
        "| search | loss | suppressed | nodes evaluated | seconds | finished |",
        "|---|---|---|---|---|---|",
    ]
    t = time.perf_counter()
    opt = anonymize(df, QI, hierarchies=str(ADULT / "hierarchies"), search="optimal", **kw)  # type: ignore[arg-type]
    lines.append(row("Adult, 8 QI: optimal (6,480 nodes)", opt, time.perf_counter() - t))
    for method, limit in [("lightning", 1), ("lightning", 5), ("lightning", 10), ("genetic", 10)]:
        t = time.perf_counter()
        res = anonymize(
            df, QI, hierarchies=str(ADULT / "hierarchies"), search=Search(method, time_limit=limit), **kw
        )  # type: ignore[arg-type]
        lines.append(row(f"Adult, 8 QI: {method} {limit} s", res, time.perf_counter() - t))
    big, qi, given = wide(df)
    for method, limit in [("lightning", 1), ("lightning", 5), ("lightning", 10), ("genetic", 10)]:
        t = time.perf_counter()
        res = anonymize(big, qi, hierarchies=given, search=Search(method, time_limit=limit), **kw)  # type: ignore[arg-type]
        nodes = res.params["nodes"]
        lines.append(
            row(f"Adult ×2, 18 QI ({nodes:.1e} nodes): {method} {limit} s", res, time.perf_counter() - t)
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
