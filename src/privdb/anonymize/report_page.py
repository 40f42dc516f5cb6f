"""The release report for people: an HTML page and the class-size histogram (PNG).

The page shows every figure of the JSON report as text a reader can take in (percentages, thousands
separators, lists as lists, "—" for what does not apply; never a Python repr), the information loss of each
quasi-identifier beside its coverage, and the class sizes both as a table and as the histogram.

Class sizes are binned when there are many: one bar per size up to 20 distinct sizes, else bins on the
1-2-5 sequence (10–19, 20–49, 50–99, …), each bar labelled with its number of classes, so that a release
of a million records with sizes from 10 to 50,000 still reads at a glance.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SizeBin", "histogram_png", "render_html", "render_png", "size_bins"]

_EXACT = 20


@dataclass(frozen=True)
class SizeBin:
    """Classes whose size lies in ``lo..hi`` (inclusive), and the records they hold."""

    lo: int
    hi: int
    classes: int
    records: int

    @property
    def label(self) -> str:
        return f"{self.lo:,}" if self.lo == self.hi else f"{self.lo:,}–{self.hi:,}"


def _edges(top: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, … up past ``top``."""
    edges: list[int] = []
    scale = 1
    while not edges or edges[-1] <= top:
        edges += [scale, 2 * scale, 5 * scale]
        scale *= 10
    return edges


def size_bins(class_sizes: dict[str, int]) -> list[SizeBin]:
    """The report's ``class_sizes`` (size → classes) as bins; empty bins left out."""
    sizes = sorted((int(size), int(count)) for size, count in class_sizes.items())
    if len(sizes) <= _EXACT:
        return [SizeBin(size, size, count, size * count) for size, count in sizes]
    edges = _edges(sizes[-1][0])
    out: list[SizeBin] = []
    for lo, nxt in itertools.pairwise(edges):
        inside = [(s, c) for s, c in sizes if lo <= s < nxt]
        if inside:
            out.append(SizeBin(lo, nxt - 1, sum(c for _, c in inside), sum(s * c for s, c in inside)))
    return out


def histogram_png(report: dict[str, Any]) -> bytes:
    """The class-size histogram: classes per size (or per bin of sizes), each bar labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = size_bins(report.get("class_sizes") or {})
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    if bins:
        bars = ax.bar([b.label for b in bins], [b.classes for b in bins], color="#3b6ea8")
        ax.bar_label(bars, labels=[f"{b.classes:,}" for b in bins], fontsize=8, padding=2)
        ax.margins(y=0.15)
        if len(bins) > 8:
            ax.tick_params(axis="x", labelrotation=45)
    k = (report.get("achieved") or {}).get("k")
    ax.set_title(f"Equivalence-class sizes (achieved k = {k})")
    ax.set_xlabel("records in the class" + (" (binned)" if any(b.lo != b.hi for b in bins) else ""))
    ax.set_ylabel("classes")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def render_png(report: dict[str, Any], path: str | Path, image: bytes | None = None) -> Path:
    """Write the histogram (``image`` if already drawn)."""
    target = Path(path)
    target.write_bytes(image if image is not None else histogram_png(report))
    return target


def _text(value: Any) -> str:
    """A value as a reader would write it (escaped): no reprs, ``None`` as a dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:,.4g}" if abs(value) >= 1e4 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{html.escape(str(k))} {_text(v)}" for k, v in value.items())
    return html.escape(str(value))


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * float(value):.2f} %"


def _table(title: str, rows: list[tuple[str, str]]) -> str:
    cells = "".join(
        f"<tr><th scope='row'>{html.escape(name)}</th><td>{value}</td></tr>" for name, value in rows
    )
    return f"<section><h2>{html.escape(title)}</h2><table>{cells}</table></section>"


_PARAMETERS = {
    "algorithm": "algorithm",
    "qi": "quasi-identifiers",
    "sensitive": "sensitive attribute",
    "k": "k asked",
    "l": "l asked",
    "diversity": "l-diversity",
    "c": "c (recursive)",
    "t": "t asked",
    "metric": "search metric",
    "suppression_limit": "suppression limit",
    "hierarchies": "hierarchies",
    "fix_labels": "labels fixed",
    "lattice_node": "lattice node (level per column)",
}


def _sections(report: dict[str, Any]) -> list[str]:
    params = report.get("parameters") or {}
    shown = [(label, _text(params[key])) for key, label in _PARAMETERS.items() if key in params]
    shown += [(str(key), _text(v)) for key, v in params.items() if key not in _PARAMETERS]
    achieved, div = report.get("achieved") or {}, report.get("diversity") or {}
    rec = div.get("recursive") or {}
    util, risk = report.get("utility") or {}, report.get("risk") or {}
    supp = report.get("suppression") or {}
    return [
        _table("Parameters", shown),
        _table(
            "Achieved",
            [
                ("k", _text(achieved.get("k"))),
                ("l (distinct)", _text(achieved.get("l"))),
                ("l (entropy)", _text(div.get("l_entropy"))),
                (f"recursive c for l = {_text(rec.get('l'))}", _text(rec.get("c"))),
                (f"t ({_text(div.get('distance'))} distance)", _text(achieved.get("t"))),
            ],
        ),
        _table(
            "Information loss",
            [
                ("NCP (mean over cells)", _pct(util.get("ncp"))),
                *(
                    [("NCP of the ranges (width ÷ span)", _pct(util["ncp_ranges"]))]
                    if "ncp_ranges" in util
                    else []
                ),
                ("discernibility", _text(util.get("discernibility"))),
                ("average class size", _text(util.get("avg_class_size"))),
                ("C_avg (average size ÷ k)", _text(util.get("c_avg"))),
                ("cells generalised", _pct(util.get("generalised_cells"))),
            ],
        ),
        _table(
            "Re-identification risk",
            [
                ("prosecutor, highest", _pct(risk.get("prosecutor_max"))),
                ("prosecutor, average", _pct(risk.get("prosecutor_avg"))),
                ("journalist, highest", _pct(risk.get("journalist_max"))),
                ("journalist, average", _pct(risk.get("journalist_avg"))),
                ("marketer", _pct(risk.get("marketer"))),
                ("sample uniques", _pct(risk.get("sample_uniques"))),
                ("population model", _text(risk.get("model"))),
            ],
        ),
        _table(
            "Suppression",
            [
                ("records suppressed", _text(supp.get("records", util.get("suppressed")))),
                ("share of records", _pct(util.get("suppression_rate"))),
                ("why", _text(supp.get("reason"))),
            ],
        ),
    ]


def _per_column(report: dict[str, Any]) -> str:
    loss = (report.get("utility") or {}).get("ncp_by_column") or {}
    missed = (report.get("coverage") or {}).get("by_column") or {}
    rows = "".join(
        f"<tr><th scope='row'>{html.escape(str(c))}</th><td>{_pct(share)}</td>"
        f"<td>{_text(missed.get(c))}</td></tr>"
        for c, share in loss.items()
    )
    return (
        "<section><h2>Loss per quasi-identifier</h2><table><tr><th scope='col'>column</th>"
        "<th scope='col'>NCP</th><th scope='col'>values not covering their record</th></tr>"
        f"{rows}</table></section>"
    )


def _classes(report: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{b.label}</td><td>{b.classes:,}</td><td>{b.records:,}</td></tr>"
        for b in size_bins(report.get("class_sizes") or {})
    )
    return (
        f"<section><h2>Class sizes</h2><p>{_text(report.get('records'))} records in "
        f"{_text(report.get('classes'))} classes.</p><table><tr><th scope='col'>records in the class</th>"
        f"<th scope='col'>classes</th><th scope='col'>records</th></tr>{rows}</table></section>"
    )


def render_html(report: dict[str, Any], path: str | Path, image: bytes | None = None) -> Path:
    """A self-contained page: the figures as tables, the histogram inline (``image`` if already drawn)."""
    png = base64.b64encode(image if image is not None else histogram_png(report)).decode()
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>privdb release report</title>"
        "<style>body{font:15px system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse}"
        "th,td{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}"
        "td{font-variant-numeric:tabular-nums}"
        "section{display:inline-block;vertical-align:top;margin:0 2rem 1rem 0}</style></head><body>"
        f"<h1>Release report</h1>{''.join(_sections(report))}{_per_column(report)}{_classes(report)}"
        f"<figure><img alt='histogram of equivalence-class sizes' src='data:image/png;base64,{png}'>"
        "<figcaption>Equivalence-class sizes</figcaption></figure></body></html>"
    )
    target = Path(path)
    target.write_text(page, encoding="utf-8")
    return target
