"""ARX's two-dimensional Newton–Raphson search (linearbits' NewtonRaphson2D under ARX's deterministic
configuration), shared by the Pitman and SNB population-uniqueness estimators, and an accurate ψ₁."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["ACCURACY", "GRID", "Arr", "Equations", "newton", "trigamma"]

ACCURACY = 1e-6  # a root: both equations within this of zero
_STEPS = 1000
_TOTAL = 10_000
GRID = [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]  # ARX's start values

Vec = tuple[float, float]
Arr = NDArray[np.float64]
Equations = Callable[[Arr, Arr], tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]]


def newton(
    f: Equations, starts: list[Vec], constraint: Callable[[Arr, Arr], NDArray[np.bool_]] | None = None
) -> Vec:
    """A root of the two equations ``f`` (values and Jacobian), searched as ARX's solver (linearbits'
    NewtonRaphson2D with ARX's deterministic configuration) searches: the starts are tried in order; a try
    evaluates at most 1,001 times and ends at a root (returned), a non-finite value or singular Jacobian, or a
    step that leaves the ``constraint``; a try begins only while the tries before it used at most 10,000
    evaluations in all; and the last start gets one evaluation (the solver stops once its prepared starts run
    out). ARX's wall-clock limits (100 ms per try, 1 s in all) are not kept: an answer must not depend on the
    machine's speed.

    Every try runs at once as arrays, so a start that does not converge costs one vector step, not 1,000 steps
    alone; the answer is the one-try-after-another search's.
    """
    x = np.array([s[0] for s in starts], dtype=np.float64)
    y = np.array([s[1] for s in starts], dtype=np.float64)
    alive = np.ones(len(starts), dtype=bool)
    root = np.zeros(len(starts), dtype=bool)
    evaluations = np.zeros(len(starts), dtype=np.int64)
    for step in range(_STEPS + 1):
        evaluations += alive
        with np.errstate(all="ignore"):
            (f1, f2), (a, b, c, d) = f(x, y)
            finite = np.isfinite(f1) & np.isfinite(f2) & np.isfinite(a) & np.isfinite(b)
            finite &= np.isfinite(c) & np.isfinite(d)
            converged = alive & finite & (np.abs(f1) <= ACCURACY) & (np.abs(f2) <= ACCURACY)
            root |= converged
            det = a * d - b * c
            alive &= finite & ~converged & (det != 0)
            inv = 1.0 / np.where(alive, det, 1.0)  # the step as linearbits rounds it: J⁻¹ first, then J⁻¹·f
            x = np.where(alive, x - ((d * inv) * f1 + (-b * inv) * f2), x)
            y = np.where(alive, y - ((-c * inv) * f1 + (a * inv) * f2), y)
            alive &= np.isfinite(x) & np.isfinite(y)
            if constraint is not None:
                alive &= constraint(x, y)
        alive[-1] = False  # the last start: one evaluation
        if step == _STEPS:
            alive[:] = False  # each start: at most 1,001 evaluations
        decided, winner = _first_root(root, alive, evaluations)
        if decided:
            break
    return (float(x[winner]), float(y[winner])) if winner is not None else (math.nan, math.nan)


def _first_root(
    root: NDArray[np.bool_], alive: NDArray[np.bool_], evaluations: NDArray[np.int64]
) -> tuple[bool, int | None]:
    """Whether the tries so far settle the one-after-another search, and which try's root it returns."""
    total = 0
    for j in range(len(root)):
        if total > _TOTAL:
            return True, None
        if root[j]:
            return True, j
        if alive[j]:
            return False, None
        total += int(evaluations[j])
    return True, None


def trigamma(x: Arr) -> Arr:
    """ψ₁(x), accurate; below 0 by the reflection ψ₁(x) = π²/sin²(πx) − ψ₁(1 − x), since SciPy's Hurwitz zeta
    takes time linear in |x| there (seconds per call once a diverging Newton iterate reaches −10⁸)."""
    from scipy.special import polygamma  # heavy (SciPy's special functions): only the estimators need it

    x = np.asarray(x, dtype=np.float64)
    negative = x < 0
    with np.errstate(all="ignore"):
        positive: Arr = polygamma(1, np.where(negative, 1.0 - x, x))
        out: Arr = np.where(negative, (math.pi / np.sin(math.pi * x)) ** 2 - positive, positive)
    return out
