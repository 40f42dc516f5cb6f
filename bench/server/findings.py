"""What costs a query's time and what would fix it: the figures of this run, the rest from profiling the
server with py-spy under 8 clients and the embedded API with cProfile."""

from __future__ import annotations

from bench.server.load import Cell
from bench.server.spec import TARGET_CLIENTS, TARGET_QPS
from bench.server.stages import Stages


def findings(cells: list[Cell], stages: list[Stages], tries: dict[str, float], fsync: str) -> list[str]:
    """What costs the time and what would fix it: the figures from this run, the rest from profiling the
    server with py-spy under 8 clients and the embedded API with cProfile (1,000,000 rows, this machine)."""
    at8 = [c for c in cells if c.clients == TARGET_CLIENTS and c.query.key == "Q1"]
    cpu = ", ".join(
        f"{c.setting} {c.workers} worker{'s' if c.workers > 1 else ''}: {c.server_cpu_ms:.1f} ms → "
        f"{c.server_cpu_ms * TARGET_QPS / 1000:.1f} cores"
        for c in at8
    )
    engine = ", ".join(
        f"{s.query.key} {s.setting} {s.ms['engine SQL']:.1f} ms vs {s.raw_ms:.1f} ms" for s in stages
    )
    ratios = [s.ms["engine SQL"] / s.raw_ms for s in stages]

    def span(part: str) -> str:
        values = [s.ms[part] for s in stages]
        return f"{min(values):.1f}–{max(values):.1f} ms"

    tried = "; ".join(f"`{name}` {ms:.1f} ms" for name, ms in tries.items())
    return [
        "Where the time goes (the figures above, py-spy on the server under 8 clients, cProfile on the "
        "embedded API):",
        "",
        "- **CPU per answer, not I/O, is the limit.** The server's CPU per answered Q1 (its threads and "
        f"processes, from /proc) times {TARGET_QPS:.0f} q/s, at {TARGET_CLIENTS} clients: {cpu}; the "
        "machine has 2 cores, shared with the clients and with other work (the last column). An fsync "
        f"costs {fsync} here; a query has one: the reservation is written unsynced (a crash loses nothing "
        "that was answered), and the spend, the stored answer and the budget read are one synced "
        f"transaction ({span('ledger commit + stored answer + budget')}).",
        "- **Concurrency.** Each request thread runs its engine query on its own DuckDB cursor (DuckDB "
        "releases the GIL), so one request's Python overlaps another's engine query; the rest of a request "
        "is Python under the GIL, so one worker uses at most about one core for it. From 8 clients on, q/s "
        "stays flat and p50 grows with the clients (Little's law: p50 ≈ clients ÷ q/s). Workers take the "
        "ledger's write lock through a file lock beside it (a waiter wakes when it is free; SQLite's own "
        "busy handler slept 1, 2, 5 ms between tries and left the cores idle: Q1 at 2 workers went from "
        "about 215–245 to 275–290 q/s on this machine). `SET threads = 1` per worker, tried in alternating "
        "runs, did not raise q/s: DuckDB's second thread costs CPU but shortens each query.",
        f"- **The engine SQL costs {min(ratios):.1f}–{max(ratios):.1f}× the plain aggregate** (stage "
        f"table, engine SQL vs raw: {engine}). Its text is the same for every ε, so each thread's DuckDB "
        "cursor prepares it once (`PREPARE`/`EXECUTE`: parse, bind and optimise skipped, ~0.7 ms of a "
        "count; dropped when privdb writes the data). `TRY()` is emitted only around expressions that can "
        f"fail (`validate.cannot_fail`); timed on the same connection (median): {tried}. The income clamp "
        "(`CASE WHEN income < 0 …`) adds to Q2; user-level adds a second, pruned scan (the `parts` branch "
        "on `__privdb_rows_per_pid > 1`, ~0.5 ms) although no unit here has more than one row: leaving it "
        "out when no unit has several rows would make a query's time tell whether one such unit exists, "
        "so it stays.",
        f"- **Python per query**: parse, plan and SQL generation {span('parse, plan, bind')} for a query of "
        "a kept shape (`privdb.sql.plan.prepared`: the same text but for ε reuses its parse, relation and "
        "resolution; only the noise sizing and the engine SQL are redone; the first query of a shape costs "
        f"~1–3 ms); noise {span('noise')} on the engine's values as Python lists (no DataFrame); the "
        f"ledger's reservation {span('ledger reserve')}; one catalog read per query (the table's metadata, "
        "attachments and the analyst, read once in `Catalog.snapshot`; 16 ledger and catalog statements "
        "per COUNT, 29 and then 19 before: write transactions run on connections already synced as each "
        "needs, and a spend settles by one guarded `UPDATE`). The time limit arms the process's one "
        "watchdog thread "
        "(`privdb.backends.watchdog`), no thread start per query.",
        "- **HTTP, ~1–2 ms**: uvicorn + Starlette (`GET /healthz` floor above); `/v1/query` is a plain "
        "Starlette route (`privdb.server.queryroute`: FastAPI's errors and OpenAPI entry kept) whose token "
        "check, body checks, query and JSON bytes all run in one hand-off to the thread pool (the event "
        "loop only moves bytes); uvicorn's access log is written by a thread of its own "
        "(`privdb.server.accesslog`).",
        "- **Group commit** (`privdb.accounting.groupcommit`): concurrent reservations of a worker share one "
        "transaction, and concurrent commits one synced transaction (each in its savepoint; each answer "
        "leaves only after the transaction holding its spend is synced), so under load a worker waits for "
        "one fsync per batch, not one per query.",
        "",
        "What would still help, largest gain first:",
        "",
        "1. User-level bounding whose `parts` branch costs nothing when it is empty, without making the "
        "time depend on whether it is (~0.5 ms of a count).",
        "2. The token check (an indexed SQLite read and a SHA-256, on the event loop, ~0.1 ms) and the "
        "noise's ChaCha20 key set-up per call.",
        "",
        "On 2 cores the load generator's own CPU (the clients column) counts too: the Python clients cost "
        "~0.63 ms of CPU per request (wrk, which `bench.server.compare` uses, 0.06–0.09 ms).",
        "",
        'The machine is shared (a 2-vCPU virtual machine): other work ran during this benchmark ("other" '
        "cores above), and its speed changes through the day by up to ~2× (the raw SQL column, a plain "
        "aggregate with no privdb in it, is the yardstick), so q/s and especially p99 move between runs; "
        "compare rows of one run, not runs.",
    ]
