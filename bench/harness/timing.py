"""Timing, written once: best wall time of repeated runs after a warm-up, several implementations
interleaved run by run (so the machine's other work falls on all of them alike), privdb's time by stage,
and latency quantiles. Standard library only: the peers' workers time with it in their own venvs."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

from bench.harness import memory

T = TypeVar("T")
Runs = dict[str, Callable[[int], object]]


def best_of(runs: Runs, repeats: int) -> dict[str, float]:
    """Best wall time per named run: one warm-up (``i = 0``), then ``repeats`` rounds, interleaved.

    Each run gets the repetition index ``i``, so that a run can vary its query (privdb's ε) per repetition.
    """
    best, _ = best_of_with_peak(runs, repeats, peak=False)
    return best


def best_of_with_peak(
    runs: Runs, repeats: int, *, peak: bool = True
) -> tuple[dict[str, float], dict[str, float]]:
    """Best wall time per named run as ``best_of``, and (with ``peak``) its peak resident set in MiB, the
    largest over its runs (the peak is reset before each run where the kernel allows it)."""
    best = dict.fromkeys(runs, math.inf)
    peaks = dict.fromkeys(runs, 0.0)
    for i in range(repeats + 1):
        for name, run in runs.items():
            if peak:
                memory.reset_peak()
            t0 = time.perf_counter()
            run(i)
            took = time.perf_counter() - t0
            if peak:
                peaks[name] = max(peaks[name], memory.peak_mib())
            if i:
                best[name] = min(best[name], took)
    return best, peaks


def warm_best(run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """Best wall time of ``repeats`` runs after one warm-up, and the last result."""
    out = run()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t0)
    return best, out


def stages(total: float, parts: Runs, repeats: int) -> dict[str, float]:
    """privdb by stage: each part's best time (``best_of``), and "rest" = ``total`` − the parts, at least 0.
    Stages are timed apart from the total, so run-to-run variation can make them add up to more than it."""
    out = best_of(parts, repeats)
    out["rest"] = max(0.0, total - sum(out.values()))
    return out


def nearest_rank(values: list[float], q: float) -> float:
    """The ``q`` quantile by nearest rank (``nan`` if there are no values)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class Latencies:
    """A result's ``latencies`` (seconds) as the p50 and p99 the reports show, in milliseconds."""

    latencies: list[float]

    @property
    def p50_ms(self) -> float:
        return 1000 * nearest_rank(self.latencies, 0.50)

    @property
    def p99_ms(self) -> float:
        return 1000 * nearest_rank(self.latencies, 0.99)
