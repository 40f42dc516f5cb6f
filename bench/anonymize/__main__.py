"""``python -m bench.anonymize``: anonymisation, privdb against anjana and pycanon (bench/anonymize)."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import anonymize_command
from bench.anonymize.checks import measure_checks, run_pycanon
from bench.anonymize.measure import measure_lattice, measure_mondrian, peer_versions
from bench.anonymize.notes import markdown, targets
from bench.anonymize.report import (
    AGREE_COLS,
    BIG_COLS,
    CHECK_COLS,
    LATTICE_COLS,
    MONDRIAN_COLS,
    agreement,
    arx_context,
    big_rows,
    check_rows,
    lattice_rows,
    machine_line,
    mondrian_rows,
)
from bench.anonymize.spec import BIG_K, BIG_ROWS, KS, QI, QUICK_ROWS, SEED, SENSITIVE
from bench.harness import report
from bench.harness.data import ADULT, load_adult, replicate_adult
from bench.harness.peers import ANJANA, PeerUnavailable, module_argv, run_json_worker

if TYPE_CHECKING:
    import pandas as pd
    from rich.progress import Progress, TaskID


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    argv = module_argv(sys.executable, "bench.anonymize.workers", "mondrian")
    return run_json_worker(argv, spec, "the mondrian worker failed (exit {code}); see its output above")


@contextlib.contextmanager
def step(progress: Progress, label: str, total: int) -> Iterator[Callable[[], None]]:
    task: TaskID = progress.add_task(label, total=total)
    yield lambda: progress.advance(task)
    progress.update(task, completed=total)


def main() -> None:
    parser = argparse.ArgumentParser(description="Anonymisation: privdb against anjana and pycanon.")
    parser.add_argument("--quick", action="store_true", help="smoke run (k = 10, 100,000 rows); prints only")
    parser.add_argument("--rows", type=int, default=BIG_ROWS, help="rows of the replicated table (1,000,000)")
    parser.add_argument("--repeats", type=int, default=5, help="in-process timed runs after a warm-up (5)")
    parser.add_argument("--cold-repeats", type=int, default=5, help="cold processes per tool and k (5)")
    parser.add_argument("--pycanon-budget", type=float, default=60.0, help="pycanon seconds per table (60)")
    parser.add_argument("--data", type=Path, default=ADULT, help="the Adult directory")
    args = parser.parse_args()
    if args.quick:
        args.rows = min(args.rows, QUICK_ROWS)
        args.repeats, args.cold_repeats = min(args.repeats, 2), 1
        args.pycanon_budget = min(args.pycanon_budget, 15.0)
    ks = (10,) if args.quick else KS

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from privdb.anonymize import anonymize

    console = report.console()
    work = Path(tempfile.mkdtemp(prefix="privdb-bench-anonymize-"))
    peer: dict[str, str] | None = None
    anjana_python: str | None = None
    try:
        adult = load_adult(args.data)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            with step(progress, "Mondrian on Adult", len(ks)) as tick:
                mondrian = measure_mondrian(adult, ks, args.repeats, tick)
            big: dict[str, dict[str, Any]] = {}
            frames: dict[str, pd.DataFrame] = {}
            with step(progress, f"Mondrian at {args.rows:,} rows (fresh processes)", 2) as tick:
                for name, harder in (("replicated", False), ("harder", True)):
                    frame = replicate_adult(adult, args.rows, SEED, harder=harder)
                    path = work / f"{name}.parquet"
                    frame.to_parquet(path)
                    spec = {"path": str(path), "qi": QI, "k": BIG_K, "repeats": 3}
                    result = run_worker(spec)
                    result["tuples"] = len(frame[QI].drop_duplicates())
                    big[name] = result
                    if not harder:
                        frames["big"] = frame
                    tick()
            with step(progress, "anjana's venv (bench/.peers/anjana)", 1) as tick:
                try:
                    anjana_python = str(ANJANA.python())
                    peer = peer_versions(Path(anjana_python))
                except (PeerUnavailable, OSError, subprocess.CalledProcessError) as err:
                    console.print(f"[red]anjana could not be installed: {err}")
                tick()
            n_cold = len(ks) * args.cold_repeats * (2 if anjana_python else 1)
            with step(progress, "Full-domain search, cold processes", n_cold) as tick:
                lattice = measure_lattice(adult, args.data, ks, args.cold_repeats, anjana_python, work, tick)
            tables = {
                "Adult, Mondrian k = 10": anonymize(adult, QI, k=10).table,
                "Adult, Mondrian k = 10, l = 2": anonymize(adult, QI, k=10, l=2, sensitive=SENSITIVE).table,
                "Adult, raw": adult,
                f"{args.rows:,} rows, Mondrian k = 10": anonymize(frames.pop("big"), QI, k=BIG_K).table,
            }
            with step(progress, "Checks: privdb", len(tables)) as tick:
                checks = measure_checks(tables, args.repeats, 100_000, tick)
            with step(
                progress, f"Checks: pycanon (≤ {args.pycanon_budget:.0f} s a table)", len(tables)
            ) as tick:
                for row, (name, table) in zip(checks, tables.items(), strict=True):
                    path = work / "check.parquet"
                    table.to_parquet(path)
                    row.pycanon, row.budget = run_pycanon(path, args.pycanon_budget), args.pycanon_budget
                    tick()
                    del name
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rich_table = report.rich_table
    console.print(
        rich_table(f"Mondrian on Adult (best of {args.repeats})", MONDRIAN_COLS, mondrian_rows(mondrian)),
        rich_table(
            f"Mondrian at {args.rows:,} rows, k = {BIG_K} (fresh process each)", BIG_COLS, big_rows(big)
        ),
        rich_table("Full-domain search, 5 % suppression, cold process", LATTICE_COLS, lattice_rows(lattice)),
        *arx_context(lattice),
        rich_table("Privacy checks", CHECK_COLS, check_rows(checks)),
        rich_table("Agreement privdb / pycanon", AGREE_COLS, [agreement(r)[0] for r in checks]),
        machine_line(peer),
        *(line.replace("**", "") for line in targets(mondrian, big, lattice, checks)),
        sep="\n",
    )
    disagree = [r.name for r in checks if not all(agreement(r)[1])]
    console.print(
        "pycanon agrees with privdb on k, l, entropy l and t: "
        + ("yes, on every table it finished" if not disagree else "NO on " + "; ".join(disagree))
    )
    if not args.quick:
        command = report.command("bench.anonymize")
        whole = anonymize_command.markdown(anonymize_command.measure(args.rows, 3, None), command)
        report.write_section(
            "anonymize", markdown(mondrian, big, lattice, checks, peer, args, command, whole)
        )
        console.print(f"Wrote the anonymize section of {report.DOC}")


if __name__ == "__main__":
    main()
