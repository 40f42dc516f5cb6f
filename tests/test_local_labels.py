"""privdb.local with labels: protocols over a domain of labels randomise labels and estimate per label, with
exactly the draws of the same protocol over integer codes; bad labels are refused without being shown."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.local import BinaryProtocol, KaryProtocol, LocalProtocol, OLHProtocol, OUEProtocol
from privdb.local.domain import Domain
from privdb.local.survey import Survey

CITIES = ["Paris", "Lyon", "Nice", "Lille", "Nantes"]
TRUTH = np.repeat(np.arange(5), [3000, 2000, 1500, 1000, 500])  # 8,000 people's codes


def _pair(kind: Any, eps: float = 2.0) -> tuple[LocalProtocol[Any], LocalProtocol[Any]]:
    return kind(epsilon=eps, d=len(CITIES)), kind(epsilon=eps, domain=CITIES)


@pytest.mark.parametrize("kind", [KaryProtocol, OUEProtocol, OLHProtocol])
def test_labels_give_exactly_the_estimates_of_codes(kind: Any) -> None:
    """The same seed over codes and over labels draws the same reports: the estimates agree exactly."""
    coded, labelled = _pair(kind)
    by_code = coded.estimate(coded.randomizer(rng=seeded(7)).randomize(TRUTH))
    answers = [CITIES[i] for i in TRUTH]
    by_label = labelled.estimate(labelled.randomizer(rng=seeded(7)).randomize(answers))
    assert np.array_equal(by_code.counts, by_label.counts)
    assert by_label.labels == tuple(CITIES) and by_code.labels == tuple(range(5))
    for i, city in enumerate(CITIES):
        assert by_label[city] == by_code[i]
        assert by_label.share(city) == by_code.share(i)


def test_direct_reports_are_labels_and_intervals_cover_the_truth() -> None:
    """k-RR over labels sends labels. Each interval covers its count (z = 5 per value, 5 values: false
    failure below 3e-6)."""
    krr = KaryProtocol(epsilon=1.5, domain=CITIES)
    reports = krr.randomizer(rng=seeded(11)).randomize([CITIES[i] for i in TRUTH])
    assert set(reports.tolist()) <= set(CITIES) and len(reports) == TRUTH.size
    freq = krr.estimate(reports)
    frame = freq.to_frame()
    assert list(frame.columns) == [
        "value", "count", "share", "std_error", "ci95_low", "ci95_high", "projected_share",
    ]  # fmt: skip
    assert frame["value"].tolist() == CITIES
    for city, true in zip(CITIES, np.bincount(TRUTH), strict=True):
        est = freq[city]
        assert abs(est.value - true) <= 5 * est.std_error
    assert frame["projected_share"].sum() == pytest.approx(1.0)


def test_binary_protocols_take_their_two_labels_in_order() -> None:
    coin = BinaryProtocol.coin(domain=["no", "yes"])
    answers = ["yes"] * 3000 + ["no"] * 7000
    said = coin.randomizer(rng=seeded(3)).randomize(answers)
    assert set(said.tolist()) == {"no", "yes"}
    share = coin.share_of_yes(said)
    assert abs(share.value - 0.3) <= 5 * share.std_error  # z = 5: false failure 6e-7
    assert coin.posterior_yes(0.5, True) == pytest.approx(0.75)
    assert BinaryProtocol.coin().randomizer(rng=seeded(3)).randomize([True, False]).dtype == np.bool_


def test_unknown_labels_are_counted_never_shown() -> None:
    for proto in _pair(KaryProtocol)[1], _pair(OUEProtocol)[1], _pair(OLHProtocol)[1]:
        with pytest.raises(InvalidParameter, match="2 of 4 values are not values of the domain") as err:
            proto.randomizer(rng=seeded(1)).randomize(["Paris", "Marseille-secret", "Lyon", "Brest-secret"])
        assert "secret" not in err.value.message
        with pytest.raises(InvalidParameter, match="empty"):
            proto.randomizer(rng=seeded(1)).randomize([])
    krr = KaryProtocol(epsilon=1.0, domain=CITIES)
    with pytest.raises(InvalidParameter, match="responses are not values"):
        krr.estimate(np.array(["Paris", "Rome"], dtype=object))
    with pytest.raises(InvalidParameter, match="value asked for"):
        krr.estimate(np.array(["Paris"], dtype=object))["Rome"]


def test_a_domain_is_a_size_or_distinct_labels_given_once() -> None:
    assert Domain(3).coded and Domain([0, 1, 2]).coded and not Domain(["a", "b"]).coded
    with pytest.raises(InvalidParameter, match="disagrees"):
        KaryProtocol(epsilon=1.0, d=3, domain=CITIES)
    with pytest.raises(InvalidParameter, match="give the domain"):
        OUEProtocol(epsilon=1.0)
    with pytest.raises(InvalidParameter, match="distinct"):
        KaryProtocol(epsilon=1.0, domain=["a", "b", "a"])
    with pytest.raises(InvalidParameter, match="hashable"):
        OLHProtocol(epsilon=1.0, domain=[["a"], ["b"]])
    with pytest.raises(InvalidParameter, match="at least 2"):
        KaryProtocol(epsilon=1.0, domain=["only"])
    assert KaryProtocol(epsilon=1.0, domain=CITIES).likelihood("Nice").argmax() == 2


def test_accessors_follow_one_rule() -> None:
    """What an object holds is a property, what it computes from arguments a method (CHANGELOG, issue 15)."""
    for proto in (BinaryProtocol.coin(), *_pair(KaryProtocol), *_pair(OUEProtocol), *_pair(OLHProtocol)):
        for held in ("epsilon", "pair_matrix", "domain"):
            assert isinstance(getattr(type(proto), held, None), property) or held == "domain", held
        assert callable(proto.estimator) and callable(proto.randomizer) and callable(proto.estimate)
    freq = KaryProtocol(epsilon=1.0, d=3).estimate(np.array([0, 1, 2, 2]))
    for held in ("shares", "std_errors", "ci95", "projected", "labels"):
        assert isinstance(getattr(type(freq), held), property), held


def test_a_survey_randomises_text_answers_on_the_respondents_side() -> None:
    """Survey.answers reads text lines as labels (integers too), Survey.randomize sends only reports in the
    wire forms, and the collector's side reads them back."""
    for protocol, eps in (("krr", 2.0), ("oue", 2.0), ("olh", 2.0), ("coin", None)):
        spec: dict[str, Any] = {"protocol": protocol, "domain": [10, 20, 30] if protocol != "coin" else None}
        spec = {k: v for k, v in spec.items() if v is not None} | ({"epsilon": eps} if eps else {})
        survey = Survey(spec)
        lines = ["10", " 20 ", "", "30", "10"] if protocol != "coin" else ["yes", "no", "yes"]
        answers = survey.answers(lines)
        assert answers == ([10, 20, 30, 10] if protocol != "coin" else ["yes", "no", "yes"])
        sent = survey.randomize(answers, rng=seeded(4))
        assert len(sent) == len(answers)
        support, n = survey.support(sent)
        assert n == len(answers) and len(support) == len(survey.domain)
    with pytest.raises(InvalidParameter, match="1 of 2 answers") as err:
        Survey({"protocol": "krr", "epsilon": 1.0, "domain": ["a", "b"]}).answers(["a", "hidden-c"])
    assert "hidden" not in err.value.message
    with pytest.raises(InvalidParameter, match="also as text"):
        Survey({"protocol": "krr", "epsilon": 1.0, "domain": [1, "1"]})
