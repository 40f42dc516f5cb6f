"""bench.anonymize's tables: Mondrian, Mondrian at scale, the full-domain search, the checks and their
agreement with pycanon, and the context of issue 4's figures."""

from __future__ import annotations

import math
from typing import Any

from bench.anonymize.checks import CheckRow
from bench.anonymize.measure import ColdRun, MondrianRow
from bench.anonymize.spec import BIG_ROWS, PYCANON_FUNCS, QI, REF_ANJANA, REF_ARX, REF_BIG, REF_MONDRIAN
from bench.harness import machine
from bench.harness.report import ratio
from bench.harness.report import secs as _s

LOAD_AT_START = machine.load(", ")


def machine_line(peer: dict[str, str] | None) -> str:
    names = ("privdb", "pandas", "numpy", "pyarrow", "pycanon")
    peer_libs = ", ".join(f"{k} {v}" for k, v in peer.items() if k != "python") if peer else "anjana not run"
    return machine.describe(
        machine.versions(names),
        f"peer venv: {peer_libs}",
        f"load average (1, 5, 15 min) at the start {LOAD_AT_START}, at the end {machine.load(', ')}",
    )


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f} %"


MONDRIAN_COLS = ["k", "privdb s", "privdb NCP", "classes", "smallest class", "reference s", "reference NCP"]
MONDRIAN_COLS += ["reference ÷ privdb"]


def mondrian_rows(rows: list[MondrianRow]) -> list[list[str]]:
    out = []
    for r in rows:
        ref = r.k == 10
        out.append(
            [
                str(r.k),
                _s(r.seconds),
                _pct(r.ncp),
                f"{r.classes:,}",
                str(r.smallest),
                _s(REF_MONDRIAN["seconds"], 2) if ref else "—",
                _pct(REF_MONDRIAN["ncp"]) if ref else "—",
                ratio(REF_MONDRIAN["seconds"], r.seconds) if ref else "—",
            ]
        )
    return out


BIG_COLS = ["variant", "rows", "distinct QI tuples", "privdb s (best)", "first run s", "NCP", "classes"]
BIG_COLS += [
    "smallest",
    "peak RSS MiB",
    "RSS with table only MiB",
    "reference (issue 4)",
    "reference ÷ privdb",
]


def big_rows(big: dict[str, dict[str, Any]]) -> list[list[str]]:
    out = []
    for name, r in big.items():
        if "error" in r:
            out.append([name, "failed: " + r["error"], *["—"] * (len(BIG_COLS) - 2)])
            continue
        out.append(
            [
                name,
                f"{r['rows']:,}",
                f"{r['tuples']:,}",
                _s(min(r["times"])),
                _s(r["times"][0]),
                _pct(r["ncp"]),
                f"{r['classes']:,}",
                str(r["k"]),
                f"{r['rss_peak_mib']:,.0f}",
                f"{r['rss_table_mib']:,.0f}",
                *_big_reference(name, r),
            ]
        )
    return out


def _big_reference(name: str, r: dict[str, Any]) -> list[str]:
    if name not in REF_BIG or r["rows"] != BIG_ROWS:
        return ["—", "—"]
    label, lo, hi = REF_BIG[name]
    s = min(r["times"])
    return [label, f"{lo / s:,.1f}–{hi / s:,.1f}×"]


LATTICE_COLS = ["k", "privdb cold s", "in-process s", "privdb node", "privdb loss (own)", "privdb NCP"]
LATTICE_COLS += [
    "privdb suppressed",
    "anjana cold s",
    "in-process s",
    "anjana node",
    "anjana loss (privdb's)",
]
LATTICE_COLS += ["anjana NCP", "anjana suppressed", "anjana k", "anjana ÷ privdb (cold)"]


def _node(node: dict[str, int] | None) -> str:
    return "—" if not node else "".join(str(node[c]) for c in QI)


def lattice_rows(rows: list[ColdRun]) -> list[list[str]]:
    by = {(r.tool, r.k): r for r in rows}
    out = []
    for k in sorted({r.k for r in rows}):
        p, a = by.get(("privdb", k)), by.get(("anjana", k))
        cells = [str(k)]
        if p is None or p.error:
            cells += ["failed: " + ((p.error if p else None) or "not run"), *["—"] * 5]
        else:
            cells += [_s(p.seconds), _s(p.inner), _node(p.node), _pct(p.loss), _pct(p.ncp)]
            cells.append(f"{p.suppressed:,}")
        if a is None or a.error:
            cells += ["failed: " + a.error if a and a.error else "not run", *["—"] * 7]
        else:
            cells += [_s(a.seconds), _s(a.inner), _node(a.node), _pct(a.loss), _pct(a.ncp)]
            cells += [f"{a.suppressed:,}", str(a.achieved_k)]
            cells.append(ratio(a.seconds, p.seconds if p else None))
        out.append(cells)
    return out


CHECK_COLS = ["table", "rows", "classes", "privdb s (one grouping)", "privdb s (check, then risk)"]
CHECK_COLS += ["pycanon s (5 checks)", "pycanon ÷ privdb", "pycanon per check s"]


def _pycanon_total(r: CheckRow) -> tuple[float | None, bool]:
    """pycanon's total seconds and whether it was stopped (then the total is a lower bound)."""
    pc = r.pycanon
    if not pc or "results" not in pc:
        return None, False
    spent = sum(v["seconds"] for v in pc["results"].values())
    return (r.budget if pc.get("stopped") else spent), bool(pc.get("stopped"))


def check_rows(rows: list[CheckRow]) -> list[list[str]]:
    out = []
    for r in rows:
        total, stopped = _pycanon_total(r)
        pc = r.pycanon
        if pc.get("error") and not pc.get("results"):
            per = "failed: " + pc["error"]
        else:
            parts = [
                f"{n.replace('_diversity', '').replace('_anonymity', '')} {v['seconds']:.2f}"
                for n, v in pc.get("results", {}).items()
            ]
            if pc.get("stopped"):
                parts.append(f"{pc['stopped']['name']} > {pc['stopped']['after']:.0f} (stopped)")
            per = ", ".join(parts)
        out.append(
            [
                r.name,
                f"{r.rows:,}",
                f"{r.classes:,}",
                _s(r.together, 4),
                _s(r.separate, 4),
                ("> " if stopped else "") + _s(total, 2),
                ("> " if stopped else "") + ratio(total, r.together),
                per,
            ]
        )
    return out


AGREE_COLS = ["table", "k privdb / pycanon", "l", "entropy l (pycanon: int)", "t (equal distance)"]
AGREE_COLS += ["recursive (c, l): privdb / oracle / pycanon", "prosecutor risk max / avg (privdb)"]


def _same(a: Any, b: Any, tol: float = 1e-9) -> str:
    if a is None or b is None:
        return ""
    return "=" if abs(float(a) - float(b)) <= tol else "≠"


def agreement(r: CheckRow) -> tuple[list[str], list[bool]]:
    v = r.values
    res = r.pycanon.get("results", {})

    def got(name: str) -> Any:
        return res[name]["value"] if name in res else None

    pk, pl, pe, pr, pt = (got(n) for n in PYCANON_FUNCS)
    ent_int = math.floor(v["l_entropy"] + 1e-9) if v["l_entropy"] is not None else None
    rec_c, rec_l = (pr if pr is not None else [None, None])[:2]
    oracle = "—" if r.oracle_c is None else _s(r.oracle_c, 0)
    cells = [
        r.name,
        f"{v['k']} / {_s(pk, 0)} {_same(v['k'], pk)}",
        f"{v['l']} / {_s(pl, 0)} {_same(v['l'], pl)}",
        f"{_s(v['l_entropy'], 3)} → {ent_int} / {_s(pe, 0)} {_same(ent_int, pe)}",
        f"{_s(v['t'], 4)} / {_s(pt, 4)} {_same(v['t'], pt)}",
        f"({_s(v['recursive_c'], 0)}, {v['recursive_l']}) / ({oracle}, {v['recursive_l']}) / "
        f"({_s(rec_c, 0)}, {_s(rec_l, 0)})",
        f"{v['prosecutor_max']:.4f} / {v['prosecutor_avg']:.4f}",
    ]
    flags = [
        _same(a, b) == "="
        for a, b in ((v["k"], pk), (v["l"], pl), (ent_int, pe), (v["t"], pt))
        if b is not None
    ]
    return cells, flags


def arx_context(lattice: list[ColdRun]) -> list[str]:
    p = next((r for r in lattice if r.tool == "privdb" and r.k == 10 and r.seconds), None)
    a = next((r for r in lattice if r.tool == "anjana" and r.k == 10 and r.seconds), None)
    if p is None or p.seconds is None:
        return []
    inner = p.inner or p.seconds
    here = f"; measured here {a.seconds:.2f} s, NCP {_pct(a.ncp)}" if a and a.seconds else ""
    start = f"privdb {p.startup:.2f} s" if p.startup else ""
    if a and a.startup:
        start += f", anjana {a.startup:.2f} s"
    return [
        "Of the cold time, a process that only starts Python and imports pandas and the library takes "
        f"(best of the same repeats): {start}.",
        "",
        f"Context at k = 10 (issue 4's figures, not rerun): ARX 3.9.2 (Flash) {REF_ARX['cold']} s "
        f"from a cold JVM ({REF_ARX['cold'] / p.seconds:.1f}× privdb's cold {p.seconds:.2f} s), "
        f"{REF_ARX['warm']} s warm ({REF_ARX['warm'] / p.seconds:.1f}× privdb's cold time, "
        f"{REF_ARX['warm'] / inner:.0f}× its in-process time), NCP {_pct(REF_ARX['ncp'])}; anjana "
        f"{REF_ANJANA['seconds']} s, NCP "
        f"{_pct(REF_ANJANA['ncp'])}{here}.",
    ]
