"""MEDIAN on tied data (issue 26, item 4): the spread of privdb's answer over seeded releases at ε = 1.

Three tables: 1,000 capital gains with 90% zeros (int, bounds 0..99,999: a grid of 2^14 cells), 100 copies
of 10.0 (float, bounds 0..100), and UCI Adult's capital-gain (examples/adult_uci.data, 300 records, bounds
0..99,999). Per table the engine's histogram is read once and ``--runs`` (200) answers drawn from it with
fresh seeded noise (``add_noise``, the path ``engine.run`` takes). Prints the exact median, the 5th, 50th
and 95th percentiles of the answers and the share within one grid cell of the exact median.

Run: ``.venv/bin/python -m bench.quantile_ties [--runs N]``.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.harness import ROOT
from privdb.database import Database
from privdb.mechanisms import SeededRandom
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries


def _tables() -> list[tuple[str, pd.DataFrame, dict[str, Any], float]]:
    rng = np.random.default_rng(2)
    gains = np.where(rng.random(1000) < 0.9, 0, rng.integers(1, 100_000, 1000))
    adult = pd.read_csv(ROOT / "examples" / "adult_uci.data", header=None, skipinitialspace=True)
    wide = {"columns": {"v": {"type": "int", "lower": 0, "upper": 99_999}}}
    return [
        ("90% zeros (int 0..99999)", pd.DataFrame({"v": gains}), wide, 99_999 / 2**14),
        ("100 × 10.0 (float 0..100)", pd.DataFrame({"v": [10.0] * 100}),
         {"columns": {"v": {"type": "float", "lower": 0, "upper": 100}}}, 100 / 2**14),
        ("Adult capital-gain (300 rows)", pd.DataFrame({"v": adult[10].astype(int)}), wide, 99_999 / 2**14),
    ]  # fmt: skip


def spread(frame: pd.DataFrame, meta: dict[str, Any], runs: int, seed: int) -> np.ndarray:
    """``runs`` released medians of ``frame.v`` at ε = 1 from one engine read."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "db")
        try:
            db.backend.load_frame("t", frame)
            db.set_metadata("t", meta)
            plan, _ = engine.prepare(db, "DP-SELECT 1 MEDIAN(v) FROM t")
            assert isinstance(plan, Plan)
            hists = {n: db.backend.fetch(s) for n, s in histogram_queries(db, plan).items()}
        finally:
            db.close()
    with warnings.catch_warnings():  # SeededRandom warns that it is for tests: so is this
        warnings.simplefilter("ignore")
        source = SeededRandom(seed)
    return np.array([add_noise(plan, None, source, hists).rows[0][0] for _ in range(runs)], dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"| table | exact median | p5 | p50 | p95 | within one cell ({args.runs} runs) |")
    print("|---|---|---|---|---|---|")
    for i, (name, frame, meta, cell) in enumerate(_tables()):
        answers = spread(frame, meta, args.runs, seed=100 + i)
        exact = float(np.median(frame["v"]))
        p5, p50, p95 = np.percentile(answers, [5, 50, 95])
        near = float((np.abs(answers - exact) <= cell).mean())
        print(f"| {name} | {exact:g} | {p5:.4g} | {p50:.4g} | {p95:.4g} | {near:.1%} |")


if __name__ == "__main__":
    main()
