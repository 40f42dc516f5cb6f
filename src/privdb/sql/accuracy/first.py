"""``DP-SELECT ACCURACY a [CONFIDENCE c] MAX m …`` for averages and variances: accuracy first.

An average's interval depends on its private group size, so no ε chosen from public facts reaches ± a.
privdb runs the noise reduction of Ligett et al. (NeurIPS 2017; :mod:`privdb.mechanisms.noise_reduction`)
instead: every noisy statistic of the query is released at each ε of a public *schedule*
``ε_1 < … < ε_T = MAX`` with correlated noise, and the answer is the one of the first step whose every
aggregate is within ± a of the truth at confidence c, by the step's own intervals, computed from that step's
noisy values alone. The stopping rule reads released values only, so it costs nothing: the answer's ex-post
privacy loss is exactly the ε of the step it stopped at, which is all that is charged. privdb reserves MAX
before reading (refused, free, when MAX is not available) and commits the ex-post ε, returning the rest in the
same commit. When no step meets the accuracy the answer is MAX's, charged MAX, with ``accuracy_met: false``.

Coverage at a step chosen by the noise: each step's check uses its intervals at ``1 − (1 − c)/T`` and its
reported intervals are at ``1 − 0.05/T`` (a union bound over the ``T`` steps), so whatever step the rule stops
at, the answer is within ± a with probability ≥ c and each reported 95% interval covers with ≥ 95%. Proof:
docs/proofs/accuracy-first.md.

The schedule is public: geometric with ratio at most √2 from ``max(MAX/32, ε₀)`` to MAX, where ``ε₀`` is the
smallest ε at which the query's counts and sums (whose intervals follow from public facts) could meet ± a.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import Laplace, RandomSource
from privdb.mechanisms.base import AdditiveNoise, round_down
from privdb.mechanisms.noise_reduction import NoiseReduction
from privdb.sql.accuracy.search import epsilon_for_accuracy
from privdb.sql.answer.combine import combine
from privdb.sql.answer.noise import NoisyAnswer, answer, true_values_by_group
from privdb.sql.answer.predict import columns_of
from privdb.sql.front.query import DPQuery
from privdb.sql.plan.types import Plan
from privdb.sql.run.read import Statistics

__all__ = ["RANGE", "RATIO", "describe", "is_data_dependent", "respond", "schedule_for"]

RATIO = math.sqrt(2)  # the most one step's ε exceeds the one before: the overshoot over the ε needed
RANGE = 32  # the first step's ε is at least MAX/RANGE
_RATIOS = ("avg", "variance", "stddev", "variance_pop", "stddev_pop")
_AGGREGATE_ROLES = ("aggregate", "hidden")


def is_data_dependent(columns: list[dict[str, Any]]) -> bool:
    """Whether some aggregate's interval depends on the data (explain gives it no ± of its own)."""
    return any(c.get("role") in _AGGREGATE_ROLES and c.get("ci95_half_width") is None for c in columns)


def schedule_for(query: DPQuery, plan_at: Callable[[float], Plan]) -> tuple[float, ...]:
    """The public ε schedule of an accuracy-first query, or an ``invalid_parameter`` error (before any
    read: free) saying why it cannot run. ``plan_at(ε)`` plans the query at ε (nothing read)."""
    assert query.accuracy is not None
    most = query.accuracy[2]
    plan = plan_at(most if most is not None else 1.0)
    columns = columns_of(plan)
    for c in columns:
        dependent = c.get("role") in _AGGREGATE_ROLES and c.get("ci95_half_width") is None
        if dependent and c["kind"] not in _RATIOS:
            raise InvalidParameter(
                f"ACCURACY needs each aggregate's interval to follow from public facts or from its noisy "
                f"group size, and {c['column']}'s depends on the data otherwise (a quantile's on the data's "
                "ranks, a correlation's is simulated); write an ε instead (DP-SELECT 0.5 …)"
            )
    if plan.threshold is not None:
        raise InvalidParameter(
            "ACCURACY for an average or a variance needs GROUP BY keys with a public domain (the keys a "
            "noisy threshold releases would change from step to step); declare the key values in the "
            "metadata (values: [...]) or write an ε instead"
        )
    if most is None:
        raise InvalidParameter(
            "an average's or a variance's accuracy depends on the data (its private group size), so privdb "
            "tightens the answer step by step up to an ε you cap and charges the step it stops at: add MAX, "
            "e.g. DP-SELECT ACCURACY 100 MAX 1 AVG(income) FROM …"
        )
    floor = 0.0
    if any(c.get("role") in _AGGREGATE_ROLES and c.get("ci95_half_width") is not None for c in columns):

        def public_columns(eps: float) -> list[dict[str, Any]]:
            return [
                c
                for c in columns_of(plan_at(eps))
                if c.get("role") not in _AGGREGATE_ROLES or c.get("ci95_half_width") is not None
            ]

        floor = epsilon_for_accuracy(query.accuracy, public_columns)  # refuses when more than MAX is needed
    first = max(float(f"{most / RANGE:.6g}"), floor)
    if first >= most:
        return (most,)
    steps = max(math.ceil(math.log(most / first) / math.log(RATIO) - 1e-9), 1)
    inner = [float(f"{first * (most / first) ** (t / steps):.6g}") for t in range(1, steps)]
    return (first, *inner, most)


def _at_step(plan: Plan, epsilon: float) -> Plan:
    """The plan at one step's ε: every statistic's and aggregate's share scaled (never rounded up)."""
    if epsilon == plan.epsilon:
        return plan
    factor = round_down(epsilon / plan.epsilon)
    return replace(
        plan,
        query=replace(plan.query, epsilon=epsilon),
        statistics=tuple(replace(s, epsilon=round_down(s.epsilon * factor)) for s in plan.statistics),
        aggregates=tuple(replace(a, epsilon=a.epsilon * epsilon / plan.epsilon) for a in plan.aggregates),
        epsilon=epsilon,
    )


def _met(
    plan: Plan, noisy: dict[str, NDArray[np.float64]], mechs: Mapping[str, AdditiveNoise], beta: float
) -> bool:
    """The stopping rule: every aggregate of every group is within ± a of its truth whenever its interval
    at ``1 − beta`` covers, i.e. the interval lies in ``[value − a, value + a]``. Reads released values
    only."""
    assert plan.query.accuracy is not None
    half = plan.query.accuracy[0]
    for agg in plan.aggregates:
        values, intervals = combine(agg, noisy, mechs, None, beta)
        for v, (lo, hi) in zip(values.tolist(), intervals, strict=True):
            if not max(v - lo, hi - v) <= half:
                return False
    return True


def calibrate(plan: Plan, rng: RandomSource | None = None) -> tuple[list[Plan], dict[str, NoiseReduction]]:
    """Each step's plan and each statistic's noise reduction over the schedule: closed forms, built while
    planning too, so that a step whose noise cannot be calibrated is refused before anything is read."""
    assert plan.query.schedule is not None
    step_plans = [_at_step(plan, eps) for eps in plan.query.schedule]
    reductions = {}
    for stat in plan.statistics:
        reductions[stat.name] = NoiseReduction(
            epsilons=[p.statistic(stat.name).epsilon for p in step_plans],
            sensitivity=stat.sensitivity, changed=stat.changed, integer=stat.integer, rng=rng,
        )  # fmt: skip
    return step_plans, reductions


def respond(plan: Plan, frame: Statistics | None, rng: RandomSource | None = None) -> NoisyAnswer:
    """Release every step's statistics with correlated noise, stop at the first step that meets the
    accuracy (or at MAX), and answer from that step alone; the answer carries its ex-post ε."""
    schedule, accuracy = plan.query.schedule, plan.query.accuracy
    assert schedule is not None and accuracy is not None and schedule[-1] == plan.epsilon
    _, confidence, most = accuracy
    steps = len(schedule)
    groups, truth = true_values_by_group(plan, frame)
    step_plans, reductions = calibrate(plan, rng)
    released: dict[str, NDArray[np.float64]] = {}
    mechanisms: dict[str, tuple[Laplace, ...]] = {}
    for stat in plan.statistics:
        reduction = reductions[stat.name]
        values = truth[stat.name]
        released[stat.name] = reduction.release(values) if values.size else np.empty((steps, 0))
        mechanisms[stat.name] = reduction.steps
    beta = (1.0 - confidence) / steps
    for k in range(steps):
        noisy = {name: r[k] for name, r in released.items()}
        mechs = {name: m[k] for name, m in mechanisms.items()}
        met = _met(step_plans[k], noisy, mechs, beta)
        if met:
            break
    out = answer(step_plans[k], groups, noisy, mechs, rng, alpha=0.05 / steps)
    facts = {
        "accuracy_met": met,
        "accuracy_first": {
            "half_width": accuracy[0],
            "confidence": confidence,
            "max_epsilon": most,
            "schedule": list(schedule),
            "steps_taken": k + 1,
            "epsilon_ex_post": schedule[k],
            "check_level_per_step": 1.0 - beta,
            "ci95_level_per_step": 1.0 - 0.05 / steps,
        },
    }
    return replace(out, epsilon=schedule[k], extra=out.extra | facts)


def describe(plan: Plan) -> dict[str, Any]:
    """Explain's account of an accuracy-first plan: the schedule, the worst case, the rule."""
    schedule, accuracy = plan.query.schedule, plan.query.accuracy
    assert schedule is not None and accuracy is not None
    steps = len(schedule)
    return {
        "schedule": list(schedule),
        "max_epsilon": schedule[-1],
        "worst_case_epsilon": schedule[-1],
        "steps": steps,
        "check_level_per_step": 1.0 - (1.0 - accuracy[1]) / steps,
        "ci95_level_per_step": 1.0 - 0.05 / steps,
        "rule": "noise reduction (Ligett et al. 2017): the statistics are released at each ε of the schedule "
        "with correlated noise; the answer is the first step whose every interval lies within ± the "
        "accuracy of its value, judged from that step's noisy values alone; charged that step's ε "
        "(ex post), or MAX with accuracy_met false. The columns below are the plan at MAX, the worst case",
    }
