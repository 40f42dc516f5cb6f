"""bench.engines' section of docs/benchmarks.md: privdb against the raw query per engine, by stage, and
Spark at scale."""

from __future__ import annotations

from typing import Any

from bench.engines.load import CHUNK, Row
from bench.harness import machine, report

TARGET = 1.5  # privdb ÷ raw on the same engine, row-level
ENGINES = {"duckdb": "DuckDB", "sqlite": "SQLite", "postgres": "PostgreSQL", "spark": "Spark local[2]"}


def _mib(kib: int) -> str:
    return report.mib(kib / 1024)


def machine_line(versions: dict[str, str]) -> str:
    return machine.describe(", ".join(f"{k} {v}" for k, v in versions.items()))


COLUMNS = ["engine", "rows", "query (ε = 1)", "groups", "raw s", "privdb s", "privdb ÷ raw"]
PART_COLUMNS = ["engine", "query", *report.STAGE_COLUMNS]


def table_rows(rows: list[Row]) -> list[list[str]]:
    return [
        [
            ENGINES[r.engine],
            f"{r.rows:,}",
            f"{r.key} {r.label}",
            str(r.groups),
            report.secs(r.raw),
            report.secs(r.privdb),
            f"{r.privdb / r.raw:.2f}×",
        ]
        for r in rows
    ]


def part_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        out.append([ENGINES[r.engine], r.key, *report.stage_cells(r.privdb, r.parts, r.raw, 2)])
    return out


def targets(rows: list[Row], big: dict[str, Any] | None) -> list[str]:
    ok = report.OK
    lines = []
    for key, name in ENGINES.items():
        picked = [r for r in rows if r.engine == key]
        if not picked:
            lines.append(f"- {name}: not measured")
            continue
        worst = max(r.privdb / r.raw for r in picked)
        text = ", ".join(f"{r.key} {r.privdb / r.raw:.2f}×" for r in picked)
        lines.append(
            f"- privdb within {TARGET}× of raw {name} ({picked[0].rows:,} rows), row-level: {text} "
            f"({ok[worst <= TARGET]})"
        )
    if big is None:
        lines.append("- Spark local[2] at scale: not measured")
    elif "error" in big:
        lines.append(f"- Spark local[2] at scale: **failed** ({big['error']})")
    else:
        lines.append(
            f"- Spark local[2] on {big['rows']:,} rows of Parquet without running out of memory: Q1 through "
            f"privdb in {min(big['privdb_s']):,.1f} s (best of {len(big['privdb_s'])}), peak RSS "
            f"{_mib(big['tree_peak_kib'])} MiB for the whole process tree (met)"
        )
    return lines


def big_lines(big: dict[str, Any] | None, big_rows: int, parquet_mib: float, write_s: float) -> list[str]:
    if big is None:
        return []
    if "error" in big:
        return [f"Spark local[2] on {big_rows:,} rows: **failed**: {big['error']}"]
    runs = ", ".join(f"{s:.2f}" for s in big["privdb_s"])
    raws = ", ".join(f"{s:.2f}" for s in big["raw_s"])
    return [
        f"Spark local[2] at scale: {big['rows']:,} rows of Parquet ({parquet_mib:,.0f} MiB, one file, row "
        f"groups of {CHUNK:,} rows, written in {write_s:.0f} s by pyarrow's ParquetWriter from the table "
        "above replicated with shifted pid), Q1 row-level through privdb in a fresh process of this "
        f"script, Spark {big['spark']}, driver memory {big['driver_memory']}:",
        "",
        *report.table(
            ["step", "s"],
            [
                ["start Spark, attach the Parquet file (view, schema)", f"{big['attach_s']:.2f}"],
                ["raw Q1, the session's first query (warm-up, cold)", f"{big['cold_s']:.2f}"],
                ["privdb Q1 end to end, each run", runs],
                ["raw Q1 on the same session, each run right after privdb's", raws],
                ["best privdb ÷ best raw", f"{min(big['privdb_s']) / min(big['raw_s']):.2f}×"],
                ["whole worker process (Python and JVM start included)", f"{big['wall_s']:.1f}"],
            ],
        ),
        "",
        f"Peak memory: Python driver {_mib(big['python_hwm_kib'])} MiB, Spark's JVM "
        f"{_mib(big['jvm_hwm_kib'])} MiB (each its VmHWM), whole process tree "
        f"{_mib(big['tree_peak_kib'])} MiB (sum of RSS sampled every 0.2 s). privdb's answer "
        f"{big['noisy']:,.0f} against the exact {big['exact']:,}; only that one aggregate row came back to "
        "the driver.",
    ]


def markdown(
    rows: list[Row],
    big: dict[str, Any] | None,
    extra: dict[str, Any],
    repeats: int,
) -> str:
    lines = [
        report.written_by("bench.engines", "bench/engines/"),
        "",
        f"Machine: {machine_line(extra['versions'])}. Load average when the run began: {extra['load']}; "
        "other work may have run on the machine at the same time.",
        "",
        "The generated census table (`privdb.data.census.generate`) in each engine: privdb's DuckDB, a "
        "SQLite file (`sqlite3` `executemany`), a throw-away PostgreSQL cluster (tests/pgfixture.py, "
        "`COPY`, `VACUUM ANALYZE`, server defaults with `fsync=off`), a Parquet file read by Spark "
        "`local[2]`; the last three attached with `Database.attach`, so the data stays in its engine. "
        f"Load times (s): {extra['loads']}. Queries Q1–Q3 of bench/sql/ at ε = 1, row-level (no privacy "
        "unit). **raw**: the plain aggregate through the same engine connection (`backend.fetch`); "
        "**privdb**: `engine.run` end to end (plan, bind, budget, engine SQL, noise, stored answer), ε moved "
        f"by 1e-9 per repetition so no answer comes from the store. Wall time, best of {repeats} after one "
        "warm-up, raw and privdb interleaved.",
        "",
        *report.table(COLUMNS, table_rows(rows)),
    ]
    lines += ["", "Targets:", "", *targets(rows, big), ""]
    lines += [
        "privdb by stage (each timed alone, best of the same repeats): `engine.prepare` (parse, plan, "
        "metadata from the engine, transpile, bind on the engine), the rewritten engine SQL alone "
        "(`backend.fetch`), `add_noise`; rest = total − stages (ledger and catalog), floored at 0:",
        "",
        *report.table(PART_COLUMNS, part_rows(rows)),
    ]
    lines += ["", *big_lines(big, extra["big_rows"], extra["parquet_mib"], extra["parquet_s"])]
    heading = "Engines: privdb against the raw query on DuckDB, SQLite, PostgreSQL, Spark"
    return report.section("engines", heading, lines)
