"""The whole ``privdb anonymize`` command on 1,000,000 rows beside the algorithm alone (issue 15).

A 1,000,000-row Adult-like table (Adult tiled, age + U{-2..2} clipped to 17..90, seed 20261123: the table of
``bench/anonymize.py``) is written as a ``;``-separated CSV; then ``python -m privdb anonymize`` runs in a
fresh process per run, as an owner would run it: read the CSV, anonymise, measure the release (the report),
write the release and the report. Wall time is the process's, start to exit; "algorithm" is the ``seconds``
the report states (the library call alone, measured by the command). Best of ``--repeats`` runs.

Variants: Mondrian, k = 10, sensitive salary-class, with ``--report R.json``; the same with the HTML page
and the PNG histogram too; the full-domain search (lattice) with the shipped hierarchies (``--fix-labels``);
Mondrian as the first on the harder table (``replicate_adult(..., harder=True)``: for half the records one
categorical quasi-identifier redrawn from its Adult marginal; issue 30's target) and on the hardest
(``replicate_adult(..., hardest=True)``: the harder table with ages in tenths of a year and each category
split into up to 12 variants drawn from a Zipf law, ``bench.harness.data.spread_adult``; issue 40's target).
``--only KEY`` runs some variants (keys: plain, html, lattice, harder, hardest) and writes them to their own
subsection. Besides wall and
algorithm seconds, each run's CPU seconds (user + system of the child process) are noted: on a loaded
machine they move less than wall time.

``--before-src DIR`` also times another checkout's ``src`` (e.g. ``git archive <rev> src | tar -x -C DIR``)
in the same session, interleaved, so both columns see the same machine load; an older privdb without
``--fix-labels`` runs the lattice on the hierarchies as they are.

Run alone: ``.venv/bin/python -m bench.anonymize_command [--before-src DIR]`` rewrites its part of
docs/benchmarks.md (inside the anonymize section); ``python -m bench.anonymize`` runs it as part of a full
run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.anonymize.spec import SEED
from bench.harness import machine, report
from bench.harness.data import ADULT as DATA
from bench.harness.data import QI as QI_LIST
from bench.harness.data import load_adult, replicate_adult
from bench.harness.report import markers, wrap, write_section

NAME = "anonymize-command"
QI = ",".join(QI_LIST)
TARGET_S = 5.0


@dataclass(frozen=True)
class Variant:
    key: str
    name: str
    args: tuple[str, ...]
    fix_labels: bool = False
    table: str = "plain"  # plain, harder or hardest (``big_table``)
    target: tuple[float, float] = (TARGET_S, float("inf"))  # wall, algorithm seconds


VARIANTS = (
    Variant(
        "plain",
        "Mondrian, k = 10, --report",
        ("--sensitive", "salary-class", "--k", "10"),
        target=(TARGET_S, 2.0),
    ),
    Variant(
        "html",
        "Mondrian, k = 10, --report, --report-html, --report-png",
        (
            "--sensitive",
            "salary-class",
            "--k",
            "10",
            "--report-html",
            "{dir}/r.html",
            "--report-png",
            "{dir}/r.png",
        ),
    ),
    Variant(
        "lattice",
        "lattice, k = 10, shipped hierarchies, --report",
        ("--k", "10", "--algorithm", "lattice", "--hierarchies", str(DATA / "hierarchies")),
        fix_labels=True,
    ),
    Variant(
        "harder",
        "Mondrian, k = 10, --report, harder table",
        ("--sensitive", "salary-class", "--k", "10"),
        table="harder",
        target=(4.0, 2.0),
    ),
    Variant(
        "hardest",
        "Mondrian, k = 10, --report, hardest table",
        ("--sensitive", "salary-class", "--k", "10"),
        table="hardest",
        target=(TARGET_S, 2.0),
    ),
)


def big_table(path: Path, rows: int, table: str = "plain") -> None:
    """The 1,000,000-row table of ``bench.anonymize`` (``replicate_adult``: plain, harder or hardest), as
    CSV."""
    frame = replicate_adult(load_adult(), rows, SEED, harder=table == "harder", hardest=table == "hardest")
    frame.to_csv(path, sep=";", index=False)


def _child_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_once(
    src: Path | None, variant: Variant, table: Path, work: Path, new: bool
) -> tuple[float, float, float]:
    """(wall seconds of the process, the seconds its report states for the algorithm, its CPU seconds)."""
    report = work / "r.json"
    report.unlink(missing_ok=True)
    args = [a.format(dir=work) for a in variant.args]
    if variant.fix_labels and new:
        args.append("--fix-labels")
    argv = [sys.executable, "-m", "privdb", "anonymize", str(table), "--qi", QI, *args]
    argv += ["-o", str(work / "out.csv"), "--report", str(report)]
    # a fresh process, cold: its CPU seconds are the child's to count (a warm start runs the command in the
    # user's warm process, privdb.cli.warm, and takes the imports, about 0.6 s here, off the wall time)
    env = dict(os.environ) | {"PRIVDB_WARM": "0"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    cpu, started = _child_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    return wall, float(json.loads(report.read_text())["seconds"]), _child_cpu() - cpu


def measure(
    rows: int, repeats: int, before_src: Path | None, variants: tuple[Variant, ...] = VARIANTS
) -> dict[str, Any]:
    """Per variant and side (now and, optionally, before, interleaved run by run): the best and the median
    of wall, algorithm and CPU seconds over ``repeats`` fresh processes; the load at the start and end."""
    sides = {"now": None} | ({"before": before_src} if before_src is not None else {})
    out: dict[str, Any] = {"rows": rows, "repeats": repeats, "before_src": str(before_src or ""), "runs": {}}
    out["load_start"] = machine.load(", ")
    with tempfile.TemporaryDirectory(prefix="privdb-bench-") as tmp:
        work = Path(tmp)
        tables = {t: work / f"big-{t}.csv" for t in dict.fromkeys(v.table for v in variants)}
        for table, path in tables.items():
            big_table(path, rows, table)
        for variant in variants:
            got: dict[str, list[tuple[float, float, float]]] = {side: [] for side in sides}
            for _ in range(repeats):
                for side, src in sides.items():
                    new = side == "now" or _knows_fix_labels(src)
                    got[side].append(run_once(src, variant, tables[variant.table], work, new))
            out["runs"][variant.name] = {side: _summary(runs) for side, runs in got.items()}
            out["runs"][variant.name]["target"] = list(variant.target)
    out["load_end"] = machine.load(", ")
    return out


def _knows_fix_labels(src: Path | None) -> bool:
    """Whether that checkout's ``privdb anonymize`` has ``--fix-labels`` (issue 15 added it)."""
    options = (src or Path()) / "privdb" / "cli" / "table_options.py"
    return options.is_file() and "--fix-labels" in options.read_text(encoding="utf-8")


def _summary(runs: list[tuple[float, float, float]]) -> dict[str, list[float]]:
    """Best and median of each measure (the best wall run's algorithm seconds are not singled out)."""
    columns = zip(*runs, strict=True)
    return {
        name: [min(values), statistics.median(values)]
        for name, values in zip(("wall", "algorithm", "cpu"), columns, strict=True)
    }


def markdown(result: dict[str, Any], command: str, name: str = NAME) -> str:
    """The subsection, between its own markers (it sits inside the anonymize section)."""
    start, end = markers(name)
    before = bool(result["before_src"])
    cols = ["command", "wall s best / median", "algorithm s best / median", "CPU s best", "target"]
    if before:
        cols += [
            "before: wall s",
            "before: algorithm s",
            "before: CPU s",
            "now ÷ before (wall, algorithm, CPU)",
        ]
    lines = [
        start,
        f"### The whole `privdb anonymize` command at {result['rows']:,} rows"
        + (f" ({', '.join(result['runs'])})" if name != NAME else ""),
        "",
        f"Written by `bench/anonymize_command.py`; command: `{command}`",
        "",
        f"Load average (1, 5, 15 min) at the start {result['load_start']}, at the end {result['load_end']} "
        f"(the machine has {os.cpu_count()} CPUs)." + (_LOADED if _overloaded(result) else ""),
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for label, sides in result["runs"].items():
        now, (t_wall, t_algo) = sides["now"], sides["target"]
        met = now["wall"][0] <= t_wall and now["algorithm"][0] <= t_algo
        target = f"wall ≤ {t_wall:g} s" + (f", algorithm ≤ {t_algo:g} s" if t_algo != float("inf") else "")
        row = [label, *(_pair(now[m]) for m in ("wall", "algorithm")), f"{now['cpu'][0]:.2f}"]
        row.append(f"{target}: {'met' if met else '**missed**'}")
        if before and "before" in sides:
            old = sides["before"]
            row += [_pair(old["wall"]), _pair(old["algorithm"]), f"{old['cpu'][0]:.2f}"]
            row.append(" / ".join(f"{now[m][0] / old[m][0]:.2f}" for m in ("wall", "algorithm", "cpu")))
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        f"Each figure is the best (and median) of {result['repeats']} fresh processes (`python -m privdb "
        f"anonymize big.csv --qi {QI} … -o out.csv --report r.json`) on a {result['rows']:,}-row Adult-like "
        f"table (Adult tiled, age + U{{-2..2}} clipped to 17..90, seed {SEED}; the harder table also "
        "redraws, "
        "for half the records, one categorical quasi-identifier from its Adult marginal; the hardest table "
        "is the harder one with ages in tenths of a year, age + U{0..9}/10, and each category split into up "
        "to 12 variants drawn from a Zipf law of exponent 1.2, `bench.harness.data.spread_adult`: 740 ages "
        "and 6 to 488 values per category), in a temporary "
        "directory. Wall: the process from start to exit (interpreter start and imports included). "
        "Algorithm: the `seconds` of its report, the library call alone. CPU: user + system seconds of the "
        "process (less sensitive to other work on the machine than wall time). The rest is reading the CSV "
        "(DuckDB into Arrow), measuring the release (one grouping shared by k / l / t, risk and utility), "
        "writing it (pyarrow's CSV writer) and the report.",
    ]
    if before:
        lines += [
            "",
            f"Before: the same commands on {result.get('before_name') or result['before_src']}, interleaved "
            "run by run with the runs above, so both see the same load; the ratios compare best with best. "
            "A privdb older than issue 15 has no `--fix-labels` and runs the lattice on the hierarchies as "
            "they are.",
        ]
    lines.append(end)
    return "\n".join(wrap(line) for line in lines)


_LOADED = (
    " Other work kept more processes running than there are CPUs, so the absolute seconds are longer than "
    "on an idle machine and not comparable with other runs: compare the ratios to the same run's before "
    "column, and the CPU seconds."
)


def _overloaded(result: dict[str, Any]) -> bool:
    """Whether a load average at the start or end exceeded the CPU count."""
    loads = [float(x) for key in ("load_start", "load_end") for x in result[key].split(", ")]
    return max(loads) > (os.cpu_count() or 1)


def _pair(values: list[float]) -> str:
    return f"{values[0]:.2f} / {values[1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description="privdb anonymize, the whole command, at 1,000,000 rows.")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the table (1,000,000)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per variant (3)")
    parser.add_argument("--before-src", type=Path, default=None, help="another checkout's src to time too")
    parser.add_argument("--before-name", default=None, help="how the docs name it, e.g. 'commit 84efa37'")
    parser.add_argument(
        "--only", action="append", choices=[v.key for v in VARIANTS], help="run only these variants"
    )
    parser.add_argument("--print-only", action="store_true", help="print, leave docs/benchmarks.md alone")
    args = parser.parse_args()
    variants = tuple(v for v in VARIANTS if not args.only or v.key in args.only)
    result = measure(args.rows, args.repeats, args.before_src, variants)
    if args.before_name:
        result["before_name"] = args.before_name
    name = NAME if not args.only else "-".join([NAME, *sorted(args.only)])
    text = markdown(result, report.command("bench.anonymize_command"), name)
    print(text)
    if not args.print_only:
        write_section(name, text)


if __name__ == "__main__":
    main()
