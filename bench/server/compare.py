"""``python -m bench.server.compare --base SRC``: one load (Q1, 2 workers, 8 clients by default) on two
versions of privdb, in alternating rounds on the same database directory, each round beside the raw SQL
yardstick (the plain aggregate on DuckDB from as many threads, no privdb in it), so that a machine whose
speed drifts (shared, loaded) favours neither version. ``SRC`` is another checkout's ``src`` directory
(e.g. ``git archive BASE src | tar -x -C /tmp/base``); the other version is the one this script imports.
Prints each round and the best and median q/s of each version, absolute and ÷ the raw SQL q/s of its
round, the server's CPU per answer (its processes' CPU time in the window ÷ the answers) and the load
generator's CPU per request. The load generator is wrk (``--client wrk``, the default: bench/server/light.py,
``make bench-tools`` installs it), light enough to leave the 2 cores to the server; ``--client python`` is
load.py's httpx threads (about 0.7 ms of CPU per request on the same cores)."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import data, machine
from bench.harness.query import Query
from bench.server.light import LightCell, Wrk
from bench.server.load import Cell, Server, run_load, running_server
from bench.server.spec import QUERIES, TABLE, Epsilons


def one_load(
    server: Server, token: str, query: Query, args: argparse.Namespace, eps: Epsilons, wrk: Wrk | None
) -> tuple[float, float, int, float, float]:
    """One timed load: q/s, p50 ms, errors, server CPU ms per answer, load generator CPU ms per request."""
    if wrk is not None:
        light = wrk.load(server, LightCell(query, args.clients, args.seconds), args.warmup)
        errors = sum(light.errors.values())
        return light.qps, light.p50_ms, errors, light.server_cpu_ms, light.client_cpu_ms
    cell = Cell(args.setting, query, args.workers, args.clients, args.seconds)
    run_load(server, token, cell, eps, args.warmup, lambda _: None)
    client = 1000 * cell.cpu.bench / len(cell.latencies) if cell.cpu and cell.latencies else float("nan")
    return cell.qps, cell.p50_ms, sum(cell.errors.values()), cell.server_cpu_ms, client


def raw_qps(db_dir: Path, sql: str, clients: int, seconds: float) -> float:
    """The plain aggregate's answers per second from ``clients`` threads (a DuckDB cursor each) over
    ``seconds``: the same load with no privdb, no HTTP, no ledger."""
    import duckdb

    with duckdb.connect(str(db_dir / "data.duckdb"), read_only=True) as conn:
        end = time.perf_counter() + seconds
        counts = [0] * clients

        def client(i: int) -> None:
            cursor = conn.cursor()
            while time.perf_counter() < end:
                cursor.execute(sql).fetchall()
                counts[i] += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description="one load on two versions of privdb, interleaved")
    parser.add_argument("--base", required=True, help="the other version's src directory")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--setting", default="user", choices=["user", "row"])
    parser.add_argument("--client", default="wrk", choices=["wrk", "python"], help="the load generator")
    args = parser.parse_args()

    from privdb.data.census import generate

    query = QUERIES[0]
    here = str(Path(__file__).resolve().parents[2] / "src")
    versions = {"base": str(Path(args.base).resolve()), "this": here}
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-compare-", dir="/var/tmp"))
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in versions}
    print(f"load average before: {machine.load()}")
    try:
        meta = {args.setting: data.census_metadata()[args.setting]}
        token = data.setting_databases(work, {TABLE: generate(args.rows)}, meta, epsilon=1e9)[args.setting]
        path, eps = work / args.setting, Epsilons()
        wrk = Wrk(token) if args.client == "wrk" else None  # a run uses one of wrk and eps
        for r in range(args.rounds):
            for name, src in versions.items() if r % 2 == 0 else reversed(versions.items()):
                os.environ["PYTHONPATH"] = os.pathsep.join([src, str(Path(here).parent)])
                with running_server(path, args.workers, work / "server.log") as server:
                    qps, p50, errors, cpu, client = one_load(server, token, query, args, eps, wrk)
                raw = raw_qps(path, query.raw(), args.clients, args.seconds)
                results[name].append((qps, raw, cpu, client))
                print(
                    f"round {r + 1} {name}: {qps:,.0f} q/s (p50 {p50:.1f} ms, {errors} errors, server CPU "
                    f"{cpu:.2f} ms / answer, {args.client} {client:.3f} ms / request), raw SQL {raw:,.0f} "
                    f"q/s, ratio {qps / raw:.3f}; load {machine.load()}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, runs in results.items():
        rates = [q for q, _, _, _ in runs]
        ratio = [q / raw for q, raw, _, _ in runs]
        cpu = statistics.median(c for _, _, c, _ in runs)
        client = statistics.median(c for _, _, _, c in runs)
        print(
            f"{name}: best {max(rates):,.0f} q/s, median {statistics.median(rates):,.0f} q/s; ÷ raw SQL: "
            f"best {max(ratio):.3f}, median {statistics.median(ratio):.3f}; server CPU per answer, median "
            f"{cpu:.2f} ms; {args.client} CPU per request, median {client:.3f} ms"
        )
    print(f"load average after: {machine.load()}")


if __name__ == "__main__":
    main()
