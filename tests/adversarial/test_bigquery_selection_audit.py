"""A total's row in BigQuery's spelling is released by its noisy count of units (privdb.sql.plan.selection):
on two neighbouring databases (one unit in, one out) the probability that the row is released may differ by
at most e^ε' (ε' the share of ε that count gets), the guarantee of the count it reads: an exact count, or
one noised at a larger share, would show here as probabilities far apart.

The count's threshold is set at the larger neighbour's count (k_threshold): without the unit the row is
released with probability q/(1 + q), with it 1/(1 + q), q = e^(−ε'), exactly the bound. Each probability is
estimated from ``RUNS`` answers; the check allows 5 standard errors of the difference (a false failure
≤ 6e-7 by the normal approximation)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from adversarial.neighbours import neighbours
from conftest import seeded
from privdb.mechanisms.laplace import Geometric
from privdb.sql import engine
from privdb.sql.plan.selection import spent_delta

RUNS = 400
EPSILON = 0.5
META = {
    "privacy_unit": "uid",
    "max_contributions": 1,
    "max_groups": 1,
    "columns": {"uid": {"type": "int", "private_id": True}, "x": {"type": "float", "lower": 0, "upper": 1}},
}
# each text its own question (WHERE uid > -i): a repeat would be the stored answer
QUERY = (
    f"SELECT WITH ANONYMIZATION OPTIONS(epsilon={EPSILON}, k_threshold=10) "
    "ANON_SUM(x CLAMPED BETWEEN 0 AND 1) FROM people WHERE uid > -{i}"
)


def test_the_release_of_a_total_is_as_private_as_its_noisy_count(tmp_path: Path) -> None:
    frame = pd.DataFrame({"uid": range(1, 10), "x": [0.5] * 9})
    pair = neighbours(tmp_path, frame, {"uid": 10, "x": 0.5}, META)
    try:
        rates = []
        for db in pair.both():
            db.grant("eve", epsilon=EPSILON * RUNS * 2, delta=0)
            released = sum(len(engine.run(db, "eve", QUERY.format(i=i)).rows) for i in range(RUNS))
            rates.append(released / RUNS)
        share = next(
            s["epsilon"]
            for s in engine.explain(pair.with_, QUERY.format(i=0), "eve")["statistics"]
            if s["kind"] == "distinct_unit"
        )
    finally:
        pair.close()
    without, with_ = rates
    error = math.sqrt(sum(p * (1 - p) for p in rates) / RUNS)
    q = math.exp(-share)
    assert abs(without - q / (1 + q)) < 5 * error and abs(with_ - 1 / (1 + q)) < 5 * error, rates
    assert with_ <= math.exp(share) * without + 5 * error * (1 + math.exp(share)), rates


def test_a_threshold_raised_by_m_releases_a_lone_unit_no_more_often_than_its_delta() -> None:
    """The δ charged for a τ raised by min_privacy_units_per_group (privdb.sql.plan.selection.spent_delta) is
    the probability that a group one neighbour lacks (one unit) passes τ: measured on 20,000 noisy counts
    at rate 1 and τ = 3 it is q²/(1 + q) ≈ 0.0996; the check allows 5 standard errors (false failure
    ≤ 6e-7)."""
    draws = 20_000
    mech = Geometric(epsilon=1.0, sensitivity=1, rng=seeded(5))
    passed = float(((1 + mech.noise(draws)) >= 3).mean())
    claimed = spent_delta(mech, reach=1, changed=1, tau=3.0, delta=1.0)
    q = math.exp(-1.0)
    assert claimed == pytest.approx(q**2 / (1 + q))
    assert abs(passed - claimed) < 5 * math.sqrt(claimed * (1 - claimed) / draws), (passed, claimed)
