"""DP bounds for a numeric column that declares none (issue 31): a stated share of the release's budget.

The method is the approximate-bounds histogram (as in Google's differential-privacy library's ApproxBounds):
one histogram of the column over a public log-scale grid of bins — [−2^(k+1), −2^k), [−2^−20, 0),
[0, 2^−20), [2^k, 2^(k+1)) for k = −20 … 49, 142 bins, values beyond ±2^50 in the end bins — released with
discrete Gaussian noise at the share's ρ_b (one unit moves the histogram by at most Δ rows in L1, so in L2:
ρ_b-zCDP). A bin is *occupied* when its noisy count exceeds τ = σ·√(2 ln(142/β)), β = 10⁻⁶ (an empty bin
passes with probability ≤ β/142, so no empty bin passes with probability ≥ 1 − 10⁻⁶); the bounds are the
lower edge of the lowest occupied bin and the upper edge of the highest — post-processing of the noisy
histogram. When no bin is occupied the bounds are [0, 1] (post-processing too: the outcome never fails on the
data). The grid is public and log-scale because a wholly unknown range may span any number of orders of
magnitude; the threshold keeps the few rows a single unit could plant far out from setting the range. The
values beyond the bounds found are clamped into the end cells, as for declared bounds.

Why not an exponential-mechanism quantile over the same grid: every grid point below the data has the same
rank (0), so the quantile's utility cannot tell them apart and the choice wanders among them when the
quantile falls between two grid points; the histogram's threshold has no such ties.
docs/proofs/synthetic.md, "DP bounds".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.catalog.metadata import ColumnMeta
from privdb.errors import InvalidParameter
from privdb.mechanisms import DiscreteGaussian, RandomSource

__all__ = ["BETA", "DEFAULT_SHARE", "EDGES", "check_bounds_share", "dp_bounds", "threshold", "unbounded"]

DEFAULT_SHARE = 0.05
BETA = 1e-6
_POWERS = 2.0 ** np.arange(-20, 51)
EDGES: NDArray[np.float64] = np.concatenate([-_POWERS[::-1], [0.0], _POWERS])  # 143 edges, 142 bins


def threshold(sigma: float) -> float:
    """τ: an empty bin's noisy count exceeds it with probability ≤ BETA / bins (Gaussian tail)."""
    return sigma * math.sqrt(2 * math.log((len(EDGES) - 1) / BETA))


def unbounded(columns: Sequence[ColumnMeta]) -> list[ColumnMeta]:
    """The numeric columns missing a bound and declaring no values (public: metadata only)."""
    return [c for c in columns if c.numeric and not c.values and c.type != "bool" and not c.bounded]


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
    frame: pd.DataFrame, columns: Sequence[ColumnMeta], rho: float, sensitivity: int, delta: float,
    rng: RandomSource,
) -> dict[str, tuple[float, float]]:  # fmt: skip
    """(lower, upper) of each column at total ``rho`` (split evenly over the columns: one noisy histogram
    each); a declared end is kept. Upper > lower always (post-processing)."""
    out: dict[str, tuple[float, float]] = {}
    for column in columns:
        values = pd.to_numeric(frame[column.name], errors="coerce").dropna().to_numpy(dtype=np.float64)
        cells = np.clip(np.searchsorted(EDGES, values, side="right") - 1, 0, len(EDGES) - 2)
        counts = np.bincount(cells, minlength=len(EDGES) - 1).astype(np.float64)
        mech = DiscreteGaussian(rho=rho / len(columns), delta=delta, sensitivity=sensitivity, rng=rng)
        hot = np.flatnonzero(mech.release(counts) > threshold(float(mech.scale)))
        low, high = (float(EDGES[hot[0]]), float(EDGES[hot[-1] + 1])) if len(hot) else (0.0, 1.0)
        low = column.lower if column.lower is not None else low
        high = column.upper if column.upper is not None else high
        if column.type == "int":
            low, high = math.floor(low), math.ceil(high)
        if high <= low:
            high = low + 1.0
        out[column.name] = (float(low), float(high))
    return out
