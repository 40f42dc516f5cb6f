"""The PostgreSQL endpoint under hostile clients (issue 36): one real ``privdb serve --port P --pg-port Q``
soaked for ``--minutes`` by honest analysts and attackers together, its honest latency, errors, resources
and ledger reported.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, row-level), ``--analysts``
honest analysts and one hostile analyst, each granted with ``privdb grant`` (a token of its own, a budget
that lasts). The server gets ``--pg-auth-timeout`` and ``--pg-max-connections`` when its ``--help`` lists
them (they are detected, not assumed). The run, on one clock:

1. **idle baseline** (``--baseline-minutes``, default a tenth of ``--minutes``): the honest analysts alone,
   each a thread with its own psycopg connection asking Q1–Q3 (DP-SELECT COUNT/AVG, bench.soak.honest) in
   turn with ``--pause`` seconds between its queries;
2. **attack** (``--minutes``): the same analysts, the same queries, and beside them the hostile clients of
   bench.soak.hostile in a process of their own: a flood of failed logins, idle sockets, short sessions,
   1 MiB and 1,000-statement queries, memory-eating catalog queries, and cancel requests;
3. **settle** (``--settle`` seconds): nobody asks anything; the server should give back what it held.

All along, the server process's file descriptors, threads and RSS are read from /proc every ``--sample``
seconds (bench.soak.watch). After the server stops, each analyst's ``privdb budget`` and ``privdb log`` are
checked against the ε of the answers it received.

Run: ``.venv/bin/python -m bench.pgwire_soak [--minutes 30] [--rows N] [--analysts N] [--idle N]
[--skip KINDS] [--quick]``. A run rewrites the ``pgwire_soak`` section of docs/benchmarks.md and
docs/pgwire_soak.png; ``--quick`` only prints. Mind the machine: against a server whose catalog queries are
not held to their memory cap, each memory-eating query can take the server's RSS up by several GiB (up to
15 GiB here) for a minute; ``--skip mem_repeat,mem_len,mem_unnest`` leaves them out.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.harness import data, machine, report
from bench.pgwire import wait_for_port
from bench.server.load import free_port, running_server
from bench.soak import hostile, plot, tables
from bench.soak.honest import QUERIES, TABLE, Analyst
from bench.soak.tally import KINDS, Results
from bench.soak.watch import Watch, open_files_limit

HOSTILE = "mallory"
PLOT = report.DOC.parent / "pgwire_soak.png"
SERVER_OPTIONS = {"--pg-auth-timeout": "auth_timeout", "--pg-max-connections": "max_connections"}


def privdb_cli(*args: str) -> str:
    """Run ``privdb ARGS`` with this interpreter (the tree on PYTHONPATH); its standard output."""
    env = dict(os.environ, COLUMNS="300", NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "privdb", *args], capture_output=True, text=True, env=env,
                          check=False)  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"privdb {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def server_options(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The options to pass (those of SERVER_OPTIONS that ``privdb serve --help`` lists) and the ones it
    lacks."""
    said = privdb_cli("serve", "--help")
    extra, missing = [], []
    for option, attr in SERVER_OPTIONS.items():
        if re.search(rf"{re.escape(option)}\b", said):
            extra += [option, format(getattr(args, attr), "g")]
        else:
            missing.append(option)
    return extra, missing


def prepare(work: Path, rows: int, analysts: int) -> tuple[Path, dict[str, str]]:
    """The database: the census table, and a token per analyst (``privdb grant``; the hostile one last)."""
    from privdb.data.census import generate
    from privdb.database import Database

    db_dir = work / "soak"
    with Database(db_dir) as db:
        db.backend.load_frame(TABLE, generate(rows))
        db.set_metadata(TABLE, data.census_metadata()["row"])
    names = [f"analyst{k}" for k in range(analysts)] + [HOSTILE]
    tokens = {}
    for name in names:
        out = privdb_cli("grant", "--db", str(db_dir), name, "--epsilon", "1e6", "--delta", "1e-3")
        tokens[name] = out.strip().splitlines()[-1].strip()
    return db_dir, tokens


def ledgers(db_dir: Path, names: list[str]) -> dict[str, tuple[float, list[dict[str, Any]]]]:
    """Each analyst's ε spent (``privdb budget``) and log entries (one ``privdb log`` of everyone's)."""
    entries = json.loads(privdb_cli("log", "--db", str(db_dir), "--format", "json"))
    out = {}
    for name in names:
        budget = json.loads(privdb_cli("budget", "--db", str(db_dir), "--analyst", name, "--format", "json"))
        out[name] = float(budget["epsilon_spent"]), [e for e in entries if e.get("analyst") == name]
    return out


def server_log_faults(path: Path) -> int:
    """Tracebacks and internal errors in the server's log."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return text.count("Traceback (most recent call last)") + text.count("internal error")


class Run:
    """One soak: the phases on one clock, the honest analysts' threads, the hostile process, the watch."""

    def __init__(self, args: argparse.Namespace, server_pid: int, pg_port: int, tokens: dict[str, str]):
        self.args = args
        self.clock = time.perf_counter()
        honest = [name for name in tokens if name != HOSTILE]
        urls = {n: f"postgresql://{n}:{tokens[n]}@127.0.0.1:{pg_port}/privdb" for n in honest}
        self.analysts = [Analyst(n, urls[n], self.clock, args.pause) for n in honest]
        self.watch = Watch(server_pid, self.clock, args.sample)
        self.plan = hostile.Plan(pg_port, tuple(honest), HOSTILE, tokens[HOSTILE], args.idle, args.flood,
                                 args.hold, skip=args.skip)  # fmt: skip
        self.windows = tables.Windows((0, 0), (0, 0), 0)
        self.open_files = open_files_limit(server_pid)
        self.results: Results | None = None

    def go(self, console: Any) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        ctx = multiprocessing.get_context("spawn")
        ready, start, stop, out = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue()
        live = ctx.Array("i", len(KINDS))
        attacker = ctx.Process(
            target=hostile.attack, args=(self.plan, ready, start, stop, live, out), daemon=True
        )
        attacker.start()
        if not ready.wait(120):
            raise RuntimeError("the hostile process did not start")
        for analyst in self.analysts:
            analyst.connect()
        halt = threading.Event()
        threads = [threading.Thread(target=a.loop, args=(halt,), daemon=True) for a in self.analysts]
        baseline, attack = 60 * self.args.baseline_minutes, 60 * self.args.minutes
        self.clock = time.perf_counter()
        for analyst in self.analysts:
            analyst.clock = self.clock
        self.watch.clock = self.clock
        self.watch.start()
        for thread in threads:
            thread.start()
        total = baseline + attack + self.args.settle
        columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("idle baseline", total=total)

            def until(end: float, phase: str) -> None:
                while (now := time.perf_counter() - self.clock) < end:
                    answers = sum(len(a.answers) for a in self.analysts)
                    errors = sum(len(a.failures) for a in self.analysts)
                    latest = self.watch.samples[-1] if self.watch.samples else None
                    server = f"; server {latest.fds} fds, {latest.threads} threads" if latest else ""
                    attempts = sum(live[:])
                    text = (
                        f"{phase}: honest {answers:,} answers, {errors} errors; hostile {attempts:,}{server}"
                    )
                    progress.update(task, completed=now, description=text)
                    time.sleep(min(0.5, max(0.01, end - now)))

            until(baseline, "idle baseline")
            start.set()
            a0 = time.perf_counter() - self.clock
            until(baseline + attack, "attack")
            stop.set()
            a1 = time.perf_counter() - self.clock
            halt.set()
            for thread in threads:
                thread.join()
            until(a1 + self.args.settle, "settle")
            progress.update(task, completed=total)
        self.watch.stop()
        self.windows = tables.Windows((0.0, a0), (a0, a1), time.perf_counter() - self.clock)
        self.results = out.get(timeout=self.plan.grace + 120)
        attacker.join(30)
        if attacker.is_alive():
            attacker.kill()
        for analyst in self.analysts:
            analyst.close()


def markdown(run: Run, setup: dict[str, str], rows: dict[str, list[list[str]]], lines: list[str]) -> str:
    args = run.args
    text = (
        f"One `privdb serve --port P --pg-port Q{setup['options']}` (1 worker) on {args.rows:,} generated "
        f"census rows (row-level){setup['missing']}. **This run: {args.minutes:g} minutes of attack** (the "
        f"default is 30) after an idle baseline of {60 * args.baseline_minutes:g} s and before a "
        f"{args.settle:g} s settle. {len(run.analysts)} honest analysts, each with its own token (`privdb "
        f"grant`) and psycopg {machine.version('psycopg')} connection, ask in turn "
        + ", ".join(f"{q.key} `{q.label}`" for q in QUERIES)
        + f" as DP-SELECT at ε ≈ 0.01 (every ε distinct, so nothing comes from the store), {args.pause:g} s "
        "apart; their latency is the same queries' idle and under attack. The attackers run in a process of "
        f"their own on the same 2 cores as the server: {args.flood} thread(s) flooding failed logins (a real "
        f"analyst's name, a wrong password), {args.idle} sockets that never send a start-up message (each "
        f"kept until the server drops it or {args.hold:g} s pass), one client opening and closing sessions, "
        "one sending 1 MiB and 1,000/1,001-statement queries in turn, one asking the memory-eating catalog "
        "queries in turn, and one cancelling its own running statements (`conn.cancel()` after a random "
        "0.1–1 s for a recursive-CTE catalog query, 0–50 ms for a DP-SELECT), each client one statement at "
        "a time. The server's file descriptors, threads and RSS were read from /proc every "
        f"{args.sample:g} s. For comparison, PostgreSQL refuses a wrong password with 28P01 (after "
        "`auth_delay`, if configured), a session beyond `max_connections` with 53300, a cancelled statement "
        "with 57014, and drops a connection not authenticated within `authentication_timeout` (60 s by "
        "default); a backend gives back its memory and descriptors when its session ends."
    )
    return report.section(
        "pgwire_soak",
        f"PostgreSQL endpoint under hostile clients: a {args.minutes:g}-minute soak",
        [
            report.written_by("bench.pgwire_soak", "bench/pgwire_soak.py"),
            "",
            f"Machine: {setup['machine']}",
            "",
            text,
            "",
            *report.table(tables.LATENCY_COLUMNS, rows["latency"]),
            "",
            *report.table(tables.RESOURCE_COLUMNS, rows["resources"]),
            "",
            *report.table(tables.HOSTILE_COLUMNS, rows["hostile"]),
            "",
            *report.table(tables.LEDGER_COLUMNS, rows["ledger"]),
            "",
            *lines,
            "",
            f"![server file descriptors, threads, RSS and honest latency over the run]({PLOT.name})",
        ],
    )


def summary(
    run: Run, ledgers: list[tables.Ledger], faults: int
) -> tuple[dict[str, list[list[str]]], list[str]]:
    """The tables' rows and the targets with their verdicts."""
    assert run.results is not None
    w = run.windows
    resources, flat = tables.resource_rows(run.watch.samples, w)
    ratios = tables.latency_ratios(run.analysts, w)
    failures = [f for a in run.analysts for f in a.failures]
    by_what: dict[str, int] = {}
    for f in failures:
        by_what[f.what] = by_what.get(f.what, 0) + 1
    ok_latency = all(r <= tables.TARGET_RATIO for r in ratios)
    targets = [
        "Targets:",
        "",
        "- honest p50 / p95 / p99 under attack within 2× of idle: "
        + " / ".join(report.ratio(r, 1, 2) for r in ratios)
        + f" ({report.OK[ok_latency]})",
        f"- honest errors 0: {len(failures):,} ({report.OK[not failures]})"
        + (f": {tables.outcomes(by_what)}" if failures else ""),
        "- the server's file descriptors, threads and RSS flat (the attack's second half peaks no higher "
        "than its first, and after the settle each is no higher than in the attack's first half, within "
        "10 % (+5, or +32 MiB)): " + report.OK[flat],
        "- every analyst's ledger spend and log equal the ε of the answers it received: "
        + report.OK[all(x.equal for x in ledgers)],
        "",
        tables.fd_line(run.watch.samples, w, run.results.connections, run.open_files),
        "",
        *[x for line in [tables.log_line(ledgers[-1], run.results.charged)] if line for x in (line, "")],
        f"Tracebacks or internal errors in the server's log: {faults}.",
    ]
    rows = {
        "latency": tables.latency_rows(run.analysts, w),
        "resources": resources,
        "hostile": tables.hostile_rows(run.results, run.args.skip),
        "ledger": [x.row() for x in ledgers],
    }
    return rows, targets


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--minutes", type=float, default=30.0, help="minutes of attack (default 30)")
    add("--baseline-minutes", type=float, default=None, help="idle baseline (default: a tenth of --minutes)")
    add("--settle", type=float, default=60.0, help="seconds of quiet after the attack (default 60)")
    add("--rows", type=int, default=100_000, help="rows in the table (default 100,000)")
    add("--analysts", type=int, default=4, help="honest analysts (default 4)")
    add("--pause", type=float, default=0.1, help="seconds between an analyst's queries (default 0.1)")
    add("--idle", type=int, default=40, help="idle sockets held at once (default 40)")
    add("--flood", type=int, default=2, help="threads flooding failed logins (default 2)")
    add("--hold", type=float, default=None, help="seconds an undropped idle socket is kept (default: "
        "3 × --auth-timeout where the server has it, else 60)")  # fmt: skip
    add("--auth-timeout", type=float, default=5.0, help="--pg-auth-timeout, if the server has it (default 5)")
    add("--max-connections", type=int, default=100, help="--pg-max-connections, if it has it (default 100)")
    add("--sample", type=float, default=2.0, help="seconds between samples of the server (default 2)")
    add("--skip", default="", help="attacks not to make, comma-separated: " + ", ".join(KINDS))
    add("--quick", action="store_true", help="prints only: docs/ is not written")
    args = parser.parse_args()
    args.skip = frozenset(filter(None, args.skip.split(",")))
    if args.skip - set(KINDS):
        parser.error(f"--skip: unknown {', '.join(sorted(args.skip - set(KINDS)))}")
    if args.baseline_minutes is None:
        args.baseline_minutes = args.minutes / 10
    return args


def main() -> None:
    args = parse()
    console = report.console()
    before = machine.load()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-soak-", dir="/var/tmp"))
    try:
        console.print(f"Generating {args.rows:,} rows, granting {args.analysts + 1} analysts …")
        db_dir, tokens = prepare(work, args.rows, args.analysts)
        extra, missing = server_options(args)
        if args.hold is None:
            args.hold = 3 * args.auth_timeout if "--pg-auth-timeout" not in missing else 60.0
        pg_port = free_port()
        log = work / "server.log"
        with running_server(db_dir, 1, log, ["--pg-port", str(pg_port), *extra]) as server:
            wait_for_port(pg_port)
            run = Run(args, server.pid, pg_port, tokens)
            run.go(console)
        read = ledgers(db_dir, list(tokens))
        found = [tables.Ledger(a.name, len(a.answers), a.epsilon, *read[a.name]) for a in run.analysts]
        assert run.results is not None
        r = run.results
        note = f" (hostile; + {r.charged} charged stops)"
        received = r.epsilon_answered + r.epsilon_charged
        found.append(tables.Ledger(HOSTILE, r.answered, received, *read[HOSTILE], note))
        faults = server_log_faults(log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows, targets = summary(run, found, faults)
    line = machine.describe(
        machine.versions(("psycopg", "pygwire", "duckdb")),
        f"load (1/5/15 min) {before} before, {machine.load()} after",
    )
    options = "".join(f" {x}" for x in extra)
    lacks = f"; this tree's `privdb serve` has no {', '.join(f'`{m}`' for m in missing)}" if missing else ""
    console.print(
        report.rich_table("Honest latency, idle and under attack", tables.LATENCY_COLUMNS, rows["latency"])
    )
    console.print(report.rich_table("The server process", tables.RESOURCE_COLUMNS, rows["resources"]))
    console.print(
        report.rich_table(
            "Hostile attempts", tables.HOSTILE_COLUMNS, rows["hostile"], right=lambda i: i in (1, 2, 4)
        )
    )
    console.print(report.rich_table("Ledgers", tables.LEDGER_COLUMNS, rows["ledger"]))
    for target in targets:
        console.print(report.plain(target))
    console.print(line)
    if not args.quick:
        answers = [a for x in run.analysts for a in x.answers]
        title = f"privdb pgwire soak: {args.minutes:g} min of attack (shaded), {len(run.analysts)} analysts"
        plot.draw(PLOT, run.watch.samples, answers, run.windows.attack, title)
        setup = {"machine": line, "options": options, "missing": lacks}
        report.write_section("pgwire_soak", markdown(run, setup, rows, targets))
        console.print(f"Wrote the pgwire_soak section of {report.DOC} and {PLOT}")


if __name__ == "__main__":
    main()
