"""How long a ``privdb`` command takes to start and answer (issue 40), against ``python -c "import duckdb"``.

Each command runs as a fresh process, as a user types it, on a tiny real database (200 rows, one analyst):
``--version``, ``--help``, ``budget``, ``query`` (a DP COUNT, its ε varied per run so that no stored answer
is reused), ``explain``, and ``serve`` until its first HTTP answer (``GET /healthz``; then it is stopped
with Ctrl-C). Rounds are interleaved with the raw baseline, so the machine's other work falls on all of
them alike; one warm-up round first, which also writes the bytecode caches (the runs drop
``PYTHONDONTWRITEBYTECODE``, as an installed package has its ``.pyc`` files). The figure is the best of
``--repeats`` rounds. ``--base SRC`` also times another checkout's ``src`` (e.g. the commit before a
change) in the same rounds. Each privdb command is timed warm (the default: handed to the user's warm
process, privdb.cli.warm, which the bench starts first, as a session's first command would) and cold
(``PRIVDB_WARM=0``). The modules column counts what ``python -X importtime`` lists for one cold run.

    .venv/bin/python -m bench.startup [--repeats 5] [--base /tmp/old/src] [--quick]

A full run rewrites the ``startup`` section of docs/benchmarks.md; ``--quick`` (2 rounds) only prints.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.harness import ROOT, machine, report
from bench.harness.ports import free_port
from bench.harness.timing import best_of

TARGET = 3.0  # the issue's: every command within 3× `python -c "import duckdb"`
BASELINE = "import duckdb"
# the libraries `privdb query` cannot do without, imported alone: the CLI (Typer, the pydantic it converts
# parameters with, Rich's tables), the engine (DuckDB), the parser (sqlglot), the noise (NumPy, the CSPRNG)
LIBRARIES = (
    "import typer.main, rich.table, duckdb, sqlglot, numpy, cryptography.hazmat.primitives.ciphers; "
    "from pydantic import TypeAdapter"
)
# and those `privdb serve` adds before it can answer: the web framework and the ASGI server
SERVE_LIBRARIES = f"{LIBRARIES}; import fastapi, uvicorn, uvicorn.main"
FLOORS = {
    "the libraries `privdb query` needs, imported alone": LIBRARIES,
    "the libraries `privdb serve` needs, imported alone (a query's, FastAPI, uvicorn)": SERVE_LIBRARIES,
}
COMMANDS = ("--version", "--help", "budget", "query", "explain", "serve")
COLUMNS = ["command", "privdb s", "÷ import duckdb", "modules", f"≤ {TARGET:g}×"]
BASE_COLUMNS = ["base s", "base ÷ import duckdb", "base modules"]
_ANSWERED = 200


@dataclass(frozen=True)
class Setting:
    """A tiny database and the argument lists of the commands against it."""

    db: Path
    counter: itertools.count[int]

    def argv(self, command: str) -> list[str]:
        db = ["--db", str(self.db)]
        if command == "budget":
            return ["budget", *db, "--analyst", "a"]
        if command == "query":  # a fresh ε every run: never an answer from the store
            epsilon = 0.001 + next(self.counter) * 1e-7
            return ["query", *db, "--analyst", "a", f"DP-SELECT {epsilon:.7f} COUNT(*) FROM p"]
        if command == "explain":
            return ["explain", *db, "DP-SELECT 1 COUNT(*) FROM p"]
        return [command]


def build(where: Path) -> Path:
    """A database of 200 rows (``p``: an identifier and a bounded age) and an analyst ``a``."""
    from privdb.database import Database

    data = where / "p.csv"
    data.write_text("id,age\n" + "".join(f"{i},{20 + i % 50}\n" for i in range(200)), encoding="utf-8")
    meta = {
        "columns": {
            "id": {"type": "int", "identifier": True},
            "age": {"type": "int", "lower": 0, "upper": 99},
        }
    }
    db = Database(where / "db")
    try:
        db.load("p", data, meta)
        db.grant("a", epsilon=1e9)
        db.catalog.add_owner_token()  # `serve` then prints no token
    finally:
        db.close()
    return where / "db"


def environment(src: Path | None, runtime: Path | None = None, warm: bool = False) -> dict[str, str]:
    """The runs' environment: bytecode written (an installed package's ``.pyc``), ``src`` first on the path
    (the checkout whose privdb runs; None: the baseline's, which imports no privdb); warm starts on (in the
    bench's own runtime directory, so its warm process is its own) or off."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    env["PRIVDB_WARM"] = "1" if warm else "0"
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    return env


def start_warm(setting: Setting, env: dict[str, str]) -> None:
    """Run one command (it starts the warm process) and wait until the warm process listens."""
    run_command(["-m", "privdb", *setting.argv("budget")], env)
    where = Path(env["XDG_RUNTIME_DIR"]) / "privdb"
    deadline = time.monotonic() + 120
    while not list(where.glob("warm-*.sock")):
        if time.monotonic() > deadline:
            raise RuntimeError("the warm process did not start")
        time.sleep(0.05)


def stop_warm(runtime: Path) -> None:
    """End the bench's warm processes (their pids are in the lock files beside the sockets)."""
    for lock in (runtime / "privdb").glob("*.lock"):
        pid = lock.read_text().strip()
        if pid.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)


def run_command(argv: list[str], env: dict[str, str], importtime: bool = False) -> str:
    """Run a command to its end (output discarded); with ``importtime``, return what it wrote to stderr."""
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run(
        [sys.executable, *flags, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-300:]}")
    return done.stderr.decode(errors="replace")


def run_serve(db: Path, env: dict[str, str], importtime: bool = False) -> str:
    """Start ``privdb serve``, wait for its first answer to ``GET /healthz``, stop it (Ctrl-C) and wait for
    it to end; with ``importtime``, return what it wrote to stderr."""
    port = free_port()
    flags = ["-X", "importtime"] if importtime else []
    argv = [sys.executable, *flags, "-m", "privdb", "serve", "--db", str(db), "--port", str(port)]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [*argv, "--no-access-log"], env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 120
            while not _answers(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    err.seek(0)
                    raise RuntimeError(f"privdb serve did not answer: {err.read().decode()[-300:]}")
                time.sleep(0.005)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        err.seek(0)
        return err.read().decode(errors="replace")


def _answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == _ANSWERED
    except OSError:
        return False
    finally:
        connection.close()


def runner(command: str, setting: Setting, env: dict[str, str]) -> Callable[[bool], str]:
    """One run of ``command`` with the privdb of ``env`` (``importtime``: its import log)."""
    if command == "serve":
        return lambda importtime=False: run_serve(setting.db, env, importtime)
    return lambda importtime=False: run_command(["-m", "privdb", *setting.argv(command)], env, importtime)


def modules(log: str) -> int:
    """How many modules an ``-X importtime`` log lists."""
    return sum(
        line.startswith("import time:") and "|" in line and "self [us]" not in line
        for line in log.splitlines()
    )


def measure(
    setting: Setting, src: Path | None, base: Path | None, repeats: int, runtime: Path
) -> tuple[dict[str, float], dict[str, int]]:
    """Best wall time of every run (the baseline, each command warm and cold, each command of ``base``),
    interleaved, and the modules each imports (cold: ``-X importtime`` never starts warm)."""
    warm = environment(src, runtime, warm=True)
    variants = {"": warm, "cold ": environment(src)}
    variants |= {"base ": environment(base)} if base is not None else {}
    plain = environment(None)
    start_warm(setting, warm)
    runs: dict[str, Callable[[int], object]] = {
        BASELINE: lambda i: run_command(["-c", BASELINE], plain),
        **{code: _imports(code, plain) for code in FLOORS.values()},
    }
    counted = {code: modules(run_command(["-c", code], plain, True)) for code in (BASELINE, *FLOORS.values())}
    for command in COMMANDS:
        for label, env in variants.items():
            if command == "serve" and label == "cold ":
                continue  # serve always starts cold (privdb.cli.warm): its warm row is its cold one
            one = runner(command, setting, env)
            runs[label + command] = lambda i, one=one: one(False)  # type: ignore[misc]
            counted[label + command] = modules(one(True))
    return best_of(runs, repeats), counted


def _imports(code: str, env: dict[str, str]) -> Callable[[int], object]:
    """A run of ``python -c code``: imports alone, the floor a command cannot go under."""
    return lambda _i: run_command(["-c", code], env)


def rows(best: dict[str, float], counted: dict[str, int], base: bool) -> list[list[str]]:
    """Table rows: each command's best time, its ratio to the baseline, its modules, and the verdict."""
    raw = best[BASELINE]
    out = [
        [f'`python -c "{BASELINE}"`', report.secs(raw), "1.0×", str(counted[BASELINE]), ""],
        *(
            [label, report.secs(best[code]), report.ratio(best[code], raw), str(counted[code]), ""]
            for label, code in FLOORS.items()
        ),
    ]
    for cells in out:
        cells += ["", "", ""] if base else []
    for command in COMMANDS:
        for label in ("", "cold "):
            if command == "serve" and label:
                continue
            shown = (
                "privdb serve (to its first answer; always cold)"
                if command == "serve"
                else f"privdb {command}"
            )
            shown += ", cold (PRIVDB_WARM=0)" if label else (", warm" if command != "serve" else "")
            name = label + command
            cells = [f"`{shown}`", report.secs(best[name]), report.ratio(best[name], raw)]
            cells += [str(counted[name]) if label or command == "serve" else "(warm process)"]
            cells += [report.OK[best[name] <= TARGET * raw]]
            if base:
                old = "base " + command
                cells += [report.secs(best[old]), report.ratio(best[old], raw), str(counted[old])]
            out.append(cells)
    return out


def markdown(table_rows: list[list[str]], base: bool, line: str, repeats: int) -> str:
    columns = COLUMNS + (BASE_COLUMNS if base else [])
    body = [
        report.written_by("bench.startup", "bench/startup.py"),
        "",
        f"Machine: {line}",
        "",
        (
            f"Wall time of each command as a fresh process, best of {repeats} rounds after a warm-up, "
            f'interleaved with `python -c "{BASELINE}"` in the same rounds, on a database of 200 rows '
            "(`query`: `DP-SELECT ε COUNT(*) FROM p`, ε varied per run so no stored answer is reused; "
            "`explain` as the owner; `serve`: from the start of the process to its first `GET /healthz` "
            f"answer). The target (issue 40): every command within {TARGET:g}× the baseline. 'warm': the "
            "default, the command handed to the user's warm process (privdb.cli.warm; started before the "
            "rounds, as the first command of a session starts it); 'cold': `PRIVDB_WARM=0`, a whole fresh "
            "start. modules: what `python -X importtime` lists for one cold run"
            + (
                " ('base': the checkout before issue 40's start-up work, in the same rounds)."
                if base
                else "."
            )
            + f" The second line imports, alone, the libraries a query cannot do without (`{LIBRARIES}`): "
            "the floor of a query's start while the CLI is Typer and the parser sqlglot; the third adds "
            "FastAPI and uvicorn, the floor of `serve` (which also opens the database before it listens)."
        ),
        "",
        *report.table(columns, table_rows),
    ]
    return report.section("startup", "Start-up: each command against `import duckdb`", body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds after the warm-up (best of them)")
    parser.add_argument("--base", type=Path, help="another checkout's src/, timed in the same rounds")
    parser.add_argument("--quick", action="store_true", help="2 rounds; prints only")
    args = parser.parse_args()
    repeats = 2 if args.quick else args.repeats
    before = machine.load()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(prefix="run", dir="/tmp") as run:
        setting = Setting(build(Path(tmp)), itertools.count())
        try:
            best, counted = measure(setting, ROOT / "src", args.base, repeats, Path(run))
        finally:
            stop_warm(Path(run))
    line = machine.describe(
        f"duckdb {machine.version('duckdb')}, typer {machine.version('typer')}",
        f"load (1/5/15 min) {before} before, {machine.load()} after",
        memory=False,
    )
    shown = rows(best, counted, args.base is not None)
    console = report.console()
    columns = COLUMNS + (BASE_COLUMNS if args.base is not None else [])
    console.print(report.rich_table("start-up", columns, shown), line, sep="\n")
    if not args.quick:
        report.write_section("startup", markdown(shown, args.base is not None, line, repeats))
        console.print(f"Wrote the startup section of {report.DOC}")


if __name__ == "__main__":
    main()
