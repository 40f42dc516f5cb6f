"""USING SMOOTH against the notes' attack on the median's data-dependent noise (issue 31): an empirical ε
audit on the two neighbouring databases whose local sensitivities are 0 and L/2, the same audit catching
noise scaled to the local sensitivity, and refusals that read and spend nothing.

False-failure rate: the audit's bound exceeds a correct mechanism's ε with probability ≤ 1e-6 (its
Clopper–Pearson confidence); the draws are seeded, so the outcome is fixed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.audit import audit
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.mechanisms.smooth import smooth_beta, smooth_noise, smooth_sensitivity_counts
from privdb.sql import engine

EPS, DELTA, CELLS = 1.0, 1e-6, 11  # values 0 … 10


def _draws(counts: np.ndarray, *, local: bool = False, seed: int = 0):  # type: ignore[no-untyped-def]
    beta = smooth_beta(EPS, DELTA)
    median, s = smooth_sensitivity_counts(counts, 0.0, 1.0, 0.5, beta)
    if local:  # the broken mechanism: the local sensitivity alone (0 on the first database)
        s = smooth_sensitivity_counts(counts, 0.0, 1.0, 0.5, 1e9)[1]
    rng = seeded(seed)
    return lambda n: smooth_noise(median, s, EPS, lo=0.0, hi=10.0, resolution=1.0, rng=rng, size=n)


# the notes' pair: 21 values, m = 11; x₁ … x₁₂ = 0 and the rest 10, against x₁ … x₁₁ = 0 (one value moved)
FIRST = np.bincount([0] * 12 + [10] * 9, minlength=CELLS)
SECOND = np.bincount([0] * 11 + [10] * 10, minlength=CELLS)


def test_smooth_median_passes_the_audit() -> None:
    found = audit("smooth median", _draws(FIRST, seed=1), _draws(SECOND, seed=2), epsilon=EPS, delta=DELTA,
                  samples=200_000, confidence=1 - 1e-6)  # fmt: skip
    assert found.passed, found.to_dict()


def test_the_audit_catches_local_sensitivity_noise() -> None:
    found = audit("local median", _draws(FIRST, local=True, seed=3), _draws(SECOND, local=True, seed=4),
                  epsilon=EPS, delta=DELTA, samples=200_000, confidence=1 - 1e-6)  # fmt: skip
    assert not found.passed and found.epsilon_lower_bound > 3 * EPS


@pytest.fixture
def db(tmp_path: Path) -> Database:
    d = Database(tmp_path / "db")
    frame = pd.DataFrame({"x": [0] * 12 + [10] * 9, "k": ["a"] * 21})
    d.backend.load_frame("t", frame)
    d.set_metadata("t", {"columns": {"x": {"type": "int", "lower": 0, "upper": 10},
                                     "k": {"type": "text", "values": ["a", "b"]}}})  # fmt: skip
    d.grant("alice", epsilon=10, delta=1e-3)
    return d


def test_the_query_path(db: Database) -> None:
    result = engine.run(db, "alice", "DP-SELECT 1 DELTA 1e-6 USING SMOOTH MEDIAN(x) FROM t")
    value = float(result.rows[0][0])
    assert 0 <= value <= 10 and value == round(value)
    assert result.accuracy[0]["mechanism"] == "smooth_sensitivity" and result.accuracy[0]["ci95"] is None
    grouped = engine.run(db, "alice", "DP-SELECT 1 DELTA 1e-6 USING SMOOTH k, MEDIAN(x) FROM t GROUP BY k")
    assert len(grouped.rows) == 2


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("DP-SELECT 1 DELTA 1e-6 USING SMOOTH COUNT(*) FROM t", "MEDIAN and QUANTILE only"),
        ("DP-SELECT 1 DELTA 1e-6 USING SMOOTH MEDIAN(x), SUM(x) FROM t", "MEDIAN and QUANTILE only"),
        ("DP-SELECT 1 USING SMOOTH MEDIAN(x) FROM t", "needs δ > 0"),
        ("DP-SELECT ACCURACY 1 DELTA 1e-6 USING SMOOTH MEDIAN(x) FROM t", "not ACCURACY"),
    ],
)
def test_refusals_spend_nothing(db: Database, query: str, message: str) -> None:
    with pytest.raises(PrivdbError, match=message):
        engine.run(db, "alice", query)
    # the whole grant (ε 10) is still there: the refusal spent nothing
    spent = engine.run(db, "alice", "DP-SELECT 10 DELTA 1e-6 USING SMOOTH MEDIAN(x) FROM t")
    assert spent.epsilon_spent == 10
