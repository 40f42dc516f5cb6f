"""``USING SMOOTH``: MEDIAN and QUANTILE answered with Laplace noise scaled to the smooth sensitivity of the
order statistic (Nissim, Raskhodnikova, Smith 2007; privdb.mechanisms.smooth), decided before anything is
read.

*What is refused, and why.* Every other aggregate (USING SMOOTH names the quantiles' noise; write them in a
query of their own); ACCURACY (the parser: the noise depends on the data); GROUP BY keys without a public
domain (their key selection would need a δ of its own: declare the values); and any relation where one
unit reaches more than one value of the column — a privacy unit with ``max_contributions > 1`` or a join
that repeats rows — because the smooth bound is for one value changed, and a unit moving ``m`` values
would need the bound at distance ``m·k``. A table with a privacy unit and ``max_contributions: 1`` is
answered: the per-unit bounding keeps one row per unit, so a unit is one value.

*The shares.* Each quantile gets its share of ε and δ; a unit reaches at most ``G`` groups (``2G`` under
substitution), so each group's answer gets ``1/G`` of the share of both (basic composition).
"""

from __future__ import annotations

import dataclasses
import math

from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql.front.checks.validate import Resolved
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.types import Histogram

__all__ = ["check_smooth", "smooth_histogram"]


def check_smooth(query: DPQuery, resolved: Resolved, m: int, needs_threshold: bool) -> None:
    """Refuse, from the text and metadata alone, what USING SMOOTH cannot answer (module doc)."""
    others = [a for a in resolved.aggregates if a.kind != "quantile"]
    if others:
        raise UnsupportedQuery(
            f"USING SMOOTH applies to MEDIAN and QUANTILE only, not to {others[0].output}: ask for the "
            "other aggregates in a query without USING SMOOTH"
        )
    if needs_threshold:
        raise UnsupportedQuery(
            "USING SMOOTH with GROUP BY needs public key values: declare `values: [...]` for the keys in the "
            "metadata (key selection is not combined with smooth sensitivity)"
        )
    if m != 1:
        raise UnsupportedQuery(
            f"USING SMOOTH needs each privacy unit to contribute one value, but one unit reaches up to {m} "
            "rows here (max_contributions, or a join repeating rows): set max_contributions: 1, or drop "
            "USING SMOOTH to use the exponential mechanism"
        )


def smooth_histogram(hist: Histogram, delta: float, what: str) -> Histogram:
    """The quantile's grid, marked for smooth-sensitivity noise at ``delta`` per group."""
    top = hist.lo + hist.points * hist.width
    if not (math.isfinite(hist.width) and hist.width > 0 and math.isfinite(top)):
        raise InvalidParameter(
            f"{what}: the bounds of {hist.column.name!r} span more than float64 can divide into "
            f"{hist.cells} cells; declare narrower bounds (or rescale the column)"
        )
    return dataclasses.replace(hist, smooth_delta=delta)
