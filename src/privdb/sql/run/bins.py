"""The engine query of a per-unit value's histogram over power-of-two bins (privdb.mechanisms.approx_bounds):
ZetaSQL's implicit bounds read it before the aggregate whose bounds it finds.

It reads the plan's own per-unit relation (the values as the aggregate sees them, each already within the
owner's bounds) and keeps at most ``G`` of each unit's values (one per group, chosen at random), so a unit
changes at most ``G`` bin counts by one: the histogram's sensitivity the noise is sized for. Each value is
told by its sign and the exponent ``e = ⌈log₂|v|⌉`` of its bin's right edge, with the two flags that
correct ``e`` where ``log₂`` rounds across a power of two; 0 is the smallest bin's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from privdb.backends.names import quote
from privdb.database import Database
from privdb.errors import UnsupportedQuery
from privdb.mechanisms.approx_bounds import lowest_exponent
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import for_engine, plan_target

__all__ = ["bin_counts", "bins_sql"]


def bins_sql(db: Database, plan: Plan, column: str) -> str:
    """The bound engine query of ``column``'s bins over the plan's per-unit relation: rows (s, e, lo, hi,
    n). Refused, free, where the engine cannot run it (no base-2 logarithm)."""
    backend, _, _, from_ = plan_target(db, plan)
    relation = plan.relation
    if from_ is None or relation is None or relation.meta.privacy_unit is None:
        raise UnsupportedQuery("bounds are found from the data for a per-unit aggregate only")
    unit, v, groups = quote(relation.meta.privacy_unit), quote(column), int(relation.meta.max_groups)
    drawn = f"SELECT {v} AS v, {unit} AS u, RANDOM() AS rnd FROM {from_} AS _b"
    chosen = f"SELECT v, ROW_NUMBER() OVER (PARTITION BY u ORDER BY rnd) AS gr FROM ({drawn}) AS _r"
    signed = (
        "SELECT CASE WHEN v < 0 THEN -1 ELSE 1 END AS s, CASE WHEN v = 0 THEN NULL ELSE "
        f"CAST(CEIL(LOG2(ABS(v))) AS INTEGER) END AS e, ABS(v) AS a FROM ({chosen}) AS _c "
        f"WHERE gr <= {groups} AND v IS NOT NULL"
    )
    sql = (
        "SELECT s, e, CASE WHEN e IS NOT NULL AND a <= POWER(2.0, e - 1) THEN 1 ELSE 0 END AS lo, "
        "CASE WHEN e IS NOT NULL AND a > POWER(2.0, e) THEN 1 ELSE 0 END AS hi, COUNT(*) AS n "
        f"FROM ({signed}) AS _d GROUP BY 1, 2, 3, 4"
    )
    sql = for_engine(backend, None, sql)
    try:
        backend.bind(sql)
    except Exception:  # the engine lacks a function the bins need: refused before any read
        raise UnsupportedQuery(
            "this engine cannot find bounds from the data (BigQuery's implicit bounds); give the aggregate "
            "contribution_bounds_per_group => (lower, upper)"
        ) from None
    return sql


def bin_counts(rows: Sequence[Mapping[Any, Any]], integral: bool) -> dict[tuple[int, int], int]:
    """(sign, exponent) → count from the bins query's rows, each exponent corrected by its flags and 0 (a
    NULL exponent, NaN in a frame) put in the smallest bin."""
    low = lowest_exponent(integral)
    out: dict[tuple[int, int], int] = {}
    for row in rows:
        e = row["e"]
        j = low if e is None or e != e else int(e) - int(row["lo"]) + int(row["hi"])
        key = (int(row["s"]), max(j, low))
        out[key] = out.get(key, 0) + int(row["n"])
    return out
