"""bench.server's section of docs/benchmarks.md: loads, the embedded API beside the server, the targets and
one query by stage."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from bench.harness import machine, report
from bench.harness.timing import nearest_rank as quantile
from bench.server.findings import findings
from bench.server.load import Cell, Embedded
from bench.server.spec import ROUNDS, SETTINGS, TARGET_ADDED_MS, TARGET_CLIENTS, TARGET_QPS
from bench.server.stages import Stages


def machine_line() -> str:
    return machine.describe(machine.versions(("privdb", "fastapi", "uvicorn", "httpx", "duckdb", "pandas")))


def _ms(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:,.1f}"


def floor_text(floor: list[float]) -> str:
    return f"p50 {1000 * quantile(floor, 0.5):.2f} ms, p99 {1000 * quantile(floor, 0.99):.2f} ms"


def _errors(errors: Counter[str]) -> str:
    return ", ".join(f"{n} {code}" for code, n in errors.most_common()) or "0"


COLUMNS = ["query (ε ≈ 1)", "privacy", "workers", "clients", "answered q/s", "p50 ms", "p99 ms"]
COLUMNS += ["answers timed", "errors", "server CPU ms / answer", "cores busy: server / clients / other"]
EMBEDDED_COLUMNS = ["query", "privacy", "embedded p50 ms", "embedded p99 ms", "server p50 ms (1 client)"]
EMBEDDED_COLUMNS += ["server adds ms"]


def cell_rows(cells: list[Cell]) -> list[list[str]]:
    return [
        [
            f"{c.query.key} {c.query.label}",
            SETTINGS[c.setting],
            str(c.workers),
            str(c.clients),
            f"{c.qps:,.0f}",
            _ms(c.p50_ms),
            _ms(c.p99_ms),
            f"{len(c.latencies):,}",
            _errors(c.errors),
            _ms(c.server_cpu_ms),
            " / ".join(f"{c.cores(part):.2f}" for part in ("server", "bench", "others")),
        ]
        for c in cells
    ]


def embedded_rows(embedded: list[Embedded]) -> list[list[str]]:
    return [
        [
            e.query.key,
            SETTINGS[e.setting],
            _ms(e.p50_ms),
            _ms(e.p99_ms),
            _ms(e.server_p50_ms),
            f"{e.server_p50_ms - e.p50_ms:+,.1f}",
        ]
        for e in embedded
    ]


def stage_columns(stages: list[Stages]) -> list[str]:
    return ["query", "privacy", *stages[0].ms, "sum", "raw SQL (floor)"]


def stage_rows(stages: list[Stages]) -> list[list[str]]:
    out = []
    for s in stages:
        values = [f"{v:.2f}" for v in s.ms.values()]
        out.append(
            [s.query.key, SETTINGS[s.setting], *values, f"{sum(s.ms.values()):.2f}", f"{s.raw_ms:.2f}"]
        )
    return out


def targets(cells: list[Cell], embedded: list[Embedded]) -> list[str]:
    ok = report.OK
    lines = []
    for workers in sorted({c.workers for c in cells}):
        at = [c for c in cells if c.clients == TARGET_CLIENTS and c.workers == workers]
        if not at:
            continue
        text = ", ".join(f"{c.query.key} {c.setting} {c.qps:,.0f}" for c in at)
        count = [c.qps for c in at if c.query.key == "Q1"]
        verdict = ok[bool(count) and min(count) >= TARGET_QPS]
        lines.append(
            f"- ≥ {TARGET_QPS:.0f} answered queries/s at {TARGET_CLIENTS} clients, {workers} worker"
            f"{'' if workers == 1 else 's'} (judged on Q1, the issue's `COUNT(*) … WHERE`): {text} "
            f"({verdict}{'' if all(c.qps >= TARGET_QPS for c in at) else '; the GROUP BY is below it'})"
        )
    alone = ", ".join(f"{e.query.key} {e.setting} {1000 / e.p50_ms:,.0f}" for e in embedded)
    lines.append(
        f"- beside it, the embedded API in one thread, one query after another (1000 ÷ its p50 ms): {alone} "
        "queries/s"
    )
    added = [(e, e.server_p50_ms - e.p50_ms) for e in embedded]
    text = ", ".join(f"{e.query.key} {e.setting} {a:+.1f} ms" for e, a in added)
    lines.append(
        f"- the server adds < {TARGET_ADDED_MS:.0f} ms to p50 (1 client − embedded): {text} "
        f"({ok[all(a < TARGET_ADDED_MS for _, a in added)]})"
    )
    return lines


def markdown(
    cells: list[Cell],
    embedded: list[Embedded],
    stages: list[Stages],
    floor: list[float],
    setup: dict[str, Any],
) -> str:
    lines = [
        report.written_by("bench.server", "bench/server/"),
        "",
        f"Machine: {setup['machine']}; load average before the run {setup['load']}",
        "",
        f"One generated census table (`privdb.data.census.generate`) of {setup['rows']:,} rows, in one "
        "database directory per privacy setting; one analyst with a budget that never runs out. The real "
        "server (`python -m privdb serve --db DIR --port P [--workers 2]`, a subprocess) on loopback; each "
        "client is a thread with its own `httpx.Client` (one kept-alive connection), sending its next "
        "`POST /v1/query` as soon as the last is answered. After a warm-up of "
        f"{setup['warmup']:g} s, every request that starts and ends in the next {setup['seconds']:g} s is "
        "counted: answered q/s = those answers ÷ the window; p50 / p99 = their client-side wall time. Every "
        "request is a new query text (ε = 1 + i·1e-9), checked to be answered fresh (not from the store of "
        "answers) and charged its ε. The ledger is privdb's own (SQLite WAL, `synchronous=FULL`: every spend "
        f"is fsynced before its answer leaves) in `/var/tmp`, on {setup['fs']} (4 KiB write + fsync there: "
        f"{setup['fsync']}). Server CPU per answer: the CPU time of the server's processes (all threads) "
        "in the window ÷ the answers; cores busy: CPU seconds ÷ window of the server, of this script's "
        "client threads, and of everything else on the machine (/proc/stat).",
        "",
        *report.table(COLUMNS, cell_rows(cells)),
    ]
    lines += [
        "",
        "The embedded API (`privdb.connect(DIR, analyst=…).sql(…)`, one thread) against the server at one "
        "client (one connection, one query after another), same directory and kind of query texts, in "
        f"{ROUNDS} alternating rounds of {setup['embedded']} queries each (the server started afresh for "
        "each of its rounds: DuckDB has one writer per file), pooled; alternating keeps the machine's "
        "other work from favouring one side:",
        "",
        *report.table(EMBEDDED_COLUMNS, embedded_rows(embedded)),
    ]
    lines += ["", "Targets (issue 6):", "", *targets(cells, embedded), ""]
    columns = stage_columns(stages)
    lines += [
        "Where one query's time goes: each part of `engine.run` timed alone in one thread on the same "
        "directory, median ms (the engine SQL with the server's 30 s time limit, armed on the one watchdog "
        "thread; parse, plan, bind of a query whose shape is kept; the token check is what the server adds "
        "before it). HTTP floor, "
        f"`GET /healthz` over one kept-alive `httpx` connection (no token, no query): {floor_text(floor)}.",
        "",
        *report.table(columns, stage_rows(stages)),
    ]
    lines += ["", *findings(cells, stages, setup["tries"], setup["fsync"])]
    return report.section("server", "Server: answered queries per second and latency over HTTP", lines)
