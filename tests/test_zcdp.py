"""zCDP conversions."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privdb.accounting.zcdp import epsilon_from_rho, rho_from_epsilon


@given(rho=st.floats(1e-4, 10.0), delta=st.floats(1e-12, 1e-2))
def test_conversion_is_never_worse_than_bun_steinke(rho: float, delta: float) -> None:
    eps = epsilon_from_rho(rho, delta)
    # ε = 0 happens (tiny ρ, large δ: (0, δ)-DP), never below
    assert 0 <= eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12


def test_tiny_rho_with_large_delta_is_zero_epsilon_not_negative() -> None:
    assert epsilon_from_rho(1e-4, 1e-2) == 0.0
    assert epsilon_from_rho(1e-4, 1e-6) > 0


def test_round_trip_and_monotone() -> None:
    for eps, delta in ((1.0, 1e-6), (0.1, 1e-9), (5.0, 1e-5)):
        rho = rho_from_epsilon(eps, delta)
        assert epsilon_from_rho(rho, delta) <= eps
        assert epsilon_from_rho(rho * 1.001, delta) > eps
    assert epsilon_from_rho(0.5, 1e-6) < epsilon_from_rho(0.6, 1e-6)
    assert epsilon_from_rho(0.0, 1e-6) == 0.0


def test_known_value() -> None:
    # ρ = 0.5, δ = 1e-5: Bun–Steinke gives 0.5 + 2·sqrt(0.5·ln 1e5) ≈ 5.298; CKS20's conversion is tighter
    assert epsilon_from_rho(0.5, 1e-5) == pytest.approx(4.73, abs=0.02)
