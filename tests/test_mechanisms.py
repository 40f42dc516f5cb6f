"""Mechanisms: the notes' worked answers, parameter validation, accuracy claims, floating-point safety."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from conftest import ALPHA, seeded
from privdb.errors import InvalidParameter
from privdb.mechanisms import (
    AlphaProtocol,
    BinaryRandomizedResponse,
    CoinProtocol,
    DiscreteGaussian,
    ExponentialMechanism,
    FlipProtocol,
    Gaussian,
    Geometric,
    HeadsSayYes,
    KaryRandomizedResponse,
    Laplace,
    analytic_gaussian_sigma,
    epsilon_of,
    gaussian_delta,
)

# ---------------------------------------------------------------- worked answers of the course notes


def test_coin_protocol_is_ln3_dp_with_estimator_2p_minus_half() -> None:
    coin = CoinProtocol()
    assert coin.yes_given_yes == Fraction(3, 4)
    assert coin.yes_given_no == Fraction(1, 4)
    assert coin.epsilon == pytest.approx(math.log(3))
    # the notes: true rate q = 2p − 1/2 for observed rate p
    responses = [1] * 60 + [0] * 40
    assert coin.estimate(responses).value == pytest.approx(2 * 0.6 - 0.5)


def test_a_binary_estimate_never_has_a_standard_error_of_zero() -> None:
    """Issue 27: three yes of three printed a share of 1.5 with a standard error of 0.0 (the observed rate
    was 1). The error is taken at the share clipped to [0, 1]: here 1, a rate of yes of 3/4."""
    coin = CoinProtocol()
    for said, value in (([True] * 3, 1.5), ([False] * 3, -0.5)):
        estimate = coin.estimate(said)
        assert estimate.value == pytest.approx(value)
        assert estimate.std_error == pytest.approx(math.sqrt(0.75 * 0.25 / 3) / 0.5)
    # inside [0, 1] it is the plug-in error at the estimate: 60 yes of 100 → rate 0.6
    assert coin.estimate([1] * 60 + [0] * 40).std_error == pytest.approx(math.sqrt(0.6 * 0.4 / 100) / 0.5)
    counts = KaryRandomizedResponse(k=3, epsilon=1.0).estimate_counts([0, 0, 0, 0])
    assert all(c.std_error > 0 for c in counts)


def test_the_readme_coin_example_prints_a_share_and_a_standard_error() -> None:
    """The README's block, run here: 1,000 respondents (a share of 0.3 estimated with error ≈ 0.03; leaving
    [0, 1] would take a 10-standard-error draw, probability < 1e-20)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme[readme.index("coin = CoinProtocol()") :].split("```")[0]
    scope: dict[str, object] = {"np": np, "CoinProtocol": CoinProtocol, "print": lambda *_: None}
    exec(block, scope)
    estimate = scope["coin"].estimate(scope["answers"])  # type: ignore[attr-defined]
    assert 0 <= estimate.value <= 1 and 0.02 < estimate.std_error < 0.04


def test_alpha_protocol_worked_answer() -> None:
    mech = AlphaProtocol(alpha=0.5)
    assert mech.estimate([1] * 9 + [0] * 9).value == pytest.approx(0.5)  # n = 18, Y = 9
    for alpha in (0.1, 0.5, 0.9):
        assert AlphaProtocol(alpha=alpha).epsilon == pytest.approx(math.log((1 + alpha) / (1 - alpha)))
        n = 18
        assert AlphaProtocol(alpha=alpha).variance_bound(n) <= 1 / (alpha**2 * n)


def test_flip_protocol_epsilon_and_posterior() -> None:
    for p in (0.1, 0.25, 0.4):
        mech = FlipProtocol(p=p)
        assert mech.epsilon == pytest.approx(math.log((1 - p) / p))
        for xi in (0.01, 0.5, 0.9):
            expected = (1 - p) * xi / ((1 - p) * xi + p * (1 - xi))
            assert mech.posterior(xi) == pytest.approx(expected)


def test_heads_say_yes_is_not_dp() -> None:
    assert epsilon_of(HeadsSayYes.matrix) == math.inf
    assert HeadsSayYes().epsilon == math.inf


def test_epsilon_of_general_matrices() -> None:
    assert epsilon_of([[0.75, 0.25], [0.25, 0.75]]) == pytest.approx(math.log(3))
    assert epsilon_of([[1, 0], [0, 1]]) == math.inf
    assert epsilon_of([[0.5, 0.5], [0.5, 0.5]]) == 0.0
    kary = KaryRandomizedResponse(epsilon=1.2, k=5)
    assert epsilon_of(kary.matrix) == pytest.approx(1.2)
    with pytest.raises(InvalidParameter, match="sums to"):
        epsilon_of([[0.5, 0.4], [0.5, 0.5]])


def test_laplace_scale_is_sensitivity_over_epsilon() -> None:
    # counts: sensitivity 1; a sum of values in [0, B]: B; a mean of n values: B/n
    for sensitivity, eps in ((1.0, 0.5), (500_000.0, 1.0), (500_000.0 / 1000, 0.1)):
        mech = Laplace(epsilon=eps, sensitivity=sensitivity)
        assert mech.scale == pytest.approx(sensitivity / eps, rel=2e-6)
        assert mech.scale >= sensitivity / eps  # the rounding allowance only ever adds noise
    assert Geometric(epsilon=0.5).scale == pytest.approx(2.0, rel=1e-15)


def test_exponential_mechanism_factor() -> None:
    """exp(ε·u/(2Δ)) in general, exp(ε·u/Δ) monotone, each coefficient shrunk by the public 1e-6 float
    allowance (docs/proofs/exponential.md, "Float scores")."""
    u = np.array([0.0, 1.0, 2.0, 5.0])
    for monotone, c in ((False, 0.5), (True, 1.0)):
        p = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, monotone=monotone).probabilities(u)
        w = np.exp(c * (1 - 1e-6) * u)
        np.testing.assert_allclose(p, w / w.sum(), rtol=1e-9)


def test_composition_is_additive() -> None:
    # T answers at ε cost Tε: privdb's ledger sums exactly (see test_ledger for the ledger itself)
    assert sum([Fraction(1, 10)] * 50) == 5


# ---------------------------------------------------------------- validation


BAD_NUMBERS = st.sampled_from([0.0, -1.0, -1e-300, math.nan, math.inf, -math.inf])


@given(eps=BAD_NUMBERS)
def test_bad_epsilon_is_refused_everywhere(eps: float) -> None:
    makers = [
        lambda: Laplace(epsilon=eps, sensitivity=1.0),
        lambda: Geometric(epsilon=eps),
        lambda: Gaussian(epsilon=eps, delta=1e-6, sensitivity=1.0),
        lambda: ExponentialMechanism(epsilon=eps, sensitivity=1.0),
        lambda: KaryRandomizedResponse(epsilon=eps, k=3),
        lambda: BinaryRandomizedResponse.for_epsilon(eps),
        lambda: DiscreteGaussian(epsilon=eps, delta=1e-6),
    ]
    for make in makers:
        with pytest.raises(InvalidParameter, match="epsilon"):
            make()


@given(sens=BAD_NUMBERS)
def test_bad_sensitivity_is_refused(sens: float) -> None:
    with pytest.raises(InvalidParameter, match="sensitivity"):
        Laplace(epsilon=1.0, sensitivity=sens)
    with pytest.raises(InvalidParameter, match="sensitivity"):
        Gaussian(epsilon=1.0, delta=1e-6, sensitivity=sens)


@given(delta=st.sampled_from([0.0, 1.0, -0.1, 2.0, math.nan, math.inf]))
def test_bad_delta_is_refused(delta: float) -> None:
    with pytest.raises(InvalidParameter, match="delta"):
        Gaussian(epsilon=1.0, delta=delta, sensitivity=1.0)


def test_bad_values_are_refused() -> None:
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    for bad in ([], [1.0, math.nan], [math.inf], [[1.0, 2.0], [3.0, 4.0]]):
        with pytest.raises(InvalidParameter):
            mech.release(bad)
    with pytest.raises(InvalidParameter, match="integers"):
        Geometric(epsilon=1.0).release_int([1.5])
    with pytest.raises(InvalidParameter):
        KaryRandomizedResponse(epsilon=1.0, k=3).release(np.array([0, 3]))
    with pytest.raises(InvalidParameter, match="yes/no"):
        CoinProtocol().release([0, 2])
    with pytest.raises(InvalidParameter, match="utilities"):
        ExponentialMechanism(epsilon=1.0, sensitivity=1.0).select([1.0, math.nan])
    with pytest.raises(InvalidParameter, match="below 1/2"):
        FlipProtocol(p=0.5)


def test_messages_never_echo_private_values() -> None:
    secret = 123456.789
    with pytest.raises(InvalidParameter) as err:
        Laplace(epsilon=1.0, sensitivity=1.0).release([secret, math.nan])
    assert "123456" not in err.value.message


# ---------------------------------------------------------------- floating-point safety


@settings(max_examples=50, deadline=None)
@given(
    x=st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
    eps=st.floats(min_value=1e-3, max_value=10.0),
    sens=st.floats(min_value=1e-3, max_value=1e6),
)
def test_laplace_outputs_lie_on_the_public_grid(x: float, eps: float, sens: float) -> None:
    """Every output is a multiple of the granularity, which depends on (ε, Δ) only: no low-bit leak."""
    mech = Laplace(epsilon=eps, sensitivity=sens, rng=seeded(1))
    out = mech.release(np.full(16, x))
    steps = out / mech.granularity
    assert np.all(steps == np.rint(steps))
    assert mech.granularity == Laplace(epsilon=eps, sensitivity=sens).granularity


def test_neighbouring_inputs_share_the_output_grid() -> None:
    """Mironov's attack needs outputs possible from x = 1 but impossible from x = 0; here both sets are
    the same grid of multiples of g, so no single output separates them."""
    mech = Laplace(epsilon=1.0, sensitivity=1.0, rng=seeded(2))
    a = mech.release(np.zeros(100_000)) / mech.granularity
    b = mech.release(np.ones(100_000)) / mech.granularity
    assert np.all(a == np.rint(a)) and np.all(b == np.rint(b))


# ---------------------------------------------------------------- accuracy and unbiasedness


@pytest.mark.parametrize(
    "mech",
    [
        Laplace(epsilon=0.7, sensitivity=3.0, rng=seeded(3)),
        Geometric(epsilon=0.3, sensitivity=2, rng=seeded(4)),
        Gaussian(epsilon=0.9, delta=1e-6, sensitivity=2.0, rng=seeded(5)),
        DiscreteGaussian(rho=0.2, delta=1e-6, rng=seeded(6)),
    ],
    ids=lambda m: m.name,
)
def test_noise_is_unbiased_and_ci95_covers(mech: Laplace | Gaussian | DiscreteGaussian) -> None:
    n = 200_000
    truth = 42.0
    out = mech.release(np.full(n, truth))
    noise = out - truth
    # unbiased: mean within a 5.3-sigma band (two-sided p ≈ 1e-7)
    assert abs(noise.mean()) < 5.3 * math.sqrt(mech.variance() / n)
    # spread matches the declared variance (chi-square-like band on the sample variance)
    assert noise.var() == pytest.approx(mech.variance(), rel=0.03)
    # 95% interval covers the truth at least 95% of the time (discrete noise: a little more)
    w = mech.half_width(0.05)
    covered = int((np.abs(noise) <= w).sum())
    assert stats.binomtest(covered, n, 0.95, alternative="less").pvalue > ALPHA
    assert covered / n < 0.98  # not needlessly wide (small-σ discrete noise covers up to 97.5%)


def test_half_width_of_laplace_is_the_textbook_one() -> None:
    mech = Laplace(epsilon=1.0, sensitivity=1.0)
    for beta in (0.05, 0.01, 1e-6):
        assert mech.half_width(beta) == pytest.approx(math.log(1 / beta), rel=1e-5)
    lo, hi = mech.ci95(10.0)
    assert hi - 10.0 == pytest.approx(math.log(20), rel=1e-5)
    assert 10.0 - lo == pytest.approx(hi - 10.0)


# ---------------------------------------------------------------- Gaussian calibration


def test_analytic_gaussian_hits_delta() -> None:
    for eps, delta in ((1.0, 1e-5), (0.1, 1e-6), (3.0, 1e-8)):
        sigma = analytic_gaussian_sigma(eps, delta, 1.0)
        assert gaussian_delta(sigma, eps, 1.0) <= delta
        assert gaussian_delta(sigma * (1 - 1e-9), eps, 1.0) > delta * (1 - 1e-6)
        classic = math.sqrt(2 * math.log(1.25 / delta)) / eps
        if eps < 1:
            assert sigma < classic  # analytic calibration is tighter where the classic bound holds


def test_gaussian_mechanism_privacy_and_rho() -> None:
    mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
    assert mech.scale >= sigma
    assert mech.scale == pytest.approx(sigma, rel=1e-4)
    assert mech.cost.rho == pytest.approx(1.0 / (2 * mech.scale**2), rel=1e-4)
    # several changed coordinates are calibrated in zCDP: more noise, never less
    assert Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, changed=3).scale > mech.scale


def test_discrete_gaussian_zcdp() -> None:
    mech = DiscreteGaussian(rho=0.5, delta=1e-6, sensitivity=1)
    assert mech.rho <= 0.5
    assert mech.scale == pytest.approx(1.0)
    other = DiscreteGaussian(epsilon=1.0, delta=1e-6, sensitivity=3)
    assert other.epsilon == 1.0 and other.rho == pytest.approx(9 / (2 * other.scale**2))


# ---------------------------------------------------------------- exponential mechanism


def test_exponential_mechanism_samples_its_distribution() -> None:
    mech = ExponentialMechanism(epsilon=2.0, sensitivity=1.0, rng=seeded(7))
    u = np.array([0.0, 1.0, 1.5, 3.0, -2.0])
    n = 100_000
    picks = mech.select_many(u, n)
    expected = mech.probabilities(u) * n
    assert stats.chisquare(np.bincount(picks, minlength=u.size), expected).pvalue > ALPHA


def test_exponential_mechanism_is_stable_for_huge_utilities_and_many_candidates() -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, rng=seeded(8))
    u = np.zeros(2_000_000)
    u[123_456] = 1e4  # exp(5000) overflows a float; the Gumbel race does not care
    assert mech.select(u) == 123_456
    tied = np.full(1000, 1e6)
    picks = mech.select_many(tied, 20_000)
    assert stats.chisquare(np.bincount(picks, minlength=1000)).pvalue > ALPHA
