"""Local versus central: the notes' average salary; the √n gap, measured and in theory; the plot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.local import compare_local_central, plot_local_central


def test_local_error_is_sqrt_n_times_central() -> None:
    ns = [10, 100, 1000, 10_000]
    result = compare_local_central(ns, epsilon=1.0, upper=100_000.0, repetitions=300, rng=seeded(31))
    for n, lo, ce, lt, ct in zip(
        ns, result.local_rmse, result.central_rmse, result.local_theory, result.central_theory, strict=True
    ):
        assert lt / ct == pytest.approx(math.sqrt(n), rel=1e-5)  # theory: exactly √n apart
        assert lt == pytest.approx(math.sqrt(2) * 100_000 / math.sqrt(n), rel=1e-5)
        # measured RMSE² of 300 draws: relative sd of the RMSE ≈ √(κ+2)/(2√300) ≤ 0.1 (Laplace κ = 3);
        # ±50% is over 5 sd (local) and the mean of n Laplace draws is closer to normal still
        assert 0.5 < lo / lt < 1.5 and 0.5 < ce / ct < 1.5
    assert result.ratios[-1] > 30 * result.ratios[0] / math.sqrt(10)


def test_plot_is_written(tmp_path: Path) -> None:
    result = compare_local_central([10, 100, 1000], repetitions=20, rng=seeded(32))
    out = plot_local_central(result, tmp_path / "local.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameter, match="epsilon"):
        compare_local_central([10], epsilon=0)
    with pytest.raises(InvalidParameter, match="upper"):
        compare_local_central([10], upper=-1)
    with pytest.raises(InvalidParameter, match="ns"):
        compare_local_central([0])
