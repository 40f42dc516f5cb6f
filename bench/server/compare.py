"""``python -m bench.server.compare --base SRC``: one load (Q1, 2 workers, 8 clients by default) on two
versions of privdb, in alternating rounds on the same database directory, each round beside the raw SQL
yardstick (the plain aggregate on DuckDB from as many threads, no privdb in it), so that a machine whose
speed drifts (shared, loaded) favours neither version. ``SRC`` is another checkout's ``src`` directory
(e.g. ``git archive BASE src | tar -x -C /tmp/base``); the other version is the one this script imports.
Prints each round and the best and median q/s of each version, absolute and ÷ the raw SQL q/s of its
round, and the server's CPU per answer (its processes' CPU time in the window ÷ the answers)."""

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
from bench.server.load import Cell, run_load, running_server
from bench.server.spec import QUERIES, TABLE, Epsilons


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
    args = parser.parse_args()

    from privdb.data.census import generate

    query = QUERIES[0]
    here = str(Path(__file__).resolve().parents[2] / "src")
    versions = {"base": str(Path(args.base).resolve()), "this": here}
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-compare-", dir="/var/tmp"))
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in versions}
    print(f"load average before: {machine.load()}")
    try:
        meta = {args.setting: data.census_metadata()[args.setting]}
        token = data.setting_databases(work, {TABLE: generate(args.rows)}, meta, epsilon=1e9)[args.setting]
        path, eps = work / args.setting, Epsilons()
        for r in range(args.rounds):
            for name, src in versions.items() if r % 2 == 0 else reversed(versions.items()):
                os.environ["PYTHONPATH"] = os.pathsep.join([src, str(Path(here).parent)])
                with running_server(path, args.workers, work / "server.log") as server:
                    cell = Cell(args.setting, query, args.workers, args.clients, args.seconds)
                    run_load(server, token, cell, eps, args.warmup, lambda _: None)
                raw = raw_qps(path, query.raw(), args.clients, args.seconds)
                results[name].append((cell.qps, raw, cell.server_cpu_ms))
                errors = sum(cell.errors.values())
                print(
                    f"round {r + 1} {name}: {cell.qps:,.0f} q/s (p50 {cell.p50_ms:.1f} ms, {errors} errors, "
                    f"server CPU {cell.server_cpu_ms:.2f} ms / answer), "
                    f"raw SQL {raw:,.0f} q/s, ratio {cell.qps / raw:.3f}; load {machine.load()}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, runs in results.items():
        qps = [q for q, _, _ in runs]
        ratio = [q / raw for q, raw, _ in runs]
        cpu = statistics.median(c for _, _, c in runs)
        print(
            f"{name}: best {max(qps):,.0f} q/s, median {statistics.median(qps):,.0f} q/s; ÷ raw SQL: best "
            f"{max(ratio):.3f}, median {statistics.median(ratio):.3f}; server CPU per answer, median "
            f"{cpu:.2f} ms"
        )


if __name__ == "__main__":
    main()
