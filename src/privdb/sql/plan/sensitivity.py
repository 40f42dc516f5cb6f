"""The noisy statistics a plan is made of and their sensitivities: per-group sums (Laplace, geometric or
Gaussian noise) and the histograms of order statistics and modes (the exponential mechanism).

Sensitivities (docs/proofs/sql.md), with ``m`` = max_contributions, ``G`` = max_groups (both 1 without a
privacy unit), bounds ``[L, U]``, ``B = max(|L|, |U|)``:

| statistic | add/remove | substitute, no GROUP BY | substitute, GROUP BY |
|-----------|-----------|--------------------------|----------------------|
| count     | m         | m                        | 2m                   |
| sum       | m·B       | m·max(U − L, B)          | 2m·B                 |
| sum of squares | m·B²  | m·B²                     | 2m·B²                |

The L1 sensitivity covers the whole vector of groups: a unit's rows are bounded to ``m`` in total over at
most ``G`` groups, so at most ``G`` coordinates change (``2G`` under substitution).
"""

from __future__ import annotations

import math

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter, UnsupportedQuery
from privdb.sql.front.expr.totality import check_summable
from privdb.sql.plan.types import Histogram, Statistic

__all__ = [
    "DISTINCT_KINDS",
    "Histogram",
    "Statistic",
    "make_histogram",
    "make_statistic",
    "numeric_bounds",
    "unit_reach",
]

QUANTILE_CELLS = 2**14  # steps of a float grid for order statistics (2^14 + 1 points)
MAX_INT_CELLS = 2**16  # int columns of at most this span get one cell per integer
MAX_MODE_VALUES = 100_000
DISTINCT_KINDS = ("distinct", "distinct_unit")


def numeric_bounds(column: ColumnMeta, aggregate: str) -> tuple[float, float]:
    """A numeric column's public ``[L, U]``, or the error naming what ``aggregate`` needs."""
    if not column.numeric:
        raise UnsupportedQuery(f"{aggregate}({column.name}): {column.name!r} is {column.type}, not numeric")
    if column.lower is None or column.upper is None:
        raise InvalidParameter(
            f"{aggregate}({column.name}) needs public bounds for {column.name!r}: add lower and upper to its "
            "metadata (privdb load … --metadata M.yaml); privdb never takes bounds from the data"
        )
    return column.lower, column.upper


def make_histogram(
    name: str, kind: str, column: ColumnMeta, epsilon: float, m: int, substitute: bool, q: float | None = None
) -> Histogram:
    """The cells of an order statistic (a grid of the bounds) or a mode (the public domain).

    The utility of a quantile candidate ``y`` is minus the distance from ``q·n`` to its rank interval
    ``[#{x < y}, #{x ≤ y}]`` over the values rounded to the grid (Smith 2011, with ties scored fairly: a
    point mass's candidate holds every rank it covers). Adding a unit's ``w ≤ m`` rows moves
    both ends by ``0 … w`` and ``q·n`` by ``q·w``: Δ = m·max(q, 1 − q) under add/remove; a substituted unit
    moves the ends by up to ``m`` with ``n`` fixed: Δ = m. A mode's utility is a value's count (Δ = m),
    which only grows when a unit is added: monotone under add/remove, so ``exp(ε·u/Δ)`` applies there."""
    if kind == "mode":
        domain = (
            column.values if column.values is not None else ((False, True) if column.type == "bool" else None)
        )
        if domain is None and column.type == "int" and column.bounded:
            assert column.lower is not None and column.upper is not None
            first, last = math.ceil(column.lower), math.floor(column.upper)
            if last - first + 1 <= MAX_MODE_VALUES:
                domain = tuple(range(first, last + 1))
        if domain is None:
            raise InvalidParameter(
                f"MODE({column.name}) chooses among public values: declare `values: [...]` for "
                f"{column.name!r} in its metadata (or bounds, for an int column)"
            )
        return Histogram(
            name, column, 0.0, 1.0, len(domain), tuple(domain), epsilon, float(m), not substitute
        )
    lo, hi = numeric_bounds(column, "QUANTILE")
    assert q is not None
    delta = float(m) if substitute else m * max(q, 1.0 - q)
    if column.type == "int" and float(lo).is_integer() and float(hi).is_integer() and hi - lo < MAX_INT_CELLS:
        return Histogram(name, column, lo, 1.0, int(hi - lo) + 1, None, epsilon, delta, False)
    if hi == lo:
        return Histogram(name, column, lo, 1.0, 1, None, epsilon, delta, False)
    if not math.isfinite(hi - lo):  # the grid's width: (U − L) must be a DOUBLE
        raise UnsupportedQuery(
            f"QUANTILE({column.name}): the bounds [{lo:.3g}, {hi:.3g}] span more than a DOUBLE holds; narrow "
            "them in the metadata (or the expression's literals)"
        )
    return Histogram(
        name, column, lo, (hi - lo) / QUANTILE_CELLS, QUANTILE_CELLS + 1, None, epsilon, delta, False
    )


def unit_reach(table: TableMeta, grouped: bool) -> tuple[int, int]:
    """``(m, G)``: rows and groups one unit reaches. Without a privacy unit a row is a unit, and a row
    joined with ``k`` public rows (the relation's multiplicity) reaches ``k`` rows in up to ``k`` groups."""
    k = int(getattr(table, "multiplicity", 1))
    if table.privacy_unit is not None:
        return table.max_contributions, table.max_groups if grouped else 1
    return k, k if grouped else 1


def make_statistic(
    name: str,
    kind: str,
    column: ColumnMeta | None,
    epsilon: float,
    table: TableMeta,
    grouped: bool,
    column2: ColumnMeta | None = None,
) -> Statistic:
    """One noisy per-group sum with its sensitivity (the table in the module doc) for ``table``'s privacy
    unit and neighbouring relation."""
    unit = table.privacy_unit is not None
    m, g = unit_reach(table, grouped)
    substitute = table.neighbouring == "substitute"

    def sum_sens(lo: float, hi: float, squared: bool) -> float:
        if squared:
            lo, hi = (0.0 if lo <= 0 <= hi else min(lo * lo, hi * hi)), max(lo * lo, hi * hi)
        big = max(abs(lo), abs(hi))
        # the engine adds up to MAX_ROWS such values: refused here if that could overflow (the aggregate's
        # own check names its SQL; this one guards every other caller, e.g. privdb.stats)
        assert column is not None
        check_summable(big, f"the sum of {column.name!r}" + (" (squared)" if squared else ""), squared)
        if not substitute:
            return m * big
        # a substituted unit may pass WHERE with any of 0..m rows before and after, so its contribution
        # lies in [min(0, m·L), max(0, m·U)]: the change is at most m·max(U − L, B)
        return 2 * m * big if grouped else m * max(hi - lo, big)

    if kind in ("rows", "nonnull", "pn", "distinct"):
        sens = float(2 * m if substitute and grouped else m)
    elif kind == "distinct_unit":  # COUNT(DISTINCT unit): one per group, in at most min(m, G) groups
        reach = min(m, g) if grouped else 1
        sens = float(2 * reach if substitute and grouped else reach)
    elif kind == "pprod":
        assert column is not None and column2 is not None
        (lo1, hi1), (lo2, hi2) = numeric_bounds(column, "CORR"), numeric_bounds(column2, "CORR")
        corners = (lo1 * lo2, lo1 * hi2, hi1 * lo2, hi1 * hi2)
        sens = sum_sens(min(corners), max(corners), False)
    else:
        assert column is not None
        lo, hi = numeric_bounds(column, "SUM" if kind in ("sum", "psum") else "VARIANCE")
        sens = sum_sens(lo, hi, kind in ("sumsq", "psq"))
    if sens == 0:
        sens = 1e-300  # a constant column: any noise is fine; keep the mechanisms' validation happy
    changed = 2 * g if substitute and grouped else g
    # distinct counts are sampled, never scaled: integers with a privacy unit too
    integer = (kind in ("rows", "nonnull", "pn") and not unit) or kind in DISTINCT_KINDS
    return Statistic(name, kind, column, sens, changed, epsilon, integer, column2)
