"""bench.quantiles' section of docs/benchmarks.md: time, privdb by stage, error against OpenDP, targets and
what the peers said."""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import re
from typing import Any

from bench.harness import report
from bench.harness.report import secs as _secs
from bench.quantiles.measure import ErrorRow, TimeRow
from bench.quantiles.opendp import WhatIf
from bench.quantiles.spec import SETTINGS, STATS, TARGET_TIME
from bench.sql.report import machine_line


def _ratio(a: float | None, b: float | None) -> str:
    return report.ratio(a, b, 2)


def _pm(pair: tuple[float, float], digits: int = 1) -> str:
    mean, sem = pair
    return f"{mean:,.{digits}f} ± {sem:,.{digits}f}"


TIME_COLUMNS = ["statistic (ε = 1)", "privacy", "raw DuckDB s", "privdb s", "SmartNoise s", "OpenDP s"]
TIME_COLUMNS += ["privdb ÷ raw"]
PART_COLUMNS = ["statistic", "privacy", *report.STAGE_COLUMNS, "histogram rows"]
ERROR_COLUMNS = ["data", "statistic", "exact", "grid floor (ranks)", "privdb ranks (row)"]
ERROR_COLUMNS += ["privdb ranks (user)", "OpenDP ranks", "privdb value (row)", "OpenDP value"]
ERROR_COLUMNS += ["privdb ÷ OpenDP (ranks)", "usual answer privdb / OpenDP"]


def time_rows(rows: list[TimeRow]) -> list[list[str]]:
    return [
        [
            f"{r.stat.key} {r.stat.label}",
            SETTINGS[r.setting],
            _secs(r.raw),
            _secs(r.privdb),
            "no percentile" if r.smartnoise is None else _secs(r.smartnoise),
            _secs(r.opendp),
            _ratio(r.privdb, r.raw),
        ]
        for r in rows
    ]


def part_rows(rows: list[TimeRow]) -> list[list[str]]:
    out = []
    for r in rows:
        cells = report.stage_cells(r.privdb, r.parts, r.raw, 2)
        out.append([r.stat.key, SETTINGS[r.setting], *cells, f"{r.cells:,}"])
    return out


def error_rows(rows: list[ErrorRow]) -> list[list[str]]:
    out = []
    for r in rows:
        digits = 2 if r.stat.column == "age" else 1
        p_row, p_user, o = r.privdb["row"], r.privdb.get("user"), r.opendp
        out.append(
            [
                f"{r.data} ({r.n:,})",
                f"{r.stat.key} {r.stat.label}",
                f"{r.truth:,.{digits}f}",
                f"{r.grid_rank:,.1f}",
                _pm(p_row.rank()),
                "—" if p_user is None else _pm(p_user.rank()),
                _pm(o.rank()),
                _pm(p_row.value(), digits),
                _pm(o.value(), digits),
                _ratio(p_row.rank()[0], o.rank()[0]) if o.rank()[0] > 0 else "—",
                f"{p_row.usual()} / {o.usual()}",
            ]
        )
    return out


def what_if_lines(what_ifs: list[WhatIf], subset_rows: int, draws: int) -> list[str]:
    """What explains the remaining difference to OpenDP (the simulated what-ifs are not shown any more: the
    sensitivity they tested is now privdb's own)."""
    del what_ifs, subset_rows, draws
    return [
        "The first run of this benchmark found privdb charging Δ = m for quantiles under add/remove; one "
        "person moves `#{x < y}` by 0 or 1 and `q·n` by q, so Δ = m·max(q, 1 − q) (0.5 for the median), "
        "which privdb now uses (docs/proofs/sql.md), and ties are scored by the distance of `q·n` to the "
        "candidate's rank interval `[#{x < y}, #{x ≤ y}]` (right on int columns with many people per value, "
        "where OpenDP's `|(1 − q)·#{x < c} − q·#{x > c}|` can pick the neighbouring integer: the M1 row). "
        "What "
        "is left on the small subset is the selection rule: OpenDP selects by permute-and-flip (McKenna & "
        "Sheldon 2020), never worse than the exponential mechanism privdb uses; a few hundredths of a rank.",
        "",
    ]


def noise_line(times: list[TimeRow]) -> str:
    """How far the same raw query's best time moved between the two settings: the machine's noise."""
    spread = max(
        max(r.raw for r in times if r.stat == s) / min(r.raw for r in times if r.stat == s) for s in STATS
    )
    return (
        f"The machine ran other work concurrently: the same raw DuckDB query's best time differs by up to "
        f"{spread:.2f}× between the two settings (same data), so ratios near 1 are within noise."
    )


def targets(times: list[TimeRow], errors: list[ErrorRow]) -> list[str]:
    ok = report.OK
    ratios = ", ".join(f"{r.stat.key} {r.setting} {r.privdb / r.raw:.2f}×" for r in times)
    worst = max(r.privdb / r.raw for r in times)
    lines = [f"- privdb within {TARGET_TIME:g}× of raw DuckDB: {ratios} ({ok[worst <= TARGET_TIME]})"]
    for data in dict.fromkeys(e.data for e in errors):
        picked = [e for e in errors if e.data == data]

        def no_larger(e: ErrorRow) -> bool:
            # "no larger" up to the repetitions' noise: privdb's mean within 2 standard errors of OpenDP's
            (p, ps), (o, os_) = e.privdb["row"].rank(), e.opendp.rank()
            return p <= o + 2 * math.hypot(ps, os_)

        text = ", ".join(
            f"{e.stat.key} {e.privdb['row'].rank()[0]:,.1f} vs {e.opendp.rank()[0]:,.1f}" for e in picked
        )
        every = all(no_larger(e) for e in picked)
        lines.append(
            f"- privdb's error no larger than OpenDP's at ε = 1, {data} ({picked[0].n:,} rows), mean rank "
            f"error privdb vs OpenDP: {text} ({ok[every]})"
        )
    return lines


def peer_notes(peer: dict[str, Any], notes: dict[str, str], opendp_version: str) -> list[str]:
    lines = [
        f"- **OpenDP {opendp_version}** (project venv): `make_private_quantile(vector_domain(atom_domain(…)),"
        " symmetric_distance(), max_divergence(), candidates, alpha=q, scale)` with privdb's grid points as "
        "candidates and the scale from `binary_search_param(…, d_in=1, d_out=1)`: ε = 1 for one person "
        "added or removed, privdb's default relation (each person has one row, so row- and user-level are "
        "the same for it). It scores candidates with Smith's utility in integer form and selects by report "
        "noisy max with exponential noise (permute-and-flip, McKenna & Sheldon 2020). Releases: "
        + "; ".join(f"{k}: {v}" for k, v in notes.items())
        + ". Its time is one run after a warm-up on the whole column as a Python list (the list itself "
        "built off the clock).",
    ]
    if "error" in peer:
        lines.append(f"- **SmartNoise SQL was not run**: {peer['error']}")
        return lines
    v = peer["versions"]
    tried = {
        t["sql"]: t.get("error", "answered")
        for setting in peer["results"].values()
        for forms in setting.values()
        for t in forms
    }
    answered = [sql for sql, said in tried.items() if said == "answered"]
    lines.append(
        f"- **SmartNoise SQL {v['smartnoise-sql']}** (opendp {v['opendp']}, duckdb {v['duckdb']}, in "
        "`bench/.peers/smartnoise`, made by bench/sql/; its PostgreSQL reader on the same DuckDB file "
        "through bench/sql/'s adapter, ε = 1, both privacy settings). "
        + (
            "It has no percentile: its grammar knows the words PERCENTILE_CONT and PERCENTILE_DISC but its "
            "rewriter refuses them, and MEDIAN and QUANTILE do not parse (its open issue "
            "opendp/smartnoise-sdk#367, 'Add support for Median and other Quantiles'; MIN and MAX are "
            "refused too). What it said, per spelling (col: age or income, q: 0.5 or 0.9): "
            if not answered
            else f"It answered {', '.join(f'`{a}`' for a in answered)}. What it said, per spelling: "
        )
        + "; ".join(f"{', '.join(f'`{t}`' for t in forms)} → {said}" for said, forms in _said(tried).items())
        + "."
    )
    return lines


def _said(tried: dict[str, str]) -> dict[str, list[str]]:
    """SmartNoise's answers grouped by what it said, spellings and messages with the column and q generic."""
    grouped: dict[str, list[str]] = {}
    for sql, said in tried.items():
        said = re.sub(r" at line \d+ column \d+\.?.*$", "", said)
        said = re.sub(r"function: .*$", "function: …", said)
        body = re.sub(r"^SELECT | FROM main\.\w+$", "", sql)
        body = re.sub(r"\b(age|income)\b", "col", re.sub(r"\b0\.[59]\b", "q", body))
        forms = grouped.setdefault(said, [])
        if body not in forms:
            forms.append(body)
    return grouped


def machine_text(peer: dict[str, Any]) -> str:
    text: str = machine_line(peer)
    return text.replace("; peer venv", f", opendp {importlib.metadata.version('opendp')}; peer venv", 1)


def markdown(
    times: list[TimeRow],
    errors: list[ErrorRow],
    what_ifs: list[WhatIf],
    peer: dict[str, Any],
    notes: dict[str, str],
    n: int,
    args: argparse.Namespace,
) -> str:
    lines = [
        report.written_by("bench.quantiles", "bench/quantiles/"),
        "",
        f"Machine: {machine_text(peer)}",
        "",
        f"One generated census table (`privdb.data.census.generate`) of {n:,} rows in DuckDB; ε = 1 per "
        "statistic. privdb chooses the answer with the exponential mechanism over a grid of the declared "
        'bounds (Smith\'s utility; docs/proofs/sql.md, "Order statistics and modes"): 101 integers for age '
        f"(0..100), 16,385 points for income (0..500,000, resolution {500_000 / 2**14:.2f}). Seconds are "
        f"wall time, best of {args.repeats} after one warm-up, interleaved. Raw DuckDB (the floor, not "
        "private) is the exact `median(col)` / `quantile_cont(col, q)` on privdb's own connection; privdb is "
        "`engine.run` end to end (plan, budget, histogram SQL, exponential mechanism, commit, stored "
        "answer), its ε moved by 1e-9 per repetition so that no run is served from its store of answers.",
        "",
        *report.table(TIME_COLUMNS, time_rows(times)),
    ]
    lines += [
        "",
        "Where privdb's time goes (each stage timed alone, best of the same repeats): `engine.prepare` "
        "(parse, plan, bind), the engine SQL (`histogram_queries` run with `db.backend.fetch`: per "
        "grid cell, the number of rows whose clamped value falls in it), `add_noise` (cumulative counts, "
        "utilities, one exponential-mechanism draw over all candidates) and the rest (catalog and ledger) = "
        "total − stages, floored at 0:",
        "",
        *report.table(PART_COLUMNS, part_rows(times)),
    ]
    lines += [
        "",
        noise_line(times),
        "",
        f"Error at ε = 1: mean absolute error ± its standard error over {args.error_reps} releases per cell "
        f"({args.subset_reps} on the subset). "
        "Ranks: how far `q·n` lies from the answer's rank interval `[#{x < y}, #{x ≤ y}]` (0 for an exact "
        "quantile); value: |answer − DuckDB's exact quantile| (years, dollars). The grid floor is the rank "
        "error of the best candidate, the least any mechanism choosing among these candidates can have. "
        f"The subset is the table's first {args.subset_rows:,} people, a table of its own for privdb, the "
        "same values for OpenDP. privdb's ε is 1 − k·1e-9 (never a stored answer).",
        "",
        *report.table(ERROR_COLUMNS, error_rows(errors)),
    ]
    lines += ["", *what_if_lines(what_ifs, args.subset_rows, args.subset_reps * 2)]
    lines += ["Targets:", "", *targets(times, errors), ""]
    lines += ["Peers:", "", *peer_notes(peer, notes, importlib.metadata.version("opendp"))]
    heading = "Order statistics: MEDIAN and QUANTILE against raw DuckDB, SmartNoise SQL, OpenDP"
    return report.section("quantiles", heading, lines)
