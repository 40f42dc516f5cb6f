"""The notebook's view of an answer: an HTML table of the values with their 95% intervals, the cost, and a
small error-bar chart (inline SVG drawn by matplotlib) of the numeric statistics. Every text shown (column
names, keys, values) is escaped: an answer's names and values come from analysts' queries and owners'
data, and a notebook page runs what it is given.

Works on plain values (columns, rows, per-column intervals), not on ``Result``, which calls it.
"""

from __future__ import annotations

import html
import io
import math
import numbers
from collections.abc import Sequence
from typing import Any

__all__ = ["CHART_COLUMNS", "CHART_ROWS", "error_bars_svg", "page"]

CHART_COLUMNS = 3  # statistics charted side by side, at most
CHART_ROWS = 25  # rows charted per statistic, at most (the first ones, in the answer's order)
_LABEL = 24  # characters of a row's label kept in the chart


def _number(value: Any) -> float | None:
    """A finite real number as float; None for anything else (text, None, NaN, booleans)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _label(text: str) -> str:
    """A row label for matplotlib: cut short, and each ``$`` escaped so that no text is read as math."""
    cut = text if len(text) <= _LABEL else text[: _LABEL - 1] + "…"
    return cut.replace("$", r"\$")


def error_bars_svg(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], intervals: dict[str, list[Any]]
) -> str | None:
    """One small panel per numeric statistic with intervals (at most ``CHART_COLUMNS``, the first
    ``CHART_ROWS`` rows): each row's value as a dot and its 95% interval as a bar, rows labelled by the
    answer's columns without intervals (its keys). None when no statistic can be drawn."""
    shown = rows[:CHART_ROWS]
    panels: list[tuple[str, list[tuple[int, float, float, float]]]] = []
    for c, col in enumerate(columns):
        if col not in intervals:
            continue
        points = []
        for r, row in enumerate(shown):
            interval = intervals[col][r] if r < len(intervals[col]) else None
            value = _number(row[c])
            if interval is None or value is None:
                continue
            low, high = _number(interval[0]), _number(interval[1])
            if low is not None and high is not None:
                points.append((r, value, low, high))
        if points:
            panels.append((col, points))
    if not panels:
        return None
    panels = panels[:CHART_COLUMNS]
    keys = [c for c, col in enumerate(columns) if col not in intervals]
    labels = [
        _label(", ".join(str(row[c]) for c in keys) if keys else f"row {r}") for r, row in enumerate(shown)
    ]
    # matplotlib is a dependency, but loading it costs about a second: only when a chart is drawn
    import matplotlib as mpl
    from matplotlib.figure import Figure

    # text as <text> elements (escaped by matplotlib's SVG writer), one short font list: a small SVG
    style = {"svg.fonttype": "none", "font.size": 7, "font.family": "sans-serif"}
    style["font.sans-serif"] = ["DejaVu Sans"]
    with mpl.rc_context(style):  # type: ignore[arg-type]  # the stubs want literal keys
        figure = Figure(figsize=(0.8 + 2.2 * len(panels), 0.5 + 0.18 * len(shown)))
        axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
        for ax, (col, points) in zip(axes, panels, strict=True):
            ys = [p[0] for p in points]
            ax.hlines(ys, [p[2] for p in points], [p[3] for p in points], color="#3b6ea8", linewidth=2)
            ax.plot([p[1] for p in points], ys, "o", color="#1d3557", markersize=3)
            ax.set_title(_label(col), fontsize=7)
            ax.grid(axis="x", linewidth=0.3)
            ax.tick_params(labelsize=6)
        axes[0].set_yticks(range(len(shown)), labels=labels)
        axes[0].set_ylim(len(shown) - 0.5, -0.5)  # the first row on top, as in the table
        figure.tight_layout(pad=0.8)  # room for the browser's own text metrics
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    svg = out.getvalue()
    return svg[svg.index("<svg") :]  # inline: without the XML declaration and DOCTYPE


def page(table: str, caption: str, chart: str | None) -> str:
    """The notebook cell's HTML: the (already escaped) table, the caption (escaped here) and the chart."""
    figure = "" if chart is None else f'<div class="privdb-chart">{chart}</div>'
    return f'<div class="privdb-result">{table}<p>{html.escape(caption)}</p>{figure}</div>'
