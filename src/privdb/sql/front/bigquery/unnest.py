"""ZetaSQL's ``FROM t CROSS JOIN UNNEST([1, 2, 3]) AS x``: the table joined with a literal array.

The array is a public relation (its values are in the query: privdb.sql.front.relation.literal). BigQuery
aggregates each privacy unit over the joined rows, so the join goes into the per-unit subquery
(privdb.sql.front.bigquery.plan) with the table: DP-SELECT's relation bounds each unit to the owner's (or
the query's narrower) rows and groups after the join, so a unit's rows multiplied by the array's length
still count within its bound (docs/proofs/sql.md, "Relations"). An UNNEST of a column or an expression is
refused by that relation before any data is read.
"""

from __future__ import annotations

from sqlglot import exp

from privdb.errors import UnsupportedQuery

__all__ = ["split_unnest"]


def _is_unnest(join: exp.Join) -> bool:
    return isinstance(join.this, exp.Unnest)


def split_unnest(select: exp.Select) -> tuple[list[exp.Join], list[exp.Join]]:
    """The select's ``CROSS JOIN UNNEST(…)`` joins (or ``, UNNEST(…)``), and its other joins; an UNNEST
    joined otherwise is refused with the form read."""
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    arrays = [j for j in joins if _is_unnest(j)]
    for join in arrays:
        side = str(join.args.get("side") or "").upper()
        if side or join.args.get("on") is not None or join.args.get("using"):
            raise UnsupportedQuery(
                f"{side or 'a'} JOIN UNNEST(…) with a condition is not read; write FROM t CROSS JOIN "
                "UNNEST([1, 2, 3]) AS x (every row of t with every element)"
            )
    return arrays, [j for j in joins if not _is_unnest(j)]
