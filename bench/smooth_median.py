"""MEDIAN by smooth sensitivity against the exponential mechanism (issue 31): the absolute error of each
against the true median, over many seeded releases, at several ε, on four distributions and two sizes.

Per table and ε, the two queries are ``DP-SELECT ε MEDIAN(v) FROM t`` (the default: the exponential
mechanism, pure ε-DP, half of ε on the answer and a quarter on each end of its 95% interval) and
``DP-SELECT ε DELTA 1e-6 USING SMOOTH MEDIAN(v) FROM t`` (Laplace noise scaled to the β-smooth sensitivity,
(ε, δ)-DP, all of ε on the answer, no interval). Each query's engine histogram is read once and ``--runs``
answers are drawn from it with fresh seeded noise (``add_noise``, the path ``engine.run`` takes after the
read, which is deterministic); the true median is the engine's plain ``SELECT MEDIAN(v) FROM t``.

Tables (``--sizes`` rows each, fixed seeds): uniform over the bounds 0..100; a normal N(50, 5²) clipped to
0..100; a point mass (70% exactly 42, the rest uniform over 0..100); incomes resampled from the PUMS
sample (data/pums, 1,000 people, int 0..500,000, 25% zeros, long right tail).

Run: ``.venv/bin/python -m bench.smooth_median [--runs 400] [--sizes 1000,10000] [--quick]``. A full run
rewrites the ``smooth-median`` section of docs/benchmarks.md; ``--quick`` (100 runs, 1,000 rows) only
prints.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.harness import ROOT, machine, report
from privdb.database import Database
from privdb.mechanisms import SeededRandom
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTA = 1e-6
MECHANISMS = {"exponential": "DP-SELECT {eps!r} MEDIAN(v) FROM t"}
MECHANISMS["smooth"] = f"DP-SELECT {{eps!r}} DELTA {DELTA:g} USING SMOOTH MEDIAN(v) FROM t"
COLUMNS = ["data", "rows", "ε", "exp. median error", "exp. p90 error", "smooth median error"]
COLUMNS += ["smooth p90 error", "smaller median error"]
SMALL = {"columns": {"v": {"type": "float", "lower": 0, "upper": 100}}}
INCOME = {"columns": {"v": {"type": "int", "lower": 0, "upper": 500_000}}}


@dataclass(frozen=True)
class Row:
    data: str
    rows: int
    epsilon: float
    errors: dict[str, np.ndarray]  # per mechanism, |answer − true median| per run
    seconds: dict[str, float]  # per mechanism, the time of all its draws


def tables(n: int, seed: int) -> list[tuple[str, pd.DataFrame, dict[str, Any]]]:
    """The four tables of ``n`` rows (module doc)."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(0, 100, n)
    normal = np.clip(rng.normal(50, 5, n), 0, 100)
    mass = np.where(rng.random(n) < 0.7, 42.0, rng.uniform(0, 100, n))
    pums = pd.read_csv(ROOT / "data" / "pums" / "PUMS.csv")["income"].to_numpy()
    income = rng.choice(pums, n, replace=True)
    return [
        ("uniform 0..100", pd.DataFrame({"v": uniform}), SMALL),
        ("normal(50, 5) in 0..100", pd.DataFrame({"v": normal}), SMALL),
        ("70% at 42 in 0..100", pd.DataFrame({"v": mass}), SMALL),
        ("PUMS income 0..500,000", pd.DataFrame({"v": income.astype(np.int64)}), INCOME),
    ]


def _seeded(seed: int) -> SeededRandom:
    with (
        warnings.catch_warnings()
    ):  # SeededRandom warns that it is for tests: so is this, noise off the record
        warnings.simplefilter("ignore")
        return SeededRandom(seed)


def measure(frame: pd.DataFrame, meta: dict[str, Any], runs: int, seed: int) -> Iterator[Row]:
    """Per ε the errors of both mechanisms' released medians of ``frame.v`` (``runs`` each)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "db")
        try:
            db.backend.load_frame("t", frame)
            db.set_metadata("t", meta)
            truth = float(db.backend.fetch("SELECT MEDIAN(v) FROM t").to_numpy(dtype=float)[0, 0])
            reads = {}
            for eps in EPSILONS:
                for name, text in MECHANISMS.items():
                    plan, _ = engine.prepare(db, text.format(eps=eps))
                    assert isinstance(plan, Plan)
                    hists = {q: db.backend.fetch(s) for q, s in histogram_queries(db, plan).items()}
                    reads[eps, name] = plan, hists
        finally:
            db.close()
    for i, eps in enumerate(EPSILONS):
        errors, seconds = {}, {}
        for j, name in enumerate(MECHANISMS):
            plan, hists = reads[eps, name]
            source = _seeded(seed + 10 * i + j)
            t0 = time.perf_counter()
            answers = [add_noise(plan, None, source, hists).rows[0][0] for _ in range(runs)]
            seconds[name] = time.perf_counter() - t0
            errors[name] = np.abs(np.array(answers, dtype=float) - truth)
        yield Row("", len(frame), eps, errors, seconds)


def cells(row: Row) -> list[str]:
    """A table row: data, rows, ε, median and p90 |error| of each mechanism, the one with less."""
    figures = {name: np.percentile(err, [50, 90]) for name, err in row.errors.items()}
    exp, smooth = figures["exponential"], figures["smooth"]
    if np.isclose(exp[0], smooth[0], rtol=0.05, atol=1e-9):
        verdict = "tie (within 5%)"
    else:
        better, worse = (exp[0], smooth[0]) if exp[0] < smooth[0] else (smooth[0], exp[0])
        name = "exponential" if exp[0] < smooth[0] else "smooth"
        verdict = f"{name} ({report.ratio(worse, better)})" if better > 0 else name
    return [row.data, f"{row.rows:,}", f"{row.epsilon:g}", *(f"{v:.4g}" for v in (*exp, *smooth)), verdict]


def machine_line(load_before: str) -> str:
    return machine.describe(
        f"numpy {np.__version__}, duckdb {machine.version('duckdb')}",
        f"load (1/5/15 min) {load_before} before, {machine.load()} after",
        memory=False,
    )


def markdown(rows: list[Row], runs: int, line: str) -> str:
    seconds = {name: sum(r.seconds[name] for r in rows) for name in MECHANISMS}
    draws = runs * len(rows)
    wins = {
        name: sum(cells(r)[-1].startswith(name) for r in rows) for name in (*MECHANISMS, "tie")
    }  # fmt: skip
    lines = [
        report.written_by("bench.smooth_median", "bench/smooth_median.py"),
        "",
        f"Machine: {line}",
        "",
        (
            f"Absolute error of the released median against the true one (the engine's plain `SELECT "
            f"MEDIAN(v)`), median and 90th percentile over {runs} seeded releases per mechanism, ε and "
            "table. **exponential**: `DP-SELECT ε MEDIAN(v) FROM t`, the default: pure ε-DP, with half of ε "
            "on the answer (a quarter on each end of its 95% interval, which comes with it). **smooth**: "
            f"`DP-SELECT ε DELTA {DELTA:g} USING SMOOTH MEDIAN(v) FROM t`: (ε, δ)-DP, all of ε on the "
            "answer, no interval. Each query's engine read is done once and its noise drawn afresh per run. "
            '"smaller median error" names the mechanism whose median |error| is lower and by how much '
            "(a tie: within 5%)."
        ),
        "",
        *report.table(COLUMNS, [cells(r) for r in rows]),
        "",
        (
            f"Smaller median error: exponential in {wins['exponential']}, smooth in {wins['smooth']}, tie in "
            f"{wins['tie']} of {len(rows)} cells. Time per release from the read histogram (the load above "
            f"applies): exponential {1000 * seconds['exponential'] / draws:.2f} ms, smooth "
            f"{1000 * seconds['smooth'] / draws:.2f} ms (mean over {draws:,} each)."
        ),
        "",
        WHY,
    ]
    heading = f"MEDIAN: smooth sensitivity against the exponential mechanism ({runs} runs per cell)"
    return report.section("smooth-median", heading, lines)


WHY = (
    "Why: at δ = 1e-6 the smoothing rate is β = ε/(2·ln(2/δ)) ≈ ε/29, so the smooth bound S reaches up to "
    "1/β ≈ 29/ε ranks either side of the median, and the noise is Laplace of scale 2·S/ε: the spread of the "
    "data over up to ~60/ε ranks, times 2/ε. The exponential mechanism's rank error is O(ln(cells)/ε) ranks, "
    "with no second factor 1/ε, so it wins wherever the values near the median are spread out. Smooth "
    "sensitivity catches up only where the ranks around the median hold one value (the point mass, the "
    "discrete incomes at 10,000 rows), where S is 0 and its answer exact up to the grid, and at large ε on "
    "dense data. Both answer on the same grid of 2^14 cells over the bounds (0.0061 for 0..100, 30.5 for "
    "incomes): errors at that size (0.0017 at 42, 12.45 for the incomes) are the grid's, not the noise's. "
    "Smooth errors near half the range at ε = 0.1 are answers clamped to a bound."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="releases per mechanism, ε and table")
    parser.add_argument("--sizes", default="1000,10000", help="rows per table, comma-separated")
    parser.add_argument("--quick", action="store_true", help="100 runs on 1,000 rows; prints only")
    args = parser.parse_args()
    runs, sizes = (100, [1000]) if args.quick else (args.runs, [int(s) for s in args.sizes.split(",")])
    before = machine.load()
    console = report.console()
    rows: list[Row] = []
    for s, n in enumerate(sizes):
        for d, (name, frame, meta) in enumerate(tables(n, seed=31 + s)):
            console.print(f"{name}, {n:,} rows")
            seed = 1000 * (s + 1) + 100 * d
            rows += [
                Row(name, r.rows, r.epsilon, r.errors, r.seconds) for r in measure(frame, meta, runs, seed)
            ]
    line = machine_line(before)
    shown = report.rich_table(f"MEDIAN |error|, {runs} runs", COLUMNS, [cells(r) for r in rows], right=1)
    console.print(shown, line, sep="\n")
    if not args.quick:
        report.write_section("smooth-median", markdown(rows, runs, line))
        console.print(f"Wrote the smooth-median section of {report.DOC}")


if __name__ == "__main__":
    main()
