"""DP bounds for a numeric column that declares none (issue 31): a stated share of the release's budget.

Each missing end is an exponential-mechanism quantile (Smith 2011) over a public grid: 0 and ±10^(k/4) for
k = −24 … 60 (1e−6 to 1e15, four points a decade: 171 candidates, a function of nothing but these
constants). The lower end aims at the ``LOW`` quantile and the upper end at the ``HIGH`` one, with utility
u(c) = −|#{x < c} − q·n| for the lower end and −|#{x ≤ c} − q·n| for the upper one (n the rows counted,
NULLs and non-numbers left out). One unit moves #{x < c} by at most Δ (its ≤ m rows; 2m bounds it under
``substitute`` too) and q·n by at most qΔ ≤ Δ, so u moves by at most Δ: each choice is ε₀-DP at sensitivity
Δ, hence ε₀²/8-zCDP. The grid is public and log-scale because a wholly unknown range may span any number of
orders of magnitude: a linear grid would need the range it is looking for; the quantiles (not the minimum
and maximum) keep the outliers a single unit could plant from setting the range. The values beyond the
bounds found are clamped into the end cells, as for declared bounds. docs/proofs/synthetic.md, "DP bounds".

This is the exponential-mechanism quantile rather than a noisy binary search: privdb's exponential
mechanism is exact (privdb.mechanisms.ExponentialMechanism), one call per end, and its error is a rank
error of about 2Δ·ln(171)/ε₀ rows whatever the scale of the values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism, RandomSource

__all__ = ["DEFAULT_SHARE", "GRID", "HIGH", "LOW", "check_bounds_share", "dp_bounds", "unbounded"]

LOW, HIGH = 0.01, 0.99
DEFAULT_SHARE = 0.05
_POSITIVE = 10.0 ** (np.arange(-24, 61) / 4)
GRID: NDArray[np.float64] = np.unique(np.concatenate([-_POSITIVE, [0.0], _POSITIVE]))


def unbounded(table: TableMeta, names: Sequence[str]) -> list[str]:
    """The released numeric columns missing a bound and declaring no values (public: metadata only)."""
    out = []
    for name in names:
        meta = next(c for c in table.columns.values() if c.name.lower() == name.lower())
        if meta.numeric and not meta.values and meta.type != "bool" and not meta.bounded:
            out.append(meta.name)
    return out


def check_bounds_share(share: float, missing: Sequence[str]) -> None:
    """Refuse a column without bounds when no share of the budget finds them, and a share ∉ [0, 1)."""
    if not (0 <= share < 1 and math.isfinite(share)):
        raise InvalidParameter(f"--bounds-share must be in [0, 1), e.g. {DEFAULT_SHARE}; got {share:g}")
    if missing and share == 0:
        raise InvalidParameter(
            f"column {missing[0]!r} has no public bounds: declare lower and upper in the metadata, or spend "
            f"a share of ε on DP bounds with --bounds-share {DEFAULT_SHARE} (nothing was spent)"
        )


def dp_bounds(
    frame: pd.DataFrame, columns: Sequence[ColumnMeta], rho: float, sensitivity: int, rng: RandomSource
) -> dict[str, tuple[float, float]]:
    """(lower, upper) of each column at total ``rho`` (split evenly over every missing end); a declared
    end is kept. Upper ≥ lower always (a crossing pair is put in order: post-processing)."""
    ends = sum((c.lower is None) + (c.upper is None) for c in columns)
    if not ends:
        return {}
    epsilon = math.sqrt(8 * rho / ends)
    out = {}
    for column in columns:
        values = pd.to_numeric(frame[column.name], errors="coerce").dropna().to_numpy(dtype=np.float64)
        low = column.lower if column.lower is not None else _quantile(values, LOW, epsilon, sensitivity, rng)
        high = (
            column.upper if column.upper is not None else _quantile(values, HIGH, epsilon, sensitivity, rng)
        )
        if column.type == "int":
            low, high = math.floor(low), math.ceil(high)
        if high <= low:
            low, high = min(low, high), max(low, high) + (1.0 if column.type == "int" else 1e-6)
        out[column.name] = (float(low), float(high))
    return out


def _quantile(
    values: NDArray[np.float64], q: float, epsilon: float, sensitivity: int, rng: RandomSource
) -> float:
    """The grid point the exponential mechanism picks for the ``q`` quantile (module doc)."""
    ordered = np.sort(values)
    target = q * len(ordered)
    if q < 0.5:
        ranks = np.searchsorted(ordered, GRID, side="left").astype(np.float64)
    else:
        ranks = np.searchsorted(ordered, GRID, side="right").astype(np.float64)
    em = ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity, rng=rng)
    return float(GRID[em.select(-np.abs(ranks - target))])
