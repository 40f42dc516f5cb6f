"""Every calibration ends (issue 25, "calibrations that always end"): a mechanism, a zCDP conversion or a
planning search given extreme parameters either answers or is refused with a ``PrivdbError`` naming the
parameter, in a bounded number of rounds and before anything is read (docs/proofs/gaussian.md, "Every
search ends").

The property tests count rounds through ``privdb.deadline.check`` (every search loop calls it once per
round) and guard the rest with a generous 10 s alarm against an infinite loop; they check behaviour, not
speed. The end-to-end tests are the three findings: ``USING GAUSSIAN`` over a column bounded at ±1e308
(the σ search used to halve ``inf`` forever), ε ≥ 710 on a personalised table (``e^ε`` overflowed) and
MEDIAN at ε = 1e-7 (failed after reading, charged).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdb import deadline
from privdb.accounting import zcdp
from privdb.database import Database
from privdb.errors import PrivdbError
from privdb.mechanisms import DiscreteGaussian, ExponentialMechanism, Gaussian, Geometric, Laplace
from privdb.mechanisms.gaussian import analytic_gaussian_sigma
from privdb.mechanisms.noise_reduction import NoiseReduction
from privdb.publish.parameters import parameters
from privdb.sql import engine
from privdb.sql.plan.personal import inclusion

EXTREMES = [1e308, 5e-324, 1e-300, 1000.0, 1e-12, 1.0, 0.5, 2.0**50, math.nan, math.inf, -1.0, 0.0]
DELTAS = [5e-324, 1e-300, 1e-12, 1e-6, 0.5, 1 - 1e-16, math.nan, math.inf, 0.0, 1.0]
MAX_ROUNDS = 20_000  # deadline checks one calibration may make (the documented bounds sum to about 5,000)
GUARD = 10  # seconds: an infinite loop, not a slow one


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the rounds of every search loop (each calls ``deadline.check`` once per round)."""
    rounds = [0]
    real = deadline.check

    def check() -> None:
        rounds[0] += 1
        assert rounds[0] <= MAX_ROUNDS, "a calibration loop ran past its bound"
        real()

    monkeypatch.setattr(deadline, "check", check)
    return rounds


@contextlib.contextmanager
def _guard() -> Iterator[None]:
    """Stop a runaway call after ``GUARD`` seconds (an infinite loop, not a slow one)."""

    def runaway(signum: int, frame: object) -> None:
        raise AssertionError(f"a calibration ran for more than {GUARD} s")

    previous = signal.signal(signal.SIGALRM, runaway)
    signal.alarm(GUARD)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _ends(make: Callable[[], Any], rounds: list[int]) -> None:
    """``make()`` answers (a usable, finite mechanism) or raises a PrivdbError; rounds are bounded."""
    rounds[0] = 0
    with _guard():
        refused: PrivdbError | None = None
        try:
            made = make()
        except PrivdbError as err:
            refused = err
        if refused is not None:
            assert refused.code in ("invalid_parameter", "unsupported_query"), refused
            assert refused.message and "Traceback" not in refused.message
            return
        if hasattr(made, "scale"):
            assert math.isfinite(made.scale) and made.scale > 0
            assert math.isfinite(made.half_width(0.05))
            assert np.all(np.isfinite(made.release([0.0, 1.0])))
        elif isinstance(made, float):
            assert not math.isnan(made)


extreme = st.sampled_from(EXTREMES) | st.floats(allow_nan=True, allow_infinity=True)
delta = st.sampled_from(DELTAS) | st.floats(min_value=0.0, max_value=1.0)
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@fast
@given(epsilon=extreme, delta=delta, sensitivity=extreme, changed=st.sampled_from([1, 3, 10**6]))
def test_gaussian_calibrations_end(
    counted: list[int], epsilon: float, delta: float, sensitivity: float, changed: int
) -> None:
    _ends(lambda: analytic_gaussian_sigma(epsilon, delta, sensitivity), counted)
    _ends(lambda: Gaussian(epsilon=epsilon, delta=delta, sensitivity=sensitivity, changed=changed), counted)
    _ends(lambda: Gaussian(rho=epsilon, delta=delta, sensitivity=sensitivity, changed=changed), counted)


@fast
@given(value=extreme, delta=delta, sensitivity=st.sampled_from([1, 7, 2**40, 10**400]))
def test_discrete_gaussian_and_zcdp_conversions_end(
    counted: list[int], value: float, delta: float, sensitivity: int
) -> None:
    _ends(lambda: DiscreteGaussian(epsilon=value, delta=delta, sensitivity=sensitivity), counted)
    _ends(lambda: DiscreteGaussian(rho=value, delta=delta, sensitivity=sensitivity), counted)
    _ends(lambda: zcdp.rho_from_epsilon(value, delta), counted)
    _ends(lambda: zcdp.epsilon_from_rho(value, delta), counted)


@fast
@given(epsilon=extreme, sensitivity=extreme)
def test_laplace_exponential_and_noise_reduction_calibrations_end(
    counted: list[int], epsilon: float, sensitivity: float
) -> None:
    _ends(lambda: Laplace(epsilon=epsilon, sensitivity=sensitivity), counted)
    _ends(lambda: Geometric(epsilon=epsilon, sensitivity=7), counted)
    _ends(lambda: ExponentialMechanism(epsilon=epsilon, sensitivity=sensitivity).select([0.0, 1.0]), counted)
    _ends(lambda: NoiseReduction(epsilons=[epsilon / 2, epsilon], sensitivity=sensitivity), counted)


@fast
@given(epsilon=st.floats(min_value=0.0, max_value=1e308) | st.sampled_from(EXTREMES), t=st.sampled_from(
    [1e-12, 0.5, 1.0, 709.0, 710.0, 1000.0, 1e308]
))  # fmt: skip
def test_personalised_inclusion_is_a_probability(counted: list[int], epsilon: float, t: float) -> None:
    if math.isnan(epsilon) or epsilon <= 0:
        return
    pi = inclusion(epsilon, t)
    assert 0.0 <= pi <= 1.0
    assert pi == 1.0 or epsilon < t


@pytest.mark.parametrize("epsilon", [1e-12, 0.01, 1.0, 50.0, 1000.0])
@pytest.mark.parametrize("delta", [1e-300, 1e-6, 0.5])
def test_safepub_parameters_end(counted: list[int], epsilon: float, delta: float) -> None:
    _ends(lambda: parameters(epsilon, delta), counted)


def test_the_gaussian_finding_through_the_library(counted: list[int]) -> None:
    """The σ search itself, whatever SQL refuses earlier: Δ = 1e308 used to halve ``inf`` forever."""
    with _guard(), pytest.raises(PrivdbError) as caught:
        Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1e308)
    assert caught.value.code == "invalid_parameter" and "sensitivity 1e+308" in caught.value.message
    assert counted[0] <= MAX_ROUNDS


def test_the_documented_bounds_are_the_searches_bounds(counted: list[int]) -> None:
    """The worst case named in docs/proofs/gaussian.md: a Gaussian calibration at the edge of its range
    takes at most 2·2200 + 200 rounds for σ and 1100 + 200 conversions for ρ."""
    Gaussian(epsilon=1e-6, delta=1e-300, sensitivity=1e-300)
    assert counted[0] <= 2 * 2200 + 200 + 2 * 1300
    counted[0] = 0
    Gaussian(rho=1e-6, delta=1e-6, sensitivity=1.0, changed=4)
    assert 0 < counted[0] <= 1100 + 200 + 2 * 2200 + 200


# ---- the three findings, end to end


def _database(tmp_path: Path) -> Database:
    db = Database(tmp_path / "db")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"x": rng.uniform(-100, 100, 300), "eps": rng.choice([0.5, 1.0, 800.0], 300)})
    db.backend.load_frame("wide", frame[["x"]])
    db.set_metadata("wide", {"columns": {"x": {"type": "float", "lower": -1e308, "upper": 1e308}}})
    db.backend.load_frame("people", frame)
    db.set_metadata("people", {
        "columns": {"x": {"type": "float", "lower": -100, "upper": 100},
                    "eps": {"type": "float", "lower": 0.5, "upper": 2000}},
        "epsilon_column": "eps",
    })  # fmt: skip
    db.grant("eve", epsilon=5000, delta=1e-3)
    db.grant("broke", epsilon=1e-9, delta=1e-3)
    return db


def _refused_free(db: Database, analyst: str, query: str) -> PrivdbError:
    """``query`` is refused with a clear error before reading: nothing spent, nothing logged as an answer."""
    before = db.budget(analyst).epsilon_remaining
    with pytest.raises(PrivdbError) as caught:
        engine.run(db, analyst, query)
    assert caught.value.code in ("invalid_parameter", "unsupported_query"), caught.value
    assert db.budget(analyst).epsilon_remaining == before
    return caught.value


def test_gaussian_over_bounds_near_1e308_is_refused_free(tmp_path: Path, counted: list[int]) -> None:
    db = _database(tmp_path)
    query = "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN SUM(x) FROM wide"
    err = _refused_free(db, "eve", query)  # by the σ search here; by the sum's bounds (bounds.py) too
    assert "x" in err.message and ("sensitivity" in err.message or "bounds" in err.message)
    for analyst in (None, "eve", "broke"):  # explain (free) and an analyst with no budget end too
        with pytest.raises(PrivdbError) as caught:
            engine.explain(db, query, analyst)
        assert caught.value.code in ("invalid_parameter", "unsupported_query")
    with pytest.raises(PrivdbError):
        engine.run(db, "broke", query)
    assert db.budget("eve").epsilon_spent == 0


def test_a_personalised_table_answers_at_epsilon_above_709(tmp_path: Path) -> None:
    db = _database(tmp_path)
    result = engine.run(db, "eve", "DP-SELECT 800 COUNT(*) FROM people")
    assert result.epsilon_spent == 800
    classes = {c["class"]: c for c in result.to_dict()["personalised"]["classes"]}
    assert classes["largest"]["inclusion"] == 1.0 and 0.0 <= classes["smallest"]["inclusion"] < 1e-300
    # the rows at ε = 800 are kept (π = 1), the others all but never: the count is near their number
    kept = int((db.owner_sql("SELECT eps FROM people")["eps"] >= 800).sum())
    assert abs(result.rows[0][0] - kept) <= 1
    explained = engine.explain(db, "DP-SELECT 1000 COUNT(*) FROM people", "eve")
    assert explained["personalised"]["threshold"] == 1000


def test_median_at_tiny_epsilon_is_refused_before_reading(tmp_path: Path) -> None:
    db = _database(tmp_path)
    err = _refused_free(db, "eve", "DP-SELECT 1e-7 MEDIAN(x) FROM people")
    assert "epsilon 1e-07" in err.message and "use epsilon >=" in err.message
    _refused_free(db, "eve", "DP-SELECT 1e-7 MEDIAN(x) FROM wide")  # (its bounds are refused first)
    answered = engine.run(db, "eve", "DP-SELECT 1e-6 MEDIAN(x) FROM people")  # a little more ε works
    assert len(answered.rows) == 1


def test_noise_too_small_to_calibrate_is_refused_before_reading(tmp_path: Path) -> None:
    """A Laplace statistic or an accuracy-first step whose ε is too small for its sensitivity used to fail
    after reading (charged, internal_error); it is now refused while planning."""
    db = _database(tmp_path)
    _refused_free(db, "eve", "DP-SELECT 1e-10 SUM(x) FROM wide")
    _refused_free(db, "eve", "DP-SELECT 1e-12 VARIANCE(x) FROM people")


def test_planning_past_the_time_limit_is_refused_free(tmp_path: Path) -> None:
    db = _database(tmp_path)
    db.query_timeout = 1e-9  # any planning round runs past it
    query = "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN SUM(x) FROM people"
    err = _refused_free(db, "eve", query)
    assert isinstance(err, deadline.PlanningTimeout) and "limit" in err.message
    db.query_timeout = 30.0
    assert len(engine.run(db, "eve", query).rows) == 1


def test_sigterm_stops_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's SIGTERM handler (installed at start-up, before uvicorn's) makes planning's next
    round raise ``ShuttingDown`` (free, ``engine_unavailable``), then runs the handler it wrapped."""
    assert threading.current_thread() is threading.main_thread()
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    monkeypatch.setattr(deadline, "_STOPPING", threading.Event())
    try:
        deadline.stop_on_term()
        signal.raise_signal(signal.SIGTERM)
        assert seen == [signal.SIGTERM]
        deadline.check()  # outside planning: nothing (the noise step after a read always finishes)
        with deadline.limit(None), pytest.raises(deadline.ShuttingDown) as caught:
            Gaussian(epsilon=1.0, delta=1e-6, sensitivity=1.0)
        assert caught.value.code == "engine_unavailable"
    finally:
        signal.signal(signal.SIGTERM, previous)
