"""The row description of a prepared, unbound statement (``Describe`` of a statement), told without reading
any data or spending any budget.

* A DP-SELECT with aggregates: its plan (``explain``, free) names the output columns; each one that is not
  a key is followed by its interval columns ``<col>_ci95_low`` and ``<col>_ci95_high``, as
  ``Result.to_pandas()`` has them, except a ``MODE`` (a chosen value has no interval). Types come from
  the plan too: counts bigint, a mode text, other aggregates and expressions double precision, a key its
  column's declared type. The statement's ``$n`` parameters are read as ``NULL`` for this: they change the
  filters, never the columns.
* A catalog query without parameters: run on an empty shadow of the session's tables (free); its columns.
* Anything else (a record release, a plain SELECT, a statement the plan refuses, a catalog query with
  parameters): ``None``, sent as ``NoData``; the columns then come with the portal's ``Describe``, after
  ``Bind``. A refusal here is not reported: the statement is refused, with its error, when it is run.
"""

from __future__ import annotations

from typing import Any

from privdb.server.pgwire.encoding import BOOL, DATE, FLOAT8, INT8, TEXT, TIMESTAMP, Answer
from privdb.server.pgwire.names import pg_name

__all__ = ["KEY_TYPES", "from_plan"]

KEY_TYPES = {"int": INT8, "float": FLOAT8, "bool": BOOL, "date": DATE, "timestamp": TIMESTAMP}
_COUNTS = {"count_star", "count", "count_distinct"}


def _typed(entry: dict[str, Any], declared: dict[str, int]) -> int:
    if entry["role"] == "key":
        return declared.get(entry["column"], TEXT)
    kind = entry.get("kind")
    return INT8 if kind in _COUNTS else TEXT if kind == "mode" else FLOAT8


def from_plan(plan: dict[str, Any], tables: list[dict[str, Any]]) -> Answer | None:
    """The columns and types of a DP answer, from its ``explain`` (None for a record release)."""
    if "release" in plan:
        return None
    spec = next((t for t in tables if t.get("name") == plan.get("table")), {})
    declared = {
        name: KEY_TYPES.get(str(column.get("type")), TEXT)
        for name, column in (spec.get("columns") or {}).items()
    }
    columns: list[str] = []
    types: list[int] = []
    for entry in plan["columns"]:
        if entry["role"] == "hidden":
            continue
        oid = _typed(entry, declared)
        columns.append(entry["column"])
        types.append(oid)
        if entry["role"] != "key" and entry.get("kind") != "mode":
            ends = INT8 if oid == INT8 else FLOAT8
            columns += [f"{entry['column']}_ci95_low", f"{entry['column']}_ci95_high"]
            types += [ends, ends]
    return Answer("SELECT 0", [pg_name(c) for c in columns], types)
