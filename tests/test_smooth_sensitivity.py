"""The smooth sensitivity of a quantile (Nissim, Raskhodnikova, Smith 2007; issue 31): a known answer by
hand, the histogram version against the one-k-at-a-time reference, and — by brute force over every small
database on a five-point grid — the two properties the (ε, δ) proof needs: S ≥ the local sensitivity and
S(x) ≤ e^β·S(x') for every neighbour x' (add, remove or substitute one value)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.mechanisms.smooth import (
    quantile_rank,
    smooth_beta,
    smooth_noise,
    smooth_sensitivity,
    smooth_sensitivity_counts,
)

GRID = range(5)  # values 0 … 4, bounds [0, 4]


def _quantile(x: tuple[int, ...], q: float) -> float:
    r = quantile_rank(len(x), q)
    return 0.0 if r < 1 else float(sorted(x)[r - 1])


def _neighbours(x: tuple[int, ...]) -> list[tuple[int, ...]]:
    out = [tuple(sorted((*x, v))) for v in GRID]  # add
    out += [x[:i] + x[i + 1 :] for i in range(len(x))]  # remove
    out += [tuple(sorted((*x[:i], v, *x[i + 1 :]))) for i in range(len(x)) for v in GRID]  # substitute
    return out


def test_known_answer() -> None:
    # x = 1 … 5 in [0, 10], median rank 3: windows x₄ − x₂ = 2, x₅ − x₁ = 4, x₆ − x₀ = U − L = 10, so
    # S = max(2, 4e^(−β), 10e^(−2β)); at β = 0.5: max(2, 2.426, 3.679) = 10/e
    assert smooth_sensitivity([1, 2, 3, 4, 5], 0, 10, 0.5, 0.5) == pytest.approx(10 / math.e)
    # at β = 2 the nearest window wins: max(2, 4e^-2, 10e^-4) = 2
    assert smooth_sensitivity([1, 2, 3, 4, 5], 0, 10, 0.5, 2.0) == pytest.approx(2.0)
    # the notes' attack pair: m + 1 zeros then L's (local sensitivity 0) against m zeros (local L/2…L)
    attack0 = [0] * 7 + [10] * 4  # n = 11, m = 6: x₇ − x₅ = 0, x₈ − x₄ = 10
    assert smooth_sensitivity(attack0, 0, 10, 0.5, 0.5) == pytest.approx(10 * math.exp(-0.5))
    # β = ε/(2 ln(2/δ)) (NRS07, Lemma 2.9): ε = 1, δ = 1e-6 → 1/(2·14.508658) = 0.0344622
    assert smooth_beta(1.0, 1e-6) == pytest.approx(0.0344622, abs=1e-7)


def test_counts_match_the_reference() -> None:
    rng = np.random.default_rng(31)
    for _ in range(500):
        cells, n = int(rng.integers(1, 9)), int(rng.integers(0, 15))
        q, beta = float(rng.choice([0.0, 0.1, 0.5, 0.75, 1.0])), float(rng.uniform(0.05, 2.0))
        values = rng.integers(0, cells, n)
        median, s = smooth_sensitivity_counts(np.bincount(values, minlength=cells), 0.0, 1.0, q, beta)
        assert s == pytest.approx(smooth_sensitivity(values, 0, cells - 1, q, beta), rel=1e-12, abs=1e-12)
        assert median == _quantile(tuple(int(v) for v in values), q)


@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
@pytest.mark.parametrize("beta", [0.1, 0.7])
def test_smooth_upper_bound_by_brute_force(q: float, beta: float) -> None:
    databases = [c for n in range(7) for c in itertools.combinations_with_replacement(GRID, n)]
    for x in databases:
        s = smooth_sensitivity(x, 0, 4, q, beta)
        local = max(abs(_quantile(x, q) - _quantile(y, q)) for y in _neighbours(x))
        assert s >= local - 1e-12, x
        for y in _neighbours(x):
            assert s <= math.exp(beta) * smooth_sensitivity(y, 0, 4, q, beta) + 1e-12, (x, y)


def test_noise_on_the_public_grid_within_bounds() -> None:
    draws = smooth_noise(3.0, 2.0, 1.0, lo=0.0, hi=10.0, resolution=0.5, rng=seeded(1), size=10_000)
    assert draws.min() >= 0 and draws.max() <= 10 and np.all((draws * 2) == np.rint(draws * 2))
    # scale 2·S/ε = 4: the mean absolute deviation of the unclamped noise is 4; clamping only shrinks it
    assert 2.5 < float(np.mean(np.abs(draws - 3.0))) < 4.2


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameter, match="δ in"):
        smooth_beta(1.0, 0.0)
    with pytest.raises(InvalidParameter, match="quantile"):
        quantile_rank(10, 1.5)
    with pytest.raises(InvalidParameter, match="counts"):
        smooth_sensitivity_counts([-1, 2], 0.0, 1.0, 0.5, 0.1)
