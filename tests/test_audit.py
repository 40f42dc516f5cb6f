"""The empirical ε auditor: correct mechanisms stay within their claims, broken ones are caught."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import ALPHA, seeded
from privdb.audit import BROKEN, CORRECT, FAMILY_CONFIDENCE, audit, build_targets, clopper_pearson, run
from privdb.errors import InvalidParameter
from privdb.mechanisms import ExponentialMechanism

TARGETS = build_targets(seeded(99))


@pytest.mark.slow
@pytest.mark.parametrize("name", CORRECT)
def test_correct_mechanisms_stay_within_their_claim(name: str) -> None:
    """At confidence 1 − 1e-6 the lower bound exceeds a true claim with probability ≤ 1e-6."""
    t = TARGETS[name]
    result = audit(
        name,
        t.draw0,
        t.draw1,
        epsilon=t.epsilon,
        delta=t.delta,
        samples=100_000,
        confidence=1 - ALPHA,
    )
    assert result.passed, result
    assert result.epsilon_lower_bound <= t.epsilon


def test_tight_mechanisms_are_found_close_to_their_claim() -> None:
    """Power: for a pure-ε mechanism with a tight claim the bound comes close to it."""
    t = TARGETS["rr_coin"]
    result = audit("rr_coin", t.draw0, t.draw1, epsilon=t.epsilon, samples=100_000)
    assert result.epsilon_lower_bound > 0.9 * math.log(3)


@pytest.mark.slow
@pytest.mark.parametrize("name", BROKEN)
def test_broken_variants_are_caught(name: str) -> None:
    t = TARGETS[name]
    result = audit(
        name,
        t.draw0,
        t.draw1,
        epsilon=t.epsilon,
        delta=t.delta,
        samples=100_000,
        confidence=1 - ALPHA,
    )
    assert not result.passed
    assert result.epsilon_lower_bound > 1.3 * t.epsilon


@pytest.mark.slow
def test_the_notes_exponential_factor_is_caught_on_a_non_monotone_utility() -> None:
    """exp(ε·u/Δ) (the notes' form) on a utility that is not monotone is not ε-DP: the audit shows it."""
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, monotone=True, rng=seeded(12))
    u0 = np.array([1.0] + [0.0] * 50)
    u1 = np.array([0.0] + [1.0] * 50)
    result = audit(
        "exponential_notes_factor",
        lambda n: mech.select_many(u0, n),
        lambda n: mech.select_many(u1, n),
        epsilon=1.0,
        samples=100_000,
        confidence=1 - ALPHA,
    )
    assert not result.passed
    assert result.epsilon_lower_bound > 1.5


def test_naive_float_laplace_claims_are_not_trusted_blindly() -> None:
    """Half the noise of a plain continuous Laplace is caught too (a peer-style implementation)."""
    gen = np.random.default_rng(5)
    result = audit(
        "numpy_laplace_half_noise",
        lambda n: gen.laplace(0.0, 0.5, n),
        lambda n: 1.0 + gen.laplace(0.0, 0.5, n),
        epsilon=1.0,
        samples=100_000,
        confidence=1 - ALPHA,
    )
    assert not result.passed


def test_a_runs_confidence_is_split_across_its_mechanisms() -> None:
    """Bonferroni: ``run`` gives each of m audits 1 − (1 − confidence)/m: the run's false-alarm rate holds."""

    results = run(["laplace", "rr_coin"], samples=2000, confidence=0.9)
    assert [r.confidence for r in results] == pytest.approx([0.95, 0.95])
    assert run(["rr_coin"], samples=2000)[0].confidence == FAMILY_CONFIDENCE


def test_clopper_pearson_edges() -> None:
    assert clopper_pearson(0, 100, 0.05)[0] == 0.0
    assert clopper_pearson(100, 100, 0.05)[1] == 1.0
    lo, hi = clopper_pearson(50, 100, 0.05)
    assert lo < 0.5 < hi
    # k = 0: upper bound 1 − (α/2)^(1/n)
    assert clopper_pearson(0, 1000, 0.05)[1] == pytest.approx(1 - 0.025 ** (1 / 1000))


def test_too_few_samples_is_refused() -> None:
    t = TARGETS["laplace"]
    with pytest.raises(InvalidParameter, match="samples"):
        audit("laplace", t.draw0, t.draw1, epsilon=1.0, samples=10)
