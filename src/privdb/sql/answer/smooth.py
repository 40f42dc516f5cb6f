"""``USING SMOOTH`` answers: per group, the q-quantile of the engine's per-cell counts plus Laplace noise
scaled to its smooth sensitivity (privdb.mechanisms.smooth; planned in privdb.sql.plan.smooth).

The engine delivers the same per-cell counts as for the exponential mechanism (one cell per grid point
of ``[L, U]``, every value clamped and moved to its nearest point), so what is read, and the time spent on
it, depend on the public grid; the smooth sensitivity is then a maximum over O(cells) window sizes, not
over the rows. No interval is released: its width would be ``2·S/ε``, and ``S`` depends on the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import RandomSource
from privdb.mechanisms.smooth import smooth_beta, smooth_noise, smooth_sensitivity_counts
from privdb.sql.plan.types import AggregatePlan, Histogram

__all__ = ["smooth_accuracy", "smooth_answers"]


def smooth_answers(
    hist: Histogram,
    counts: dict[tuple[Any, ...], dict[Any, float]],
    groups: list[tuple[Any, ...]],
    q: float,
    rng: RandomSource | None,
) -> NDArray[np.float64]:
    """Per group, the smooth-sensitivity answer at the group's ε and δ (the histogram's)."""
    beta = smooth_beta(hist.epsilon, hist.smooth_delta)
    top = hist.lo + (hist.points - 1) * hist.width
    out = np.empty(len(groups))
    for g, group in enumerate(groups):
        per_cell = np.zeros(hist.cells)
        for cell, n in counts.get(group, {}).items():
            per_cell[min(max(int(cell), 0), hist.cells - 1)] += n
        value, sensitivity = smooth_sensitivity_counts(per_cell, hist.lo, hist.width, q, beta)
        out[g] = smooth_noise(
            value, sensitivity, hist.epsilon, lo=hist.lo, hi=top, resolution=hist.width, rng=rng
        )[0]
    return out


def smooth_accuracy(agg: AggregatePlan, hist: Histogram) -> dict[str, Any]:
    """What is known of a smooth-sensitivity answer's accuracy: the mechanism, not an interval."""
    return {
        "column": agg.output,
        "mechanism": "smooth_sensitivity",
        "epsilon": agg.epsilon,
        "epsilon_per_group": hist.epsilon,
        "delta_per_group": hist.smooth_delta,
        "beta": smooth_beta(hist.epsilon, hist.smooth_delta),
        "ci95": None,
        "ci95_rows": None,
        "resolution": hist.width,
        "method": (
            f"the {agg.q:g}-quantile of the clamped values plus Laplace noise of scale 2·S/ε, S the "
            "β-smooth upper bound of its local sensitivity, β = ε/(2·ln(2/δ)) (Nissim, Raskhodnikova, "
            "Smith 2007): (ε, δ)-DP. No interval: its width would depend on the data through S"
        ),
    }
