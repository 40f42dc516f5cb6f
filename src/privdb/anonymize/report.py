"""Reading tables, and the report of a release (DESIGN.md's JSON), as JSON, HTML or PNG.

``read_table`` detects the delimiter and header the way DuckDB's CSV reader does (``,`` ``;`` tab) and keeps
row order; ``write_table`` writes with the same delimiter, atomically (nothing is left behind on error).
``release_report`` gathers parameters, achieved k / l / t, utility and risk into one dict;
``render_html`` / ``render_png`` draw it with the histogram of equivalence-class sizes.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import Classes
from privdb.anonymize.models import check, covers
from privdb.anonymize.risk import risk
from privdb.anonymize.tables import read_table, write_table
from privdb.anonymize.utility import utility

__all__ = ["read_table", "release_report", "render_html", "render_png", "table_report", "write_table"]


def table_report(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str | None = None,
    *,
    distance: str = "auto",
    hierarchy: Any = None,
    original: pd.DataFrame | None = None,
    hierarchies: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """k, l, t and risk of any table (``privdb check`` / ``privdb risk``); with ``original``, also whether
    every released value covers its record."""
    return _measures(table, qi, sensitive, distance, hierarchy, original, hierarchies)[0]


def _measures(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str | None,
    distance: str,
    hierarchy: Any,
    original: pd.DataFrame | None,
    hierarchies: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], Classes]:
    """``table_report``'s dict and the one grouping of ``table`` every measure used."""
    achieved = check(table, qi, sensitive, distance=distance, hierarchy=hierarchy)
    out = achieved.to_dict() | {"risk": risk(table, qi, classes=achieved.classes).to_dict()}
    if original is not None:
        out["coverage"] = covers(original, table, qi, hierarchies).to_dict()
    out["class_sizes"] = _size_counts(achieved.class_sizes)
    return out, achieved.classes


def release_report(
    original: pd.DataFrame,
    released: pd.DataFrame,
    qi: Sequence[str],
    *,
    sensitive: str | None,
    parameters: dict[str, Any],
    seconds: float,
    suppression: dict[str, Any],
    hierarchies: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """DESIGN.md's report: parameters, achieved k / l / t, utility, risk, seconds (and coverage, which must
    hold: a range never excludes a value of its class). The release is grouped once for all of them."""
    sens_hierarchy = (hierarchies or {}).get(sensitive) if sensitive else None
    released, original = _encoded(released, qi), _encoded(original, qi)
    achieved, classes = _measures(released, qi, sensitive, "auto", sens_hierarchy, original, hierarchies)
    k = parameters.get("k")
    loss = utility(original, released, qi, hierarchies, k=k if isinstance(k, int) else None, classes=classes)
    return {
        "parameters": parameters,
        "achieved": achieved.pop("achieved"),
        "diversity": {key: achieved.pop(key) for key in ("l_entropy", "recursive", "distance", "sensitive")},
        "utility": loss.to_dict(),
        "risk": achieved.pop("risk"),
        "suppression": suppression,
        "coverage": achieved.pop("coverage"),
        "records": achieved.pop("records"),
        "classes": achieved.pop("classes"),
        "class_sizes": achieved.pop("class_sizes"),
        "seconds": seconds,
    }


def _encoded(table: pd.DataFrame, qi: Sequence[str]) -> pd.DataFrame:
    """The table with its text quasi-identifiers as categoricals: the same values, hashed once here instead
    of again by every measure."""
    out = table.copy(deep=False)
    for c in qi:
        if c in out.columns and (out[c].dtype == object or pd.api.types.is_string_dtype(out[c])):
            out[c] = out[c].astype("category")
    return out


def _size_counts(sizes: np.ndarray) -> dict[str, int]:
    """How many classes have each size (JSON keys are strings)."""
    values, counts = np.unique(np.asarray(sizes, dtype=np.int64), return_counts=True)
    return {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}


def _histogram_png(report: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = {int(k): v for k, v in report.get("class_sizes", {}).items()}
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    if sizes:
        xs = sorted(sizes)
        ax.bar([str(x) if len(xs) <= 30 else x for x in xs], [sizes[x] for x in xs], color="#3b6ea8")
    k = report.get("achieved", {}).get("k")
    ax.set_title(f"Equivalence-class sizes (achieved k = {k})")
    ax.set_xlabel("records in the class")
    ax.set_ylabel("classes")
    if len(sizes) > 30:
        ax.set_xscale("log")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def render_png(report: dict[str, Any], path: str | Path) -> Path:
    """The class-size histogram with the headline figures in its title."""
    target = Path(path)
    target.write_bytes(_histogram_png(report))
    return target


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.4g}"
    return html.escape(str(value))


def render_html(report: dict[str, Any], path: str | Path) -> Path:
    """A self-contained page: the figures as tables and the histogram as an inline PNG."""
    import base64

    rows = []
    for section in ("achieved", "utility", "risk", "suppression"):
        block = report.get(section) or {}
        cells = "".join(
            f"<tr><th scope='row'>{html.escape(str(k))}</th><td>{_fmt(v)}</td></tr>"
            for k, v in block.items()
            if not isinstance(v, dict)
        )
        rows.append(f"<section><h2>{section}</h2><table>{cells}</table></section>")
    image = base64.b64encode(_histogram_png(report)).decode()
    params = html.escape(", ".join(f"{k}={v}" for k, v in (report.get("parameters") or {}).items()))
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>privdb release report</title>"
        "<style>body{font:15px system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse}"
        "th,td{padding:.2rem .8rem;border-bottom:1px solid #ddd;text-align:left}"
        "section{display:inline-block;vertical-align:top;margin:0 2rem 1rem 0}</style></head><body>"
        f"<h1>Release report</h1><p>{params}</p>{''.join(rows)}"
        f"<figure><img alt='histogram of equivalence-class sizes' src='data:image/png;base64,{image}'>"
        "<figcaption>Equivalence-class sizes</figcaption></figure></body></html>"
    )
    target = Path(path)
    target.write_text(page, encoding="utf-8")
    return target
