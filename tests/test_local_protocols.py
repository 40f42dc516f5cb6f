"""privdb.local: the notes' figures, ε from response matrices, the adversary's view, reports, errors."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.local import (
    BinaryProtocol,
    HashReports,
    KaryProtocol,
    LocalProtocol,
    OLHProtocol,
    OUEProtocol,
    SurveyStream,
    UnaryReports,
)
from privdb.local._gaps import GapSampler
from privdb.mechanisms import epsilon_of

# ----------------------------------------------------------------------- the notes' worked answers


def test_coin_protocol_is_ln3_dp_and_estimates_2p_minus_half() -> None:
    coin = BinaryProtocol.coin()
    assert coin.yes_given_yes == Fraction(3, 4) and coin.yes_given_no == Fraction(1, 4)
    assert coin.epsilon == pytest.approx(math.log(3))
    assert coin.epsilon_from_matrix() == pytest.approx(math.log(3), abs=1e-15)
    for observed in (0.25, 0.4, 0.6, 0.75):
        yes = round(observed * 100)
        responses = np.array([True] * yes + [False] * (100 - yes))
        assert coin.share_of_yes(responses).value == pytest.approx(2 * observed - 0.5)


def test_alpha_protocol_worked_answer_and_variance_bound() -> None:
    half = BinaryProtocol.alpha(0.5)
    estimate = half.share_of_yes(np.array([1] * 9 + [0] * 9))  # n = 18, Y = 9
    assert estimate.value == pytest.approx(0.5)
    for alpha in (0.1, 0.5, 0.9):
        proto = BinaryProtocol.alpha(alpha)
        assert proto.epsilon == pytest.approx(math.log((1 + alpha) / (1 - alpha)))
        assert proto.epsilon_from_matrix() == pytest.approx(proto.epsilon)
        for n in (18, 1000):
            assert proto.variance_bound(n) <= 1 / (alpha**2 * n)  # the notes' bound
            # the stated variance for any truth stays within the bound
            est = proto.estimator()
            for yes in (0, n // 3, n):
                var_share = est.variance([n - yes, yes])[1] / n**2
                assert var_share <= proto.variance_bound(n) + 1e-15


def test_flip_protocol_epsilon_and_posterior() -> None:
    for p in (0.1, 0.25, 0.4):
        proto = BinaryProtocol.flip(p)
        assert proto.epsilon == pytest.approx(math.log((1 - p) / p))
        for xi in (0.01, 0.5, 0.9):
            expected = (1 - p) * xi / ((1 - p) * xi + p * (1 - xi))
            assert proto.posterior_yes(xi, said_yes=True) == pytest.approx(expected)
            post = proto.posterior([1 - xi, xi], 1)
            assert post.sum() == pytest.approx(1.0) and post[1] == pytest.approx(expected)


def test_posterior_moves_at_most_by_e_to_the_epsilon() -> None:
    """ε-LDP bounds the adversary's odds update: posterior odds ≤ e^ε × prior odds, for every protocol."""
    rng = seeded(3)
    protocols: list[LocalProtocol[Any]] = [
        KaryProtocol(epsilon=1.0, d=5),
        OUEProtocol(epsilon=1.0, d=5),
        OLHProtocol(epsilon=1.0, d=5),
    ]
    prior = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    for proto in protocols:
        report = proto.randomizer(rng=rng).randomize(np.array([2]))
        one = (
            report.report(0)
            if isinstance(report, UnaryReports)
            else (int(report.a[0]), int(report.b[0]), int(report.y[0]))
            if isinstance(report, HashReports)
            else report
        )
        post = proto.posterior(prior, one)
        ratio = (post / prior) / (post / prior).min()
        assert ratio.max() <= math.exp(proto.epsilon) * (1 + 1e-9)


def test_heads_say_yes_is_not_dp_and_is_refused() -> None:
    heads = BinaryProtocol.heads_say_yes()
    assert heads.epsilon == math.inf
    assert heads.epsilon_from_matrix() == math.inf
    with pytest.raises(InvalidParameter, match="not differentially private"):
        heads.randomizer()
    said = heads.randomizer(rng=seeded(1), allow_non_private=True).randomize(np.zeros(1000, bool))
    assert 0 < said.mean() < 1
    # a "no" proves the truth: the adversary's posterior of yes is 0 whatever the prior
    assert heads.posterior_yes(0.99, said_yes=False) == 0.0


# -------------------------------------------------------------------------- ε of every protocol


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0, 5.0])
def test_epsilon_from_the_response_matrix_matches_the_claim(eps: float) -> None:
    krr = KaryProtocol(epsilon=eps, d=6)
    assert epsilon_of(krr.matrix) == pytest.approx(eps, rel=1e-12)
    assert krr.epsilon_from_matrix() == pytest.approx(eps, rel=1e-12)
    oue = OUEProtocol(epsilon=eps, d=4)
    full = epsilon_of(oue.matrix)  # the whole d × 2^d matrix
    assert full == pytest.approx(oue.epsilon_from_matrix(), rel=1e-12)
    assert full <= eps and full == pytest.approx(eps, rel=1e-7)  # q rounds up: ε never does
    olh = OLHProtocol(epsilon=eps, d=50)
    assert olh.epsilon_from_matrix() == pytest.approx(eps, rel=1e-12)
    binary = BinaryProtocol.for_epsilon(eps)
    assert binary.epsilon_from_matrix() == pytest.approx(eps, rel=1e-9)


def test_olh_parameters_follow_wang_et_al() -> None:
    olh = OLHProtocol(epsilon=2.0, d=10_000)
    assert olh.g == round(math.exp(2.0) + 1) == 8
    assert olh.prime == 10_007
    assert olh.collision <= 1 / olh.g
    # an ideal hash gives q* = 1/g; this family's is within 1e-3 of it for P ≫ g
    assert olh.q_star == pytest.approx(1 / olh.g, rel=1e-3)


def test_olh_collision_probability_is_exact() -> None:
    """c = P(H(x) = H(v)) for x ≠ v over the whole family, counted by brute force."""
    olh = OLHProtocol(epsilon=1.0, d=12, g=4)
    prime = olh.prime
    a, b = np.meshgrid(np.arange(1, prime), np.arange(prime))
    h0 = (a * 3 + b) % prime % olh.g
    h1 = (a * 7 + b) % prime % olh.g
    assert (h0 == h1).mean() == pytest.approx(olh.collision, abs=1e-12)


# --------------------------------------------------------------------------------------- reports


def test_oue_reports_are_canonical_sorted_sets() -> None:
    """The order inside a report must not tell which bit was the true one: every row is sorted."""
    proto = OUEProtocol(epsilon=0.5, d=40)
    reports = proto.randomizer(rng=seeded(7)).randomize(np.arange(4000) % 40)
    for i in range(0, len(reports), 97):
        row = reports.report(i)
        assert np.all(np.diff(row) > 0)
    bits = reports[10:20].to_bits()
    assert bits.shape == (10, 40)
    assert bits.sum() == reports.indptr[20] - reports.indptr[10]


def test_oue_rows_that_need_more_gaps_are_finished() -> None:
    """With few gaps per row, most rows take the slow path; reports stay sorted and the counts right."""
    proto = OUEProtocol(epsilon=0.5, d=50)
    client = proto.randomizer(rng=seeded(8))
    client._per_row = 4  # type: ignore[attr-defined]
    values = np.arange(3000) % 50
    reports = client.randomize(values)
    for i in range(0, 3000, 101):
        assert np.all(np.diff(reports.report(i)) > 0)
    f = proto.estimate(reports)
    est = proto.estimator()
    z = (f.counts - 60) / np.sqrt(est.variance(np.full(50, 60)))
    assert np.abs(z).max() < 5.5  # Bonferroni over 50 values at 1e-6 overall


def test_gap_sampler_exact_path() -> None:
    """A uniform of 0 bits leaves the table and the float path; the exact comparison decides it."""
    sampler = GapSampler(1 << 29)  # q = 1/8

    class Zeros:
        def __init__(self) -> None:
            self.rest = seeded(4)
            self.calls = 0

        def words(self, n: int) -> NDArray[np.uint64]:
            self.calls += 1
            return np.zeros(n, dtype=np.uint64) if self.calls == 1 else self.rest.words(n)

    out = sampler.draw(4, Zeros())
    assert (out >= 0).all() and out.max() > 50  # U < 2^-80: a gap of at least ln(2^80)/ln(8/7)


def test_gap_sampler_is_geometric() -> None:
    """χ² goodness of fit of 400,000 gaps to (1 − q)^k q at α = 1e-6."""
    from scipy import stats

    sampler = GapSampler(1 << 30)  # q = 1/4
    gaps = sampler.draw(400_000, seeded(5))
    k = np.arange(30)
    expected = 0.75**k * 0.25 * gaps.size
    observed = np.bincount(np.minimum(gaps, 29), minlength=30)
    expected[-1] = gaps.size * 0.75**29
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < stats.chi2.isf(1e-6, df=29)


def test_olh_enumeration_matches_brute_force() -> None:
    proto = OLHProtocol(epsilon=1.0, d=37)
    reports = proto.randomizer(rng=seeded(9)).randomize(np.arange(500) % 37)
    support = proto.estimator()._support(reports)[0]
    brute = np.zeros(37, dtype=np.int64)
    for v in range(37):
        brute[v] = int((reports.hash(np.full(500, v)) == reports.y).sum())
    assert np.array_equal(support, brute)


def test_stream_of_batches_equals_one_shot() -> None:
    proto = KaryProtocol(epsilon=1.0, d=7)
    reports = proto.randomizer(rng=seeded(10)).randomize(np.arange(7000) % 7)
    stream = SurveyStream(proto, keep_history=True).extend(
        reports[i : i + 1000] for i in range(0, 7000, 1000)
    )
    assert stream.n == 7000 and stream.batches == 7 and len(stream.history) == 7
    assert np.allclose(stream.estimate().counts, proto.estimate(reports).counts)
    left, right = SurveyStream(proto).add(reports[:3000]), SurveyStream(proto).add(reports[3000:])
    assert np.allclose(left.merge(right).estimate().counts, stream.estimate().counts)


# ---------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf, 51.0])
def test_bad_epsilon_is_refused(eps: float) -> None:
    for make in (KaryProtocol, OUEProtocol, OLHProtocol):
        with pytest.raises(InvalidParameter, match="epsilon"):
            make(epsilon=eps, d=4)


@pytest.mark.parametrize("d", [0, 1, -3, 2.5, True])
def test_empty_or_bad_domains_are_refused(d: object) -> None:
    for make in (KaryProtocol, OUEProtocol, OLHProtocol):
        with pytest.raises(InvalidParameter, match="domain"):
            make(epsilon=1.0, d=d)  # type: ignore[arg-type]


def test_values_outside_the_domain_are_refused_without_showing_them() -> None:
    for proto in (
        KaryProtocol(epsilon=1.0, d=4),
        OUEProtocol(epsilon=1.0, d=4),
        OLHProtocol(epsilon=1.0, d=4),
    ):
        client = proto.randomizer(rng=seeded(1))
        with pytest.raises(InvalidParameter, match=r"domain \[0, 4\)") as err:
            client.randomize(np.array([0, 1, 123457]))
        assert "123457" not in err.value.message
        with pytest.raises(InvalidParameter, match="empty"):
            client.randomize(np.array([], dtype=np.int64))
        with pytest.raises(InvalidParameter, match="integers"):
            client.randomize(np.array([0.5, 1.0]))
    krr = KaryProtocol(epsilon=1.0, d=4)
    with pytest.raises(InvalidParameter, match="responses"):
        krr.estimate(np.array([0, 4]))
    with pytest.raises(InvalidParameter, match="no reports"):
        krr.estimator().estimate()


def test_reports_of_another_protocol_are_refused() -> None:
    olh = OLHProtocol(epsilon=1.0, d=20)
    other = OLHProtocol(epsilon=3.0, d=20).randomizer(rng=seeded(2)).randomize(np.arange(20))
    with pytest.raises(InvalidParameter, match="protocol that made them"):
        olh.estimate(other)
    with pytest.raises(InvalidParameter, match="HashReports"):
        olh.estimate(np.arange(3))  # type: ignore[arg-type]
    oue = OUEProtocol(epsilon=1.0, d=5)
    bad = UnaryReports(5, np.array([0, 1]), np.array([7], dtype=np.uint16))
    with pytest.raises(InvalidParameter, match="outside the domain"):
        oue.estimate(bad)
    with pytest.raises(InvalidParameter, match="merged"):
        KaryProtocol(epsilon=1.0, d=4).estimator().merge(KaryProtocol(epsilon=2.0, d=4).estimator())
    with pytest.raises(InvalidParameter, match="prior"):
        KaryProtocol(epsilon=1.0, d=3).posterior([0.5, 0.5], np.array([1]))
