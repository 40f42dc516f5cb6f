"""ZetaSQL's implicit bounds: which of a BigQuery-spelled query's aggregates have their bounds found from the
data, and the query with the bounds found written in (privdb.sql.implicit runs the two steps).

In BigQuery's spelling a COUNT, SUM or AVG per privacy unit written without ``contribution_bounds_per_group``
has its per-unit bounds found from the data by ZetaSQL's approximate bounds (privdb.mechanisms.approx_bounds),
with half of that aggregate's share of ε. privdb does the same for a query over one table with a privacy
unit, grouped or not, without ``max_rows_contributed``, UNNEST or public groups (those keep the owner's
bounds); the owner's bounds still hold (a value is clamped to them first, and the bounds found are met with
them). One difference from ZetaSQL: the bounds are found once per aggregate over all its groups (a unit adds
one value to each of at most G bins), where ZetaSQL finds them in each group apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sqlglot import exp

from privdb.catalog.metadata import TableMeta
from privdb.sql.front.bigquery.plan import value_range
from privdb.sql.front.bigquery.unnest import split_unnest
from privdb.sql.front.query import Bounds, DPQuery

__all__ = ["Implicit", "aggregates", "implicit_items", "with_found"]

_PER_UNIT = (exp.Count, exp.Sum, exp.Avg)


@dataclass(frozen=True)
class Implicit:
    """An aggregate whose bounds are found from the data: its select item, its column in the per-unit
    relation, whether its bounds are widened to be symmetric (SUM, COUNT: ZetaSQL's) and whether its
    values are whole numbers (the bins' smallest edge)."""

    item: int
    column: str
    symmetric: bool
    integral: bool
    known: tuple[float, float]  # the values it can take by the metadata

    def placeholder(self) -> tuple[float, float]:
        """Bounds inside ``known`` that still clamp: the query written with them is checked (planned,
        its engine SQL bound) before the bounds are found, so that a refusal comes before any spend."""
        lo, hi = self.known
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, (lo + hi) / 2 if hi > lo else hi
        if math.isfinite(hi):
            return hi - 1, hi
        return (lo, lo + 1) if math.isfinite(lo) else (-1.0, 1.0)


def aggregates(query: DPQuery) -> int:
    """How many of the select items hold an aggregate (each gets an equal share of ε)."""
    return sum(1 for node in query.select.expressions if next(node.find_all(exp.AggFunc), None) is not None)


def implicit_items(query: DPQuery, meta: TableMeta) -> tuple[Implicit, ...]:
    """The aggregates of ``query`` (BigQuery's spelling, over the table of ``meta``) whose bounds are found
    from the data; () where none are (the owner's and the query's bounds are the plan's)."""
    options = query.bigquery
    if options is None or meta.privacy_unit is None or options.max_rows is not None:
        return ()
    if split_unnest(query.select)[0]:  # CROSS JOIN UNNEST: the owner's bounds
        return ()
    out = []
    for n, node in enumerate(query.select.expressions):
        agg = node.unalias()
        if not isinstance(agg, _PER_UNIT) or options.bounds_of(n) is not None:
            continue
        arg = agg.this
        whole = isinstance(arg, exp.Column) and meta.columns.get(arg.name) is not None
        integral = isinstance(agg, exp.Count) or (
            isinstance(agg, exp.Sum) and whole and meta.column(arg.name).type == "int"
        )
        name = node.alias or f"{type(agg).__name__.lower()}_{n + 1}"
        out.append(Implicit(n, name, not isinstance(agg, exp.Avg), integral, value_range(agg, meta, True)))
    return tuple(out)


def with_found(query: DPQuery, found: dict[int, tuple[float, float]], epsilon: float) -> DPQuery:
    """``query`` at ``epsilon`` with each item's bounds found written in as its
    ``contribution_bounds_per_group``."""
    options = query.bigquery
    assert options is not None
    written = tuple((i, Bounds("group", lo, hi)) for i, (lo, hi) in sorted(found.items()))
    return replace(query, epsilon=epsilon, bigquery=replace(options, bounds=options.bounds + written))
