"""bench.joins' section of docs/benchmarks.md: the table of times, ratios and peak memory, privdb by
stage, the targets, why a join costs more than the floor, and what Qrlew ran with."""

from __future__ import annotations

import math
from typing import Any

from bench.harness import machine, report
from bench.harness.peers import QRLEW
from bench.harness.report import mib as _mib
from bench.harness.report import ratio as _ratio
from bench.harness.report import secs as _secs
from bench.joins.spec import JOINS, QRLEW_DELTA, QUERIES, SEED, TARGET


def _get(side: dict[str, Any], key: str, what: str) -> Any:
    return side.get("queries", {}).get(key, {}).get(what)


def _time(side: dict[str, Any], key: str, name: str) -> float | None:
    value = (_get(side, key, "seconds") or {}).get(name)
    return None if value is None or not math.isfinite(value) else float(value)


def _largest_peak(side: dict[str, Any]) -> float | None:
    peaks = [p for info in side.get("queries", {}).values() for p in info.get("peak_mib", {}).values()]
    return max(peaks, default=None)


def _peak(side: dict[str, Any], key: str, name: str) -> float | None:
    value = (_get(side, key, "peak_mib") or {}).get(name)
    return None if value is None else float(value)


COLUMNS = ["query (ε = 1)", "raw DuckDB s", "privdb s", "Qrlew s", "privdb ÷ raw", "Qrlew ÷ privdb"]
COLUMNS += ["peak RSS MiB: raw / privdb / Qrlew"]


def table_rows(mine: dict[str, Any], peer: dict[str, Any]) -> list[list[str]]:
    rows = []
    for q in QUERIES:
        raw, dp, qr = _time(mine, q.key, "raw"), _time(mine, q.key, "privdb"), _time(peer, q.key, "qrlew")
        dp_cell = (
            f"refused ({_get(mine, q.key, 'error')['code']})" if _get(mine, q.key, "error") else _secs(dp)
        )
        qr_cell = "failed" if _get(peer, q.key, "error") or "error" in peer else _secs(qr)
        memory = " / ".join(
            _mib(m)
            for m in (_peak(mine, q.key, "raw"), _peak(mine, q.key, "privdb"), _peak(peer, q.key, "qrlew"))
        )
        rows.append(
            [f"{q.key} {q.label}", _secs(raw), dp_cell, qr_cell, _ratio(dp, raw), _ratio(qr, dp), memory]
        )
    return rows


PART_COLUMNS = ["query", *report.STAGE_COLUMNS]


def part_rows(mine: dict[str, Any]) -> list[list[str]]:
    out = []
    for q in QUERIES:
        p = _get(mine, q.key, "parts")
        if not p:
            continue
        raw, total = _time(mine, q.key, "raw"), _time(mine, q.key, "privdb")
        out.append([q.key, *report.stage_cells(total, p, raw)])
    return out


def targets(mine: dict[str, Any]) -> list[str]:
    if "error" in mine:
        return [f"- privdb within {TARGET:.0f}× of the raw join: **not measured** ({mine['error']})"]
    found, refused = [], []
    for key in JOINS:
        err = _get(mine, key, "error")
        if err:
            refused.append(f"{key} refused: `{err['code']}`: {err['message']}")
            continue
        raw, dp = _time(mine, key, "raw"), _time(mine, key, "privdb")
        if raw and dp:
            found.append((key, dp / raw))
    text = ", ".join(f"{key} {r:.1f}×" for key, r in found)
    if refused or not found:
        verdict = "**not met**: " + "; ".join(refused) if refused else "not measured"
        return [f"- privdb within {TARGET:.0f}× of the raw join: {text + '; ' if text else ''}{verdict}"]
    met = "met" if max(r for _, r in found) <= TARGET else "**missed**"
    return [f"- privdb within {TARGET:.0f}× of the raw join on DuckDB: {text} ({met})"]


def data_notes(stats: dict[str, Any]) -> str:
    p, v = stats["people"], stats["visits"]
    return (
        f"{p:,} people, {v:,} visits and {stats['regions']} regions, generated in DuckDB (seed {SEED}; "
        f"{stats['file_bytes'] / 2**30:.2f} GiB file). Visits per person: mean {stats['mean']:.2f}, median "
        f"{stats['median']:g}, max {stats['max']:,}; {stats['none'] / p:.1%} of people have none, "
        f"{stats['over_10']:,} ({stats['over_10'] / p:.2%}) more than 10 — the visits' `max_contributions` — "
        f"holding {stats['visits_over_10'] / v:.1%} of all visits, and {stats['over_50']:,} have 50 or more."
    )


def machine_line(mine: dict[str, Any], load: list[float]) -> str:
    libs = ", ".join(f"{n} {v}" for n, v in (mine.get("versions") or {}).items())
    return machine.describe(
        f"{libs} (commit {machine.commit() or '?'})",
        f"1-minute load average {load[0]:.2f} at the start, {load[1]:.2f} at the end (other work on the "
        "machine)",
    )


def peer_notes(peer: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    if "error" in peer:
        return [f"**Qrlew was not measured**: {peer['error']}"]
    v = peer["versions"]
    lines = [
        f"- **Qrlew**: pyqrlew {v['pyqrlew']} (numpy {v['numpy']}, SQLAlchemy {v['sqlalchemy']}, "
        f"duckdb-sqlalchemy {v['duckdb-sqlalchemy']}, duckdb {v['duckdb']}, Python {peer['python']}) "
        "in its own venv `bench/.peers/qrlew` that the script creates (`python -m venv`, then `pip install "
        f"{' '.join(QRLEW.pins())}`): pyqrlew pins `numpy<2` (the project has numpy 2) and "
        "reads tables through SQLAlchemy, which the project does not use. It runs as a subprocess, on "
        "the generated DuckDB file itself (read-only), with DuckDB's default settings, as privdb's "
        "connection has.",
        '- Setup, off the clock: `Dataset.from_database("bench", engine, "main")` (it counts each '
        f"table's rows) in {peer['dataset_seconds']:.1f} s, then `with_range` for age, income, "
        "region_code and cost, `with_possible_values` for state, kind and regions.name (privdb's "
        "declared values: no key thresholds), `with_constraint(people.pid, Unique)`. Privacy unit "
        '`[("people", [], "pid"), ("visits", [("pid", "people", "pid")], "pid")]`: a visit belongs to '
        "the person its pid names; regions is public (left out). "
        f"`max_multiplicity={spec['max_multiplicity']}` (privdb's visits `max_contributions`), "
        f"`max_privacy_unit_groups={spec['max_groups']}` (its `max_groups`).",
        "- Privacy: Qrlew answers with Gaussian mechanisms, so it needs δ > 0 (privdb charges δ = 0 "
        'here). Its `rewrite_with_differential_privacy(…, {"epsilon": ε, "delta": δ})` gives **each** '
        "of the query's k mechanisms the whole (ε, δ) (its DpEvent lists k Gaussian events, each with "
        "noise multiplier √(2 ln(1.25/δ))/ε), so the worker passes (1/k, δ/k) and checks every "
        f"multiplier: (ε, δ) = (1, {QRLEW_DELTA:g}) per query by basic composition.",
    ]
    charged = []
    for q in QUERIES:
        info = peer["queries"].get(q.key, {})
        if "error" in info:
            charged.append(f"{q.key}: failed ({info['error'][:300]})")
        else:
            charged.append(
                f"{q.key}: {info['mechanisms']} × (ε {info['epsilon_each']:.4g}, δ "
                f"{info['delta_each']:.2g}), noise multiplier {info['noise_multiplier']:.1f}; "
                f"{info['rows_out']} rows out; rewritten SQL {info['sql_chars']:,} characters, rewrite "
                f"{_secs(info['parts']['rewrite'])} s, engine {_secs(info['parts']['engine SQL'])} s"
            )
    lines.append("- Per query: " + "; ".join(charged) + ".")
    lines.append(
        "- Why Qrlew: it was the first peer of the three tried (Qrlew, OpenDP's Polars API, Tumult "
        "Analytics) and it rewrites a user-level join, with the privacy unit carried from people to "
        "visits, so OpenDP and Tumult were not installed. What did not work on the way: Qrlew reads a "
        "database's schema through SQLAlchemy, and with `duckdb-engine` 0.17 (SQLAlchemy 2.x) that "
        "reflection fails on DuckDB (`pg_catalog.pg_collation` not found); `duckdb-sqlalchemy` reflects "
        "it. Qrlew writes PostgreSQL SQL, which DuckDB runs unchanged for these three queries."
    )
    raws = [f"{q.key} {_secs(_time(peer, q.key, 'raw'))} s" for q in QUERIES if _time(peer, q.key, "raw")]
    lines.append(
        "- The raw queries on the worker's own read-only connection, for comparison with the floor (same "
        "tables, other process): " + ", ".join(raws) + "."
    )
    return lines


def why_joins_cost(mine: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    """What privdb's engine SQL for the joins does beyond the floor, read off the SQL this run used."""
    sql = {q.key: _get(mine, q.key, "engine_sql") or "" for q in QUERIES}
    every_unit = [k for k in JOINS if "PARTITION BY" in sql[k] and "__privdb_rows_per_" not in sql[k]]
    if not every_unit:
        return []
    shortcut = "__privdb_rows_per_" in sql["J3"]
    text = (
        "Why a join costs more than the floor: privdb's engine SQL for "
        + " and ".join(every_unit)
        + " (`engine.prepare`) first aggregates the joined rows per unit and key (`GROUP BY unit, key`), "
        "keeps `max_groups` keys per unit (`ROW_NUMBER() OVER (PARTITION BY unit ORDER BY random())`) "
        "and scales each unit's partial sums by `LEAST(1, m / rows)`, for **every** unit: the shortcut "
        "of single-table queries, which skips bounding for the units whose stored row count is at most "
        "min(m, G)"
        + (" (J3 takes it: those rows are aggregated directly, only the rest per unit)" if shortcut else "")
        + ", is not applied to a join."
    )
    if "AS DOUBLE) = CAST(" in sql["J1"]:
        text += " The join keys are compared as DOUBLE (`CAST(pid AS DOUBLE) = CAST(pid AS DOUBLE)`)."
    if "J2" in every_unit:
        text += (
            f" So J2 groups all {stats['people']:,} people by pid, where the floor groups them straight "
            "into the 9 regions."
        )
    return [text, ""]


def markdown(
    mine: dict[str, Any],
    peer: dict[str, Any],
    stats: dict[str, Any],
    spec: dict[str, Any],
    command: str,
    load: list[float],
) -> str:
    lines = [
        f"Written by `bench/joins/`; command: `{command}`",
        "",
        f"Machine: {machine_line(mine, load)}",
        "",
        "Data: " + data_notes(stats),
        "",
        "User-level privacy: the privacy unit is the person (`pid`); people `max_contributions: 1`, "
        "visits `max_contributions: 10, max_groups: 1`, regions `public: true` (privdb's metadata; "
        "Qrlew's equivalent below). ε = 1 per query. Seconds are wall time, best of "
        f"{spec['repeats']} after one warm-up, the implementations of a query interleaved. Raw DuckDB "
        "(the floor, not private) is the same join and aggregate as plain SQL on privdb's own "
        "connection. privdb is `engine.run` end to end (plan, budget reservation, engine SQL, noise, "
        "commit, stored answer); its ε moves by 1e-9 per repetition so no run is served from its store "
        "of answers. Peak RSS: the worker process's peak resident set while that implementation's query "
        'ran (largest over its runs), DuckDB\'s cache of the tables included. "Qrlew ÷ privdb" above 1× '
        "means privdb is faster.",
        "",
        *report.table(COLUMNS, table_rows(mine, peer)),
    ]
    if not (mine.get("per_run_peak") and peer.get("per_run_peak", True)):
        lines += ["", "(This kernel could not reset the peak: each figure is its process's peak so far.)"]
    lines += ["", "Targets:", "", *targets(mine), ""]
    if "error" not in mine:
        lines.append(
            "privdb's side: loading the metadata (which writes each row's per-unit row count, read by "
            f"the user-level rewrite) took {mine['load_seconds']:.1f} s, off the clock; the worker's "
            f"peak resident set through the load {_mib(mine['setup_peak_mib'])} MiB (DuckDB's `UPDATE`), "
            f"resident set before the first query {_mib(mine['resident_mib'])} MiB, largest peak of a query "
            f"{_mib(_largest_peak(mine))} MiB. Qrlew's worker: {_mib(peer.get('resident_mib'))} MiB "
            f"resident before its first query, largest peak {_mib(_largest_peak(peer))} MiB."
        )
        lines.append("")
    lines += why_joins_cost(mine, stats)
    parts = part_rows(mine)
    if parts:
        lines += [
            "Where privdb's time goes (each stage timed alone, best of the same repeats): `engine.prepare` "
            "(parse, plan, bind), the rewritten engine SQL (`db.backend.fetch`), `add_noise`, and the rest "
            "(catalog and ledger) = total − stages, floored at 0:",
            "",
            *report.table(PART_COLUMNS, parts),
        ]
        lines.append("")
    refused = [q.key for q in QUERIES if _get(mine, q.key, "error")]
    if refused:
        lines += [
            "privdb refused "
            + "; ".join(
                f"{k}: `{_get(mine, k, 'error')['code']}`: {_get(mine, k, 'error')['message']}"
                for k in refused
            )
            + ". Its raw time is still measured.",
            "",
        ]
    lines += ["Peer settings:", "", *peer_notes(peer, spec)]
    heading = "JOINs: privdb's DP-SELECT over a join, the raw join on DuckDB, Qrlew"
    return report.section("joins", heading, lines)
