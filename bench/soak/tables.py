"""The soak's tables: honest latency idle against under attack, the server's resources, the hostile
attempts and how they were answered, and each analyst's ledger against the answers it received."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from bench.harness import report
from bench.harness.timing import nearest_rank
from bench.soak.honest import QUERIES, Analyst
from bench.soak.tally import KINDS, Results
from bench.soak.watch import Sample

LATENCY_COLUMNS = ["query", "idle answers", "idle p50 ms", "p95", "p99"]
LATENCY_COLUMNS += ["attack answers", "attack p50 ms", "p95", "p99", "p50 ÷ idle", "p95 ÷ idle", "p99 ÷ idle"]
RESOURCE_COLUMNS = ["server", "start", "before the attack", "max (attack, settle)", "end of the attack"]
RESOURCE_COLUMNS += ["after the settle", "flat"]
HOSTILE_COLUMNS = ["attack", "attempts", "per s", "how the server answered", "median s to that"]
LEDGER_COLUMNS = ["analyst", "answers received", "their ε", "ledger ε spent", "log entries", "log ε", "equal"]
QUANTILES = (0.50, 0.95, 0.99)
TARGET_RATIO = 2.0


@dataclass(frozen=True)
class Windows:
    """The run's phases, in seconds since its clock started."""

    baseline: tuple[float, float]
    attack: tuple[float, float]
    settle_end: float


def _ms(values: list[float]) -> list[float]:
    return [1000 * nearest_rank(values, q) for q in QUANTILES]


def latencies(analysts: Sequence[Analyst], window: tuple[float, float], key: str | None) -> list[float]:
    """The latencies (s) of answers started inside ``window`` (of query ``key``, or all)."""
    lo, hi = window
    return [a.seconds for x in analysts for a in x.answers if lo <= a.start < hi and key in (None, a.query)]


def latency_rows(analysts: Sequence[Analyst], w: Windows) -> list[list[str]]:
    out = []
    for key in [q.key for q in QUERIES] + [None]:
        idle, attack = latencies(analysts, w.baseline, key), latencies(analysts, w.attack, key)
        a, b = _ms(idle), _ms(attack)
        cells = [key or "all", f"{len(idle):,}", *(report.secs(v, 1) for v in a), f"{len(attack):,}"]
        cells += [
            *(report.secs(v, 1) for v in b),
            *(report.ratio(y, x, 2) for x, y in zip(a, b, strict=True)),
        ]
        out.append(cells)
    return out


def latency_ratios(analysts: Sequence[Analyst], w: Windows) -> list[float]:
    """All queries' p50, p95 and p99 under attack over idle."""
    a, b = _ms(latencies(analysts, w.baseline, None)), _ms(latencies(analysts, w.attack, None))
    return [y / x if x else math.nan for x, y in zip(a, b, strict=True)]


def _flat(before: float, first: float, second: float, after: float, slack: float) -> bool:
    """Bounded: the attack's second half peaks no higher than its first, and after the settle the server
    holds no more than it did early in the attack (give or take 10 % + ``slack``). What it keeps then is
    what it builds once and shares (the catalog's few shadows, the free queries' slots), not what grows
    with connections."""
    return second <= 1.1 * first + slack and after <= 1.1 * first + slack


def resource_rows(samples: Sequence[Sample], w: Windows) -> tuple[list[list[str]], bool]:
    """One row per figure and whether all three are flat."""
    a0, a1 = w.attack
    middle = (a0 + a1) / 2
    before = [s for s in samples if s.at <= a0] or list(samples[:1])
    during = [s for s in samples if a0 <= s.at <= a1] or list(samples)
    later = [s for s in samples if s.at >= a0] or list(samples)  # the attack's statements may outlast it
    first = [s for s in during if s.at <= middle] or during
    second = [s for s in during if s.at >= middle] or during
    out, ok = [], True
    figures: list[tuple[str, str, float, str]] = [
        ("fds", "file descriptors", 5.0, ",.0f"),
        ("threads", "threads", 5.0, ",.0f"),
        ("rss_mib", "RSS MiB", 32.0, ",.0f"),
    ]
    for attr, label, slack, fmt in figures:

        def value(s: Sample, name: str = attr) -> float:
            return float(getattr(s, name))

        start, last_before, end, after = (
            value(samples[0]),
            value(before[-1]),
            value(during[-1]),
            value(samples[-1]),
        )
        peak = max(map(value, later))
        flat = _flat(last_before, max(map(value, first)), max(map(value, second)), after, slack)
        ok &= flat
        cells = [format(v, fmt) for v in (start, last_before, peak, end, after)]
        out.append([label, *cells, report.OK[flat]])
    return out, ok


def outcomes(counts: dict[str, int]) -> str:
    """``refused 28P01: 1,234; dropped by the server: 5``, the most frequent first."""
    ordered = sorted(counts.items(), key=lambda kv: -kv[1])
    return "; ".join(f"{k}: {v:,}" if v else k for k, v in ordered) or "—"


def hostile_rows(results: Results, skip: frozenset[str] = frozenset()) -> list[list[str]]:
    out = []
    for kind, label in KINDS.items():
        t = results.tallies[kind]
        counts = dict(t.outcomes) if kind not in skip else {"skipped (--skip)": 0}
        unfinished = t.attempts - sum(counts.values())
        if unfinished:
            counts["still waiting when the run ended"] = unfinished
        median = report.secs(statistics.median(t.seconds), 2) if t.seconds else "—"
        rate = t.attempts / results.seconds if results.seconds else math.nan
        out.append([label, f"{t.attempts:,}", f"{rate:,.2f}", outcomes(counts), median])
    return out


@dataclass
class Ledger:
    """What privdb's ledger and log say of one analyst, and what the analyst received."""

    name: str
    answers: int
    received: Fraction  # ε of the answers (and, for the hostile analyst, of its charged stops)
    spent: float  # `privdb budget`: epsilon_spent
    log: list[dict[str, Any]]
    note: str = ""

    @property
    def log_epsilon(self) -> float:
        return math.fsum(float(e.get("epsilon") or 0) for e in self.log)

    @property
    def equal(self) -> bool:
        want = float(self.received)
        return all(math.isclose(x, want, rel_tol=1e-9, abs_tol=1e-12) for x in (self.spent, self.log_epsilon))

    def row(self) -> list[str]:
        entries = f"{len(self.log):,} ({sum(e.get('outcome') == 'answered' for e in self.log):,} answered)"
        received = f"{float(self.received):.9f}"
        return [self.name + self.note, f"{self.answers:,}", received, f"{self.spent:.9f}", entries,
                f"{self.log_epsilon:.9f}", "yes" if self.equal else "**no**"]  # fmt: skip


def fd_line(samples: Sequence[Sample], w: Windows, connections: int, limit: int | None) -> str:
    """What the file descriptors did: their rise in the attack, what the settle left, per connection the
    attackers opened, and when the open-files limit would be reached at that rate."""
    a0, a1 = w.attack
    before = [s for s in samples if s.at <= a0] or list(samples[:1])
    during = [s for s in samples if a0 <= s.at <= a1] or list(samples)
    rise, kept = during[-1].fds - before[-1].fds, samples[-1].fds - before[-1].fds
    rate = rise / ((a1 - a0) / 60) if a1 > a0 else math.nan
    per = f"{kept / connections:.2f}" if connections else "—"
    text = (
        f"File descriptors: {rise:+,} over the attack ({rate:,.0f} a minute); {kept:+,} still held after the "
        f"settle, {per} per connection the attackers opened ({connections:,}, cancel requests included)."
    )
    if limit is not None:
        text += f" The server's open-files limit is {limit:,}"
        if rate > 0:
            text += f", which that rate reaches about {(limit - before[-1].fds) / rate:,.0f} minutes in"
        text += "."
    return text


def log_line(hostile: Ledger, charged: int) -> str:
    """Whether the hostile analyst's log calls answered what it received as errors."""
    answered = sum(e.get("outcome") == "answered" for e in hostile.log)
    if answered == hostile.answers:
        return ""
    return (
        f"The hostile analyst's log marks {answered:,} of its {len(hostile.log):,} entries answered; it "
        f"received {hostile.answers:,} answers, and {charged:,} errors 22000 or 57014 (stopped after the "
        "data was read, charged)."
    )
