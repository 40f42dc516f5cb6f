"""What bench.sql measures: the census table, its three queries and two privacy settings, the targets,
and SmartNoise's metadata for the same table (bench.quantiles uses it too). Standard library only."""

from __future__ import annotations

from typing import Any

from bench.harness.data import SETTINGS
from bench.harness.query import Query

__all__ = ["QUERIES", "SETTINGS", "TABLE", "smartnoise_metadata"]

SMARTNOISE_DELTA = 1e-5  # SmartNoise needs δ > 0 for its key-count thresholds (censor_dims)
TABLE = "people"
QUICK_ROWS = 200_000
TARGET_ROW, TARGET_UNIT = 1.5, 5.0  # privdb ÷ raw DuckDB, without and with a privacy unit

QUERIES = [
    Query("Q1", "COUNT(*) WHERE age > 30", f"COUNT(*) FROM {TABLE} WHERE age > 30"),
    Query(
        "Q2",
        "state: COUNT, SUM, AVG(income)",
        f"state, COUNT(*), SUM(income), AVG(income) FROM {TABLE} GROUP BY state",
    ),
    Query("Q3", "sex, education: COUNT", f"sex, education, COUNT(*) FROM {TABLE} GROUP BY sex, education"),
]


def smartnoise_sql(query: Query) -> str:
    """The query as SmartNoise runs it: its metadata names tables schema.table."""
    return query.qualified((TABLE,))


def smartnoise_metadata(meta: dict[str, Any], setting: str) -> dict[str, Any]:
    """SmartNoise's metadata for the table, with privdb's bounds (collection "", schema main)."""
    columns: dict[str, Any] = {}
    for name, col in meta["columns"].items():
        if name == "pid":
            continue
        if col["type"] in ("int", "float"):
            columns[name] = {"type": col["type"], "lower": col["lower"], "upper": col["upper"]}
        else:
            columns[name] = {"type": "string"}
    if setting == "row":
        table = {"row_privacy": True, **columns}
    else:
        table = {"max_ids": meta["max_contributions"], "pid": {"type": "int", "private_id": True}, **columns}
    return {"": {"main": {TABLE: table}}}
