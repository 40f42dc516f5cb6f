"""bench.anonymize's section of docs/benchmarks.md: the tables, the targets and the settings."""

from __future__ import annotations

import argparse
from typing import Any

from bench.anonymize.checks import CheckRow
from bench.anonymize.measure import ColdRun, MondrianRow
from bench.anonymize.report import (
    AGREE_COLS,
    BIG_COLS,
    CHECK_COLS,
    LATTICE_COLS,
    MONDRIAN_COLS,
    _pct,
    agreement,
    arx_context,
    big_rows,
    check_rows,
    lattice_rows,
    machine_line,
    mondrian_rows,
)
from bench.anonymize.spec import (
    BIG_K,
    QI,
    REF_ANJANA,
    REF_ARX,
    REF_MONDRIAN_BIG,
    SEED,
    SENSITIVE,
    SUPPRESSION,
    T_BIG_MB,
    T_BIG_S,
    T_CHECK_ADULT,
    T_CHECK_BIG,
    T_LATTICE_NCP,
    T_LATTICE_S,
    T_MONDRIAN_NCP,
    T_MONDRIAN_S,
)
from bench.harness import machine, report
from bench.harness.peers import ANJANA
from bench.harness.report import OK

ANJANA_VERSION = ANJANA.requirements[0].split("==")[1]


def targets(
    mondrian: list[MondrianRow],
    big: dict[str, dict[str, Any]],
    lattice: list[ColdRun],
    checks: list[CheckRow],
) -> list[str]:
    lines = []
    m10 = next((r for r in mondrian if r.k == 10), None)
    if m10:
        lines.append(
            f"- Mondrian on Adult, k = 10, ≤ {T_MONDRIAN_S} s: {m10.seconds:.4f} s "
            f"({OK[m10.seconds <= T_MONDRIAN_S]}); NCP ≤ {_pct(T_MONDRIAN_NCP)}: {_pct(m10.ncp)} "
            f"({OK[m10.ncp <= T_MONDRIAN_NCP]})"
        )
    for name, r in big.items():
        if "error" in r:
            lines.append(f"- Mondrian, {name}: not measured ({r['error']})")
            continue
        s, mib = min(r["times"]), r["rss_peak_mib"]
        mb = mib * 2**20 / 1e6
        lines.append(
            f"- Mondrian, {name} ({r['rows']:,} rows), ≤ {T_BIG_S:.0f} s: {s:.2f} s ({OK[s <= T_BIG_S]}); "
            f"peak RSS < {T_BIG_MB / 1000:.0f} GB: {mib:,.0f} MiB = {mb:,.0f} MB ({OK[mb < T_BIG_MB]})"
        )
    priv = [r for r in lattice if r.tool == "privdb" and not r.error]
    if priv:
        slow = max(r.seconds or 0.0 for r in priv)
        each = ", ".join(f"k = {r.k} {r.seconds:.2f} s" for r in priv)
        lines.append(
            f"- Full-domain search, cold process, < {T_LATTICE_S:.0f} s: {each} ({OK[slow < T_LATTICE_S]})"
        )
        r10 = next((r for r in priv if r.k == 10), None)
        if r10 and r10.ncp is not None and r10.loss is not None:
            worst = max(r10.ncp, r10.loss)
            lines.append(
                f"- Full-domain search, k = 10, NCP ≤ ARX's {_pct(T_LATTICE_NCP)}: {_pct(r10.ncp)} by "
                f"`utility()`, {_pct(r10.loss)} by privdb's own ARX-style loss ({OK[worst <= T_LATTICE_NCP]})"
            )
    for c in checks:
        target = T_CHECK_BIG if c.rows > 50_000 else T_CHECK_ADULT
        lines.append(
            f"- All checks together on {c.name}, < {target} s: {c.together:.4f} s with one grouping "
            f"({OK[c.together < target]}), {c.separate:.4f} s checking then grouping again for the risk "
            f"({OK[c.separate < target]})"
        )
    return lines


def notes(peer: dict[str, str] | None, budget: float, repeats: int, cold_repeats: int) -> list[str]:
    anjana = (
        f"anjana {peer['anjana']} (pycanon {peer['pycanon']}, pandas {peer['pandas']}, "
        f"numpy {peer['numpy']}, Python {peer['python']})"
        if peer
        else f"anjana {ANJANA_VERSION} (not run)"
    )
    return [
        f"- **Mondrian**: `anonymize(df, qi, k=k)` (strict; no hierarchies, so categories are ordered sets "
        f"published as `a|b|…`, numbers as `lo-hi`), best of {repeats} after one warm-up, in-process. NCP is "
        "the algorithm's own (Ghinita et al.: range ÷ column span for numbers, (values in the set − 1) ÷ "
        "(distinct values − 1) for categories), equal to `utility()` without hierarchies. The reference "
        f"figures are **issue 4's measurements** of github.com/qiyuangong/Mondrian (strict, categories "
        "ordered, Python; its time is its own partitioning clock), not rerun here: this session has no way "
        "to fetch that repository. Its NCP counts the span from the lowest to the highest category of a "
        "partition, privdb's the values present, so the two NCPs are close but not the same definition.",
        f"- **1,000,000 rows**: Adult tiled, age + U{{-2..2}} clipped to 17..90, seed {SEED}; the "
        "harder variant redraws, for a random half of the records, one categorical quasi-identifier "
        "(uniform choice among the seven) from its Adult marginal. Each variant runs in a fresh process "
        "that reads the table from Parquet, notes its peak RSS (`ru_maxrss`), anonymises three times "
        "and notes the peak again: the peak includes the table (the column to its right) and the "
        f"release. For context, issue 4 measured {REF_MONDRIAN_BIG} (harder variant for ARX).",
        '- **Full-domain search**: `anonymize(df, qi, k=k, algorithm="lattice", hierarchies=<dir>, '
        f"suppression_limit={SUPPRESSION})` (metric `loss`, the optimum) against {anjana}'s "
        f"`k_anonymity_inner(df, [], qi, k, {SUPPRESSION * 100:g}, hierarchies)` (greedy: it raises the "
        "quasi-identifier with the most distinct values one level until the classes below k hold at most "
        "5 % of the records, which it then drops), its hierarchies the same CSVs read as its README "
        f"shows (`dict(pd.read_csv(..., header=None))`). Cold: best of {cold_repeats} whole processes "
        "(`python -c`: interpreter start, imports, reading adult.csv, anonymising, writing the release as "
        "CSV), minus the time each process reports for the write. anjana lives in "
        "`bench/.peers/anjana` (made by this script with `python -m venv` and `pip install "
        f"anjana=={ANJANA_VERSION}`), since it pins numpy 2.0.2, pandas 2.3.3 and pycanon 1.3.5 while the "
        "project has numpy 2.4 and pandas 3.",
        "- NCP of both releases by ONE function, privdb's `utility(adult, release, qi, hierarchies).ncp`: "
        "per cell, a hierarchy label costs (raw values under it − 1) ÷ (values in the hierarchy − 1), an "
        "age range `lo-hi` (hi − lo) ÷ (max − min age in the data), `*` and suppressed cells 1; mean over "
        "cells. anjana computes no loss measure (issue 4's 36.2 % was computed outside it); its dropped "
        'records are put back as suppressed (`*`). "privdb loss (own)" is the metric the search '
        "minimises, ARX's loss: age ranges also count hierarchy leaves, over the hierarchy's 100 ages "
        "rather than the data's span, hence the small gap to `utility()`. Node: the level of each "
        "quasi-identifier in the order " + ", ".join(QI) + '; "anjana k" is the k its release achieves '
        "by privdb's `check`; \"anjana loss (privdb's)\" scores anjana's node with privdb's search metric "
        "(lattice evaluation at the same k and limit), so it must not be below privdb's optimum. Issue 4's "
        "ARX 3.9.2 (Flash) at k = 10: "
        f"{REF_ARX['warm']} s warm JVM, {REF_ARX['cold']} s cold, NCP {_pct(REF_ARX['ncp'])}; anjana there "
        f"{REF_ANJANA['seconds']} s, NCP {_pct(REF_ANJANA['ncp'])}.",
        f'- **Checks**: privdb `check(table, qi, "{SENSITIVE}", distance="equal")` (k, distinct and entropy '
        "l, recursive c at the achieved l, equal-distance t) and `risk(table, qi, classes=result.classes)` "
        "(prosecutor / journalist / marketer, sample uniques), best of the repeats after a warm-up; "
        '"check, then risk" lets `risk` group the table again, as `privdb.anonymize.report` does today. '
        f"pycanon {machine.version('pycanon')} (the project venv's, installed `--no-deps`): its "
        "five functions once each, in a subprocess, after the table is loaded; each table gets a budget "
        f'of {budget:.0f} s, and a function still running when it is spent is stopped ("> s": a lower '
        "bound). pycanon has no risk measure. Tables: Adult's Mondrian k = 10 release, its k = 10 / l = 2 "
        "release (so that l and recursive c are not trivial), raw Adult (the most classes), the "
        "1,000,000-row k = 10 release. Recursive c: the smallest integer c with r₁ < c·(r_l + … + r_m) in "
        "every class; the oracle is plain pandas groupby and sorting (skipped on the 1M table); pycanon "
        "sorts the counts ascending (the definition sorts them descending) and returns NaN when l = 1.",
    ]


def markdown(
    mondrian: list[MondrianRow],
    big: dict[str, dict[str, Any]],
    lattice: list[ColdRun],
    checks: list[CheckRow],
    peer: dict[str, str] | None,
    args: argparse.Namespace,
    command: str,
    whole_command: str = "",
) -> str:
    table = report.table
    lines = [
        f"Written by `bench/anonymize/`; command: `{command}`",
        "",
        f"Machine: {machine_line(peer)}",
        "",
    ]
    lines += [
        "Adult (`data/adult/adult.csv`, 30,162 records), quasi-identifiers " + ", ".join(QI) + "; "
        f"sensitive {SENSITIVE}. Seconds are wall time. Ratios are the peer's figure ÷ privdb's (above 1× "
        "privdb is faster). The machine has 2 cores and other work ran at the same time: single figures can "
        "be noisy by ±30 %.",
        "",
        "### Mondrian on Adult",
        "",
        *table(MONDRIAN_COLS, mondrian_rows(mondrian)),
        "",
        f"### Mondrian at {args.rows:,} rows, k = {BIG_K}",
        "",
        *table(BIG_COLS, big_rows(big)),
        "",
        "### Optimal full-domain search (5 % suppression, the shipped hierarchies), from a cold process",
        "",
        *table(LATTICE_COLS, lattice_rows(lattice)),
        "",
        *arx_context(lattice),
        "",
        "### Privacy checks",
        "",
        *table(CHECK_COLS, check_rows(checks)),
        "",
        "Agreement (privdb / pycanon; `=` equal, `≠` not):",
        "",
        *table(AGREE_COLS, [agreement(r)[0] for r in checks]),
        "",
        "Targets:",
        "",
        *targets(mondrian, big, lattice, checks),
        "",
        "Settings:",
        "",
        *notes(peer, args.pycanon_budget, args.repeats, args.cold_repeats),
        whole_command,
    ]
    heading = "Anonymisation: Mondrian, full-domain search, checks; anjana and pycanon"
    return report.section("anonymize", heading, lines)
