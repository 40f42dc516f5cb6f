"""Lee & Clifton's disclosure bound (issue 16): formula vectors, the inverse, the bound against the exact
Bayes posterior of Laplace answers, explain's figure and `privdb epsilon`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import privdb
from privdb.accounting.disclosure import disclosure_risk, epsilon_for_risk
from privdb.cli import app
from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.errors import InvalidParameter

runner = CliRunner()


def test_vectors() -> None:
    assert disclosure_risk(math.log(3)) == pytest.approx(0.75)  # presence: e^ε / (1 + e^ε)
    assert epsilon_for_risk(0.75) == pytest.approx(math.log(3))
    assert disclosure_risk(0) == pytest.approx(0.5)
    assert disclosure_risk(1, worlds=10) == pytest.approx(1 / (1 + 9 * math.exp(-1)))
    # a query whose worlds differ by half its sensitivity gives away half as much per ε
    assert disclosure_risk(2, spread=0.5) == pytest.approx(disclosure_risk(1))


@given(
    st.floats(0.0, 20.0),
    st.integers(2, 1000),
    st.floats(0.1, 100.0),
    st.floats(0.01, 1.0),
)
def test_the_inverse_gives_back_epsilon(
    epsilon: float, worlds: int, sensitivity: float, fraction: float
) -> None:
    risk = disclosure_risk(epsilon, worlds=worlds, sensitivity=sensitivity, spread=fraction * sensitivity)
    if 1 / worlds < risk < 1 - 1e-12:
        back = epsilon_for_risk(risk, worlds=worlds, sensitivity=sensitivity, spread=fraction * sensitivity)
        assert back == pytest.approx(epsilon, rel=1e-6, abs=1e-9)


def test_the_bound_holds_for_the_exact_posterior_and_is_tight() -> None:
    """Two worlds f = 0 and f = 1 (Δf = Δv = 1), Laplace(1/ε) answers: the posterior of the true world,
    computed exactly from the two densities, never exceeds the bound, and reaches it beyond both values."""
    eps = 0.8
    answers = np.linspace(-10, 11, 4001)

    def density(r: np.ndarray, f: float) -> np.ndarray:
        return np.exp(-np.abs(r - f) * eps)

    posterior = density(answers, 0) / (density(answers, 0) + density(answers, 1))
    bound = disclosure_risk(eps)
    assert posterior.max() <= bound + 1e-12
    assert posterior.max() == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: epsilon_for_risk(0.3), "above the prior 1/2"),
        (lambda: epsilon_for_risk(1.0), "below 1"),
        (lambda: disclosure_risk(-1), "non-negative"),
        (lambda: disclosure_risk(1, worlds=1), "worlds must be a whole number"),
        (lambda: disclosure_risk(1, spread=2.0), "spread"),
    ],
)
def test_bad_input_is_refused_clearly(call: object, message: str) -> None:
    with pytest.raises(InvalidParameter, match=message):
        call()  # type: ignore[operator]


def test_explain_states_the_disclosure(tmp_path: Path) -> None:
    with Database(tmp_path / "db") as db:
        db.backend.load_frame("people", generate(200, seed=1))
        db.set_metadata("people", METADATA)
    plan = privdb.connect(tmp_path / "db").explain(f"DP-SELECT {math.log(3)!r} COUNT(*) FROM people")
    assert plan["disclosure"]["posterior_bound"] == pytest.approx(0.75)
    shown = runner.invoke(app, ["explain", "--db", str(tmp_path / "db"), "DP-SELECT 1 COUNT(*) FROM people"])
    assert shown.exit_code == 0 and "73.1%" in shown.stdout


def test_the_command() -> None:
    found = runner.invoke(app, ["epsilon", "--risk", "0.75", "--format", "json"])
    assert found.exit_code == 0 and json.loads(found.stdout)["epsilon"] == pytest.approx(math.log(3))
    back = runner.invoke(app, ["epsilon", "--of", "1", "--worlds", "10"])
    assert back.exit_code == 0 and "23.20%" in back.stdout
    both = runner.invoke(app, ["epsilon", "--risk", "0.9", "--of", "1"])
    assert both.exit_code == 2 and "one of them" in both.stderr
