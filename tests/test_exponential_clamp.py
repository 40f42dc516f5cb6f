"""``ExponentialMechanism.clamp``: a public range the sampler always accepts, at the same Δ.

Clipping to ``[lo, hi]`` is 1-Lipschitz and nondecreasing, so it keeps a utility's sensitivity and its
monotonicity (docs/proofs/exponential.md, "Public ranges"); ``accepts`` is checked against the sampler's own
span test on the extreme vectors of the range, float rounding included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism

EPSILONS = st.sampled_from([2e-7, 1e-3, 0.5, 1.0, 7.0, 1e4])
SENSITIVITIES = st.sampled_from([1e-9, 0.5, 1.0, 3.0, 1e6])
HUGE = st.floats(-1e18, 1e18, allow_nan=False)


def _mechanism(epsilon: float, sensitivity: float, monotone: bool) -> ExponentialMechanism:
    return ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity, monotone=monotone, rng=seeded(7))


@settings(max_examples=300, deadline=None)
@given(
    epsilon=EPSILONS,
    sensitivity=SENSITIVITIES,
    monotone=st.booleans(),
    base=st.lists(HUGE, min_size=1, max_size=12),
    moves=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12),
    shape=st.sampled_from(["floor", "cap", "both"]),
)
def test_clamp_keeps_the_sensitivity_and_monotonicity_on_random_neighbours(
    epsilon: float,
    sensitivity: float,
    monotone: bool,
    base: list[float],
    moves: list[float],
    shape: str,
) -> None:
    mech = _mechanism(epsilon, sensitivity, monotone)
    h = mech.max_span / 2.0
    lo, hi = {"floor": (-h, 0.0), "cap": (0.0, h), "both": (-h / 2.0, h / 2.0)}[shape]
    u = np.array(base) * sensitivity
    step = np.array(moves[: u.size]) * sensitivity  # a monotone neighbour: every utility up by ≤ Δ
    v = u + step if monotone else u + step * np.where(np.arange(u.size) % 2, 1.0, -1.0)
    cu, cv = mech.clamp(u, lo, hi), mech.clamp(v, lo, hi)
    assert np.all(np.abs(cu - cv) <= np.abs(u - v))
    if monotone:
        assert np.all(cv >= cu)
    assert cu.min() >= lo and cu.max() <= hi
    mech.select(cu)  # never refused for its size
    mech.select(cv)


@pytest.mark.parametrize("monotone", [False, True])
@pytest.mark.parametrize("epsilon", [2e-7, 1.0, 1e4])
def test_the_range_extremes_pass_the_sampler(monotone: bool, epsilon: float) -> None:
    mech = _mechanism(epsilon, 1.0, monotone)
    h = mech.max_span / 2.0
    assert mech.accepts(-h, 0.0) and mech.accepts(0.0, h) and mech.accepts(-h / 2.0, h / 2.0)
    for u in ([-h, 0.0], [0.0, h], [-h, -h], [h, h], [-h / 2.0, h / 2.0]):
        mech.select(mech.clamp(u, min(u[0], 0.0), max(u[1], 0.0)))
    # one ulp past the range is refused, from the range alone (before any utility is looked at)
    assert not mech.accepts(-np.nextafter(h, np.inf) * 2.0, 0.0)
    with pytest.raises(InvalidParameter, match="utility range"):
        mech.clamp([0.0], -mech.max_span, mech.max_span)
    with pytest.raises(InvalidParameter, match="utility range"):
        mech.clamp([0.0], 1.0, -1.0)


def test_clamp_is_a_plain_clip() -> None:
    mech = _mechanism(1.0, 1.0, False)
    out = mech.clamp([-1e12, -3.0, 0.0, 5.0, 1e12], -10.0, 4.0)
    assert out.tolist() == [-10.0, -3.0, 0.0, 4.0, 4.0]
