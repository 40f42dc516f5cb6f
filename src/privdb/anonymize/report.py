"""Reading tables, and the report of a release (DESIGN.md's JSON), as JSON, HTML or PNG.

``read_table`` detects the delimiter and header the way DuckDB's CSV reader does (``,`` ``;`` tab) and keeps
row order; ``write_table`` writes with the same delimiter, atomically (nothing is left behind on error).
``release_report`` gathers parameters, achieved k / l / t, utility and risk into one dict;
``render_html`` / ``render_png`` draw it with the histogram of equivalence-class sizes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import Classes, require_release_of
from privdb.anonymize.cells import CellPairs, cell_pairs
from privdb.anonymize.coverage import covers
from privdb.anonymize.models import check
from privdb.anonymize.report_page import histogram_png, render_html, render_png
from privdb.anonymize.risk import risk
from privdb.anonymize.tables import read_table, write_table
from privdb.anonymize.utility import utility

__all__ = [
    "histogram_png",
    "read_table",
    "release_report",
    "render_html",
    "render_png",
    "table_report",
    "write_table",
]


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
    pairs: Mapping[str, CellPairs] | None = None,
) -> tuple[dict[str, Any], Classes]:
    """``table_report``'s dict and the one grouping of ``table`` every measure used (``pairs``: the
    columns' ``cell_pairs`` against ``original``, made already)."""
    achieved = check(table, qi, sensitive, distance=distance, hierarchy=hierarchy)
    out = achieved.to_dict() | {"risk": risk(table, qi, classes=achieved.classes).to_dict()}
    if original is not None:
        out["coverage"] = covers(original, table, qi, hierarchies, pairs=pairs).to_dict()
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
    search_loss: Mapping[str, float] | None = None,
    distance: str = "auto",
) -> dict[str, Any]:
    """DESIGN.md's report: parameters, achieved k / l / t, utility, risk, seconds (and coverage, which must
    hold: a range never excludes a value of its class). The release is grouped once for all of them.

    ``search_loss`` (a full-domain release: the search's loss per quasi-identifier) becomes ``utility.ncp``
    and ``ncp_by_column``, the loss the search minimised; the measure of the released labels (a number's
    range width over its span) is then reported beside it as ``ncp_ranges`` and ``ncp_ranges_by_column``.
    ``distance``: t-closeness's, as ``models.check`` takes it (auto: hierarchical when ``hierarchies`` hold
    the sensitive column's)."""
    sens_hierarchy = (hierarchies or {}).get(sensitive) if sensitive else None
    released, original = _encoded(released, qi), _encoded(original, qi)
    tree = sens_hierarchy if distance in ("auto", "hierarchical") else None
    require_release_of(original, released, qi)
    pairs = {c: cell_pairs(original[c], released[c]) for c in qi}  # shared by coverage and utility
    achieved, classes = _measures(released, qi, sensitive, distance, tree, original, hierarchies, pairs)
    k = parameters.get("k")
    loss = utility(
        original, released, qi, hierarchies, k=k if isinstance(k, int) else None, classes=classes, pairs=pairs
    )
    return {
        "parameters": parameters,
        "achieved": achieved.pop("achieved"),
        "diversity": {key: achieved.pop(key) for key in ("l_entropy", "recursive", "distance", "sensitive")},
        "utility": _utility(loss.to_dict(), search_loss),
        "risk": achieved.pop("risk"),
        "suppression": suppression,
        "coverage": achieved.pop("coverage"),
        "records": achieved.pop("records"),
        "classes": achieved.pop("classes"),
        "class_sizes": achieved.pop("class_sizes"),
        "seconds": seconds,
    }


def _utility(measured: dict[str, Any], search_loss: Mapping[str, float] | None) -> dict[str, Any]:
    """The utility block: with the search's per-column loss, that loss as ``ncp`` and the labels' measure
    renamed ``ncp_ranges``."""
    if search_loss is None:
        return measured
    by_column = {c: float(search_loss[c]) for c in measured["ncp_by_column"]}
    return measured | {
        "ncp": float(np.mean(list(by_column.values()))) if by_column else 0.0,
        "ncp_by_column": by_column,
        "ncp_ranges": measured["ncp"],
        "ncp_ranges_by_column": measured["ncp_by_column"],
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
