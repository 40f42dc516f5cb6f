"""The exponential mechanism's ``utility_error``: a caller's bound on how far its float utilities lie from the
real ones. The float utilities then move by up to Δ + 2·error between neighbours, so the coefficient must
be at most ε/(2(Δ + 2·error)) (ε/(Δ + 4·error) if monotone: the error may move a utility the wrong way);
the coefficient itself is c·(1 − 1e-6) always, a public shrink that holds both margins, so it is the same on
every pair of neighbours (docs/proofs/exponential.md, "Float scores")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from conftest import ALPHA, seeded
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism


def _coefficient(mech: ExponentialMechanism) -> float:
    """The coefficient the sampler uses, read from its distribution on utilities [0, 1]: ln(p₁/p₀)."""
    p = mech.probabilities([0.0, 1.0])
    return math.log(p[1] / p[0])


@pytest.mark.parametrize("monotone", [False, True])
@pytest.mark.parametrize(("epsilon", "sensitivity", "error"), [(1.0, 1.0, 2e-7), (0.01, 3.0, 1e-7)])
def test_the_coefficient_covers_the_utilities_own_error(
    monotone: bool, epsilon: float, sensitivity: float, error: float
) -> None:
    mech = ExponentialMechanism(
        epsilon=epsilon, sensitivity=sensitivity, monotone=monotone, utility_error=error
    )
    widened = sensitivity + (4 if monotone else 2) * error  # what the float utilities can move by
    bound = epsilon / ((1 if monotone else 2) * widened)
    c = _coefficient(mech)
    # the ratio read back is within 1e-13 of the sampler's coefficient; the margin is 2e-7..1e-6 relative
    assert c <= bound * (1 + 1e-13)
    assert c >= bound * (1 - 1e-6)  # and no more is given away than the 1e-6 float allowance
    assert c == pytest.approx(mech.coefficient * (1 - 1e-6), rel=1e-13)  # the public shrink, whatever e


@pytest.mark.parametrize("monotone", [False, True])
def test_the_coefficient_does_not_depend_on_the_utilities(monotone: bool) -> None:
    """The sampler's coefficient is a function of ε, Δ and monotone only: the log-odds of two candidates one
    apart is the same whether the others sit near them or far away (a coefficient shrunk by a margin computed
    from the utilities' own span differed between neighbours: the log-ratio then exceeded ε)."""
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, monotone=monotone)
    near, far = mech.probabilities([0.0, 1.0]), mech.probabilities([0.0, 1.0, -0.4 * mech.max_span])
    assert math.log(far[1] / far[0]) == pytest.approx(math.log(near[1] / near[0]), rel=1e-13)
    assert math.log(near[1] / near[0]) == pytest.approx(mech.sampled, rel=1e-13)
    assert mech.sampled <= mech.coefficient * (1 - 1e-6)


def test_zero_error_is_the_default() -> None:
    u = np.array([0.0, 1.0, 1.5, 3.0, -2.0, 1e3])
    for kwargs in ({}, {"monotone": True}):
        default = ExponentialMechanism(epsilon=2.0, sensitivity=1.0, rng=seeded(5), **kwargs)
        zero = ExponentialMechanism(epsilon=2.0, sensitivity=1.0, utility_error=0.0, rng=seeded(5), **kwargs)
        assert np.array_equal(default.probabilities(u), zero.probabilities(u))
        assert np.array_equal(default.select_many(u, 500), zero.select_many(u, 500))
        assert default.max_span == zero.max_span


def test_sampling_follows_the_shifted_distribution() -> None:
    """200,000 seeded draws with a utility error follow softmax(ε·u/(2(Δ + 2·error))): χ² at ALPHA = 1e-6."""
    error = 4e-7
    mech = ExponentialMechanism(epsilon=2.0, sensitivity=1.0, utility_error=error, rng=seeded(11))
    u = np.array([0.0, 1.0, 1.5, 3.0, -2.0])
    c = 2.0 / (2 * (1.0 + 2 * error))
    expected = np.exp(c * (u - u.max()))
    expected = expected / expected.sum() * 200_000
    picks = mech.select_many(u, 200_000)
    assert stats.chisquare(np.bincount(picks, minlength=u.size), expected).pvalue > ALPHA


def test_an_error_beyond_the_float_allowance_is_refused_before_any_utility() -> None:
    with pytest.raises(InvalidParameter, match="utility_error"):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0, utility_error=6e-7)  # margin 1.2e-6 > 1e-6
    with pytest.raises(InvalidParameter, match="utility_error"):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0, monotone=True, utility_error=3e-7)
    for bad in (-1e-9, math.nan, math.inf):
        with pytest.raises(InvalidParameter, match="utility_error"):
            ExponentialMechanism(epsilon=1.0, sensitivity=1.0, utility_error=bad)


def test_the_error_margin_and_the_scores_margin_share_the_allowance() -> None:
    """max_span shrinks by the error's share of 1e-6·ε, and utilities that fit without the error but not
    beside it are refused."""
    plain = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    half = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, utility_error=2.5e-7)  # margin 5e-7
    assert half.max_span == pytest.approx(plain.max_span / 2, rel=1e-12)
    u = np.array([0.0, 0.35 * plain.max_span])  # span + |max u| = 0.7·max_span: fits plain only
    plain.probabilities(u)
    with pytest.raises(InvalidParameter, match="too large"):
        half.probabilities(u)
