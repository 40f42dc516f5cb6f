"""ARX's two-dimensional Newton–Raphson search (linearbits' NewtonRaphson2D under ARX's deterministic
configuration), shared by the Pitman and SNB population-uniqueness estimators, and an accurate ψ₁."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["ACCURACY", "GRID", "Arr", "Equations", "ScalarEquations", "newton", "trigamma"]

ACCURACY = 1e-6  # a root: both equations within this of zero
_STEPS = 1000
_TOTAL = 10_000
_ALONE = 64  # evaluations of the first start before the others join it
GRID = [(a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99)]  # ARX's start values

Vec = tuple[float, float]
Arr = NDArray[np.float64]
Equations = Callable[[Arr, Arr], tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]]
# the same equations at one point, as floats (f₁, f₂, ∂f₁/∂x, ∂f₁/∂y, ∂f₂/∂x, ∂f₂/∂y), for the stretches
# where one try runs alone: there, arrays of one element cost more in NumPy's per-call overhead than the sums
ScalarEquations = Callable[[float, float], tuple[float, float, float, float, float, float]]


def newton(
    f: Equations,
    starts: list[Vec],
    constraint: Callable[[Arr, Arr], NDArray[np.bool_]] | None = None,
    *,
    scalar: ScalarEquations | None = None,
    scalar_constraint: Callable[[float, float], bool] | None = None,
) -> Vec:
    """A root of the two equations ``f`` (values and Jacobian), searched as ARX's solver (linearbits'
    NewtonRaphson2D with ARX's deterministic configuration) searches: the starts are tried in order; a try
    evaluates at most 1,001 times and ends at a root (returned), a non-finite value or singular Jacobian, or a
    step that leaves the ``constraint``; a try begins only while the tries before it used at most 10,000
    evaluations in all; and the last start gets one evaluation (the solver stops once its prepared starts run
    out). ARX's wall-clock limits (100 ms per try, 1 s in all) are not kept: an answer must not depend on the
    machine's speed.

    The tries run as arrays: the first alone for its first ``_ALONE`` evaluations or until it ends (it is
    a moment-style guess, and usually a root within them), then every try still undecided at once, so a
    start that does not converge costs one vector step, not 1,000 steps alone; only live tries are
    evaluated. Each try's path is its own (the equations are elementwise), so the answer is the
    one-try-after-another search's. Where one try is the only one to evaluate (the first alone; the last
    of a jittering few, which may run its 1,001 evaluations while every other has ended) and ``scalar``
    (with ``scalar_constraint``, the constraint on floats) gives ``f``'s floats at one point, its steps run
    on floats until it ends or others join it.
    """
    last = len(starts) - 1
    x = np.array([s[0] for s in starts], dtype=np.float64)
    y = np.array([s[1] for s in starts], dtype=np.float64)
    alive = np.ones(len(starts), dtype=bool)
    root = np.zeros(len(starts), dtype=bool)
    evaluations = np.zeros(len(starts), dtype=np.int64)
    ready = np.zeros(len(starts), dtype=bool)
    ready[0] = True
    step = 0
    while step <= _ALONE + _STEPS:
        if step >= _ALONE or not alive[0]:
            ready[:] = True
        live = np.flatnonzero(alive & ready)
        if len(live) == 1 and scalar is not None:
            j = int(live[0])  # alone until the others join (the first try) or its evaluations run out
            budget = 1 if j == last else (_ALONE - step if not ready.all() else _STEPS + 1 - evaluations[j])
            state, used, x[j], y[j] = _alone(scalar, scalar_constraint, float(x[j]), float(y[j]), int(budget))
            root[j], alive[j] = state == "root", state == "alive"
            evaluations[j] += used
            step += used
        else:
            if len(live):
                _step(f, x, y, live, alive, root, constraint)
                evaluations[live] += 1
            step += 1
        alive[-1] &= evaluations[-1] == 0  # the last start: one evaluation
        alive &= evaluations <= _STEPS  # each start: at most 1,001 evaluations
        decided, winner = _first_root(root, alive, evaluations)
        if decided:
            return (float(x[winner]), float(y[winner])) if winner is not None else (math.nan, math.nan)
    return math.nan, math.nan  # not reached: every try ends within _ALONE + 1,001 steps


def _alone(
    f: ScalarEquations, constraint: Callable[[float, float], bool] | None, x: float, y: float, budget: int
) -> tuple[str, int, float, float]:
    """At most ``budget`` evaluations and steps of one try on floats, as ``_step`` takes them on arrays: how
    it stands ("root"; "dead": ended without one; "alive"), the evaluations used and its point."""
    for used in range(1, budget + 1):
        f1, f2, a, b, c, d = f(x, y)
        if not all(map(math.isfinite, (f1, f2, a, b, c, d))):
            return "dead", used, x, y
        if abs(f1) <= ACCURACY and abs(f2) <= ACCURACY:
            return "root", used, x, y
        det = a * d - b * c
        if det == 0:
            return "dead", used, x, y
        inv = 1.0 / det  # the step as linearbits rounds it: J⁻¹ first, then J⁻¹·f
        x, y = x - ((d * inv) * f1 + (-b * inv) * f2), y - ((-c * inv) * f1 + (a * inv) * f2)
        if not (math.isfinite(x) and math.isfinite(y)) or (constraint is not None and not constraint(x, y)):
            return "dead", used, x, y
    return "alive", budget, x, y


def _step(
    f: Equations,
    x: Arr,
    y: Arr,
    live: NDArray[np.int64],
    alive: NDArray[np.bool_],
    root: NDArray[np.bool_],
    constraint: Callable[[Arr, Arr], NDArray[np.bool_]] | None,
) -> None:
    """One evaluation and Newton step of the tries ``live``, in place."""
    with np.errstate(all="ignore"):
        (f1, f2), (a, b, c, d) = f(x[live], y[live])
        finite = np.isfinite(f1) & np.isfinite(f2) & np.isfinite(a) & np.isfinite(b)
        finite &= np.isfinite(c) & np.isfinite(d)
        converged = finite & (np.abs(f1) <= ACCURACY) & (np.abs(f2) <= ACCURACY)
        root[live] |= converged
        det = a * d - b * c
        going = finite & ~converged & (det != 0)
        inv = 1.0 / np.where(going, det, 1.0)  # the step as linearbits rounds it: J⁻¹ first, then J⁻¹·f
        nx = np.where(going, x[live] - ((d * inv) * f1 + (-b * inv) * f2), x[live])
        ny = np.where(going, y[live] - ((-c * inv) * f1 + (a * inv) * f2), y[live])
        going &= np.isfinite(nx) & np.isfinite(ny)
        if constraint is not None:
            going &= constraint(nx, ny)
    x[live], y[live] = nx, ny
    alive[live] = going


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
    from scipy.special import zeta  # heavy (SciPy's special functions): only the estimators need it

    x = np.asarray(x, dtype=np.float64)
    negative = x < 0
    if not negative.any():  # the solver's usual case
        return zeta(2.0, x)  # type: ignore[no-any-return]
    with np.errstate(all="ignore"):
        # ψ₁(x) = ζ(2, x): SciPy's polygamma(1, x) is this times 1.0 (the same bits), after computing ψ(x)
        # and Γ(2) besides, which cost more than the ζ itself on the solver's short arrays
        positive: Arr = zeta(2.0, np.where(negative, 1.0 - x, x))
        out: Arr = np.where(negative, (math.pi / np.sin(math.pi * x)) ** 2 - positive, positive)
    return out
