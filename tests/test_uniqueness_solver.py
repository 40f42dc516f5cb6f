"""The population-uniqueness solver: ARX's control flow (starts in order, 1,001 evaluations per start,
10,000 in all, the constraint after each step, the last start evaluated once); ψ₁ below zero by reflection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import digamma, polygamma

from privdb.anonymize.newton import newton as _newton
from privdb.anonymize.newton import trigamma as _trigamma
from privdb.anonymize.pitman import (
    _closed,
    _closed_one,
    arx_digamma,
    arx_trigamma,
    pitman,
    starts_of,
    term_sums,
)
from privdb.anonymize.uniqueness import estimate, population_uniqueness
from privdb.errors import InvalidParameter

Arr = np.ndarray


def _cubic(x: Arr, y: Arr) -> tuple[tuple[Arr, Arr], tuple[Arr, Arr, Arr, Arr]]:
    """x³ − 2x + 2 = 0 (Newton cycles 0 → 1 → 0 from x = 0; converges from −2) and y = 0."""
    return (x**3 - 2 * x + 2, y), (3 * x**2 - 2, np.zeros_like(x), np.zeros_like(x), np.ones_like(x))


ROOT = -1.7692923542386314


def test_trigamma_below_zero_by_reflection() -> None:
    x = np.array([-0.5, -3.7, -50.25, -1e4 - 0.3, 0.3, 7.0, 1e6])
    assert np.allclose(_trigamma(x), polygamma(1, x), rtol=1e-9, atol=0)


def test_first_start_in_order_wins() -> None:
    assert _newton(_cubic, [(-2.0, 0.0), (-3.0, 0.0), (0.0, 0.0)])[0] == pytest.approx(ROOT, abs=1e-6)
    # a start that cycles (1,001 evaluations, no root) gives way to the next one
    assert _newton(_cubic, [(0.0, 0.0), (-2.0, 0.0), (0.0, 0.0)])[0] == pytest.approx(ROOT, abs=1e-6)


def test_ten_thousand_evaluations_in_all() -> None:
    # nine cycling starts use 9,009 evaluations: the tenth start is still tried
    assert math.isfinite(_newton(_cubic, [(0.0, 0.0)] * 9 + [(-2.0, 0.0), (0.0, 0.0)])[0])
    # ten use 10,010 > 10,000: the solver stops before the eleventh, which would have converged
    assert math.isnan(_newton(_cubic, [(0.0, 0.0)] * 10 + [(-2.0, 0.0), (0.0, 0.0)])[0])


def test_last_start_evaluated_once() -> None:
    assert math.isnan(_newton(_cubic, [(0.0, 0.0), (-2.0, 0.0)])[0])  # −2 would converge in a few steps
    assert _newton(_cubic, [(0.0, 0.0), (ROOT, 0.0)])[0] == pytest.approx(ROOT)  # a root where it starts


def test_constraint_ends_a_start() -> None:
    # from −2 every step stays below 0: with x ≥ 0 required, that start ends after its first step
    assert math.isnan(_newton(_cubic, [(-2.0, 0.0), (0.0, 0.0)], lambda x, y: x >= 0)[0])
    # the constraint is checked after steps, not at a root where a start begins (ARX's order)
    assert _newton(_cubic, [(ROOT, 0.0), (0.0, 0.0)], lambda x, y: x >= 0)[0] == pytest.approx(ROOT)


def test_a_histogram_whose_iterates_diverge_is_estimated_quickly() -> None:
    # the class sizes whose Pitman iterates reach −10⁹ (21 s per estimate with SciPy's ψ₁ there)
    rng = np.random.default_rng(1)
    sizes = rng.integers(1, 6, size=51)
    u = population_uniqueness(sizes, 0.1)
    for value in (u.pitman, u.zayatz, u.snb, u.dankar):
        assert value is None or 0 < value <= 1


def test_zero_denominator_in_the_initial_guess() -> None:
    # two uniques and two classes of 4: the moment-style guess for θ divides by 0 (ARX's Java gives ±inf/NaN
    # there and that start fails); the estimate is then from the grid of starts or none, never an exception
    u = population_uniqueness(np.array([1, 1, 4, 4]), 0.05)
    assert u.pitman is None or 0 < u.pitman <= 1


# ARX (commit aacd487fb, run here with bench/anonymize/arx/Known.java `estimate π` on Adult's raw columns):
# Pitman, Zayatz, SNB, Dankar as fractions of N, and Dankar's choice. ARX prints 0 for "no estimate".
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv"
ARX_ESTIMATES = {
    ("age,marital-status", 0.9): (0.0013243137687884913, 0.0009914253480827234, 0.0008526623883125012, "snb"),
    ("age,education", 0.9): (0.004272530697033039, 0.0030356028083306738, 0.002697147866902079, "snb"),
    ("age,native-country", 0.9): (0.020906890054217548, 0.01680812106729707, 0.01609911233039893, "snb"),
    ("age,sex,race", 0.9): (0.0027384909629566243, 0.0016992441897868845, 0.0014197393421502152, "snb"),
    ("age,sex,occupation", 0.9): (0.0051701635467925324, 0.005815137050433487, 0.0052327707830897695, "snb"),
    ("age,education,native-country", 0.7): (
        0.04898331991920931,
        0.05238056009096687,
        0.045011441302311786,
        "snb",
    ),
    ("age,race,marital-status", 0.2): (0.0029484906521433383, 0.002229030087841188, 0.0, "zayatz"),
    ("sex,native-country,occupation", 0.2): (0.003505718152537467, 0.0014589644771558063, 0.0, "zayatz"),
}


@pytest.mark.parametrize(("columns", "pi"), list(ARX_ESTIMATES))
def test_estimates_match_arx(columns: str, pi: float) -> None:
    """Pitman to 1e-6 (both solvers stop within 1e-6 of a root), Zayatz and SNB to 1e-8. N = n/π rounded to a
    whole number as ARX does (at π = 0.9 the unrounded N moved SNB by 5e-5). Where ARX has no SNB estimate
    its Newton steps use a wrong Jacobian of SNB's second equation (docs/anonymize.md); privdb's is a root."""
    frame = pd.read_csv(ADULT, sep=";")
    est = population_uniqueness(frame.groupby(columns.split(",")).size().to_numpy(), pi)
    pitman, zayatz, snb, model = ARX_ESTIMATES[(columns, pi)]
    assert est.pitman == pytest.approx(pitman, rel=1e-6)
    assert est.zayatz == pytest.approx(zayatz, rel=1e-8)
    if snb:
        assert est.snb == pytest.approx(snb, rel=1e-8)
        assert est.dankar_model == model == "snb" and est.dankar == est.snb
    else:
        assert est.snb is not None and est.snb > 0  # ARX: none


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=3, max_size=60), st.sampled_from([0.05, 0.3, 0.6, 0.9, 1.0]))
def test_every_estimate_is_a_share_or_none(sizes: list[int], pi: float) -> None:
    """SNB's k·β^α can fall outside the population (a root off the model's domain: −37 N was found): none."""
    est = population_uniqueness(np.array(sizes), pi)
    for value in (est.pitman, est.zayatz, est.snb, est.dankar):
        assert value is None or 0 < value <= 1 or (value == 0 and est.sample_uniques == 0)


def test_an_snb_root_off_the_population_is_no_estimate() -> None:
    assert population_uniqueness(np.array([1, 3, 4]), 0.01).snb is None  # k·β^α = −37 N there


def test_population_beyond_arx_range_is_refused() -> None:
    # N = n/π = 4·10⁹ > 2³¹ − 1: Zayatz used to be computed for N = 2³¹ − 1 silently
    sizes = np.array([1, 1, 2])
    with pytest.raises(InvalidParameter, match="more than 2,147,483,647"):
        population_uniqueness(sizes, 1e-9)
    with pytest.raises(InvalidParameter, match="raise the sampling fraction"):
        estimate(sizes, 1e-9, "zayatz")
    assert population_uniqueness(sizes, 4 / (2**31 - 1)).zayatz is not None  # N at the limit still works


def test_arx_psi_and_its_trigamma_gap() -> None:
    """ARX's ψ is exact; its ψ₁ lacks the asymptotic tail between 10⁻⁴ and 12 (0 from 8 to 12)."""
    x = np.array([1e-7, 0.3, 5.5, 13.0, 1e5, -0.5, -3.7])
    assert np.allclose(arx_digamma(x), digamma(x), rtol=1e-12, atol=1e-12)
    assert np.all(arx_trigamma(np.array([8.0, 9.5, 11.99])) == 0)
    assert arx_trigamma(np.array([7.5]))[0] == pytest.approx(1 / 7.5**2)
    assert np.allclose(arx_trigamma(np.array([12.0, 40.0, 1e6])), polygamma(1, [12.0, 40.0, 1e6]), rtol=1e-12)


def _arx_psi(x: float) -> float:
    """ARX's ψ as Java runs it, one argument at a time (the loop: while z < 12, sum −= 1/z, z += 1)."""
    if not math.isfinite(x):
        return math.nan
    if x == 0:
        return -math.inf
    z = np.float64(1.0 - x if x < 0 else x)
    if z <= 1e-6:
        out = (-0.57721566490153286060651209008240243104215933593992 - 1.0 / z) + math.pi**2 / 6 * z
    else:
        shift = np.float64(0.0)
        while z < 12.0:
            shift, z = shift - 1.0 / z, z + 1.0
        r = 1.0 / z
        out, r = shift + (np.log(z) - 0.5 * r), r * r
        out = out - r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))
    return float(out + math.pi / np.tan(-math.pi * x) if x < 0 else out)


_ARGUMENTS = st.one_of(
    st.floats(-40, 40),
    st.floats(0, 13),
    st.floats(1e-9, 1e-5),
    st.floats(allow_nan=True),
    st.sampled_from([0.0, -0.0, 1e-6, 12.0, -12.0, 11.999999999999998, math.inf, -math.inf]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ARGUMENTS, max_size=40))
def test_arx_psi_has_the_bits_of_its_loop(xs: list[float]) -> None:
    """arx_digamma shifts all its arguments at once by cumulative sums: the bits of ARX's loop, argument by
    argument (with reflection below 0, the Taylor term up to 10⁻⁶, NaN for ±inf and NaN, −inf at 0)."""
    got = arx_digamma(np.array(xs, dtype=np.float64)).tolist()
    with np.errstate(all="ignore"):
        want = [_arx_psi(x) for x in xs]
    assert all(g == w or (math.isnan(g) and math.isnan(w)) for g, w in zip(got, want, strict=True)), (xs, got)


def test_arx_psi_has_the_bits_of_its_loop_on_random_arguments() -> None:
    """The same on 24,000 arguments of every magnitude the solver meets (drawn, not the examples hypothesis
    favours: there z + 2 and (z + 1) + 1 round alike)."""
    rng = np.random.default_rng(7)
    xs = np.concatenate(
        [rng.uniform(-30, 30, 2000), rng.uniform(0, 12, 2000), 10.0 ** rng.uniform(-6, 1, 20000)]
    )
    with np.errstate(all="ignore"):
        want = [_arx_psi(x) for x in xs.tolist()]
    assert arx_digamma(xs).tolist() == want


@pytest.mark.parametrize("m", [1, 7, 3000, 250_000])
@pytest.mark.parametrize(
    ("t", "a"),
    [
        (100.0, 0.3),
        (5.0, -0.021),
        (2e9, -1e-7),
        (1e3, 0.0),
        (3e9, -1.75e6),
        (0.5, 2.0),
        (1e12, 1e3),
        (40.0, 1e-9),
    ],
)
def test_term_sums_equal_the_sums_term_by_term(m: int, t: float, a: float) -> None:
    """The ψ-difference and power-series forms of Σ 1/(t+ia) … Σ i²/(t+ia)² equal the sums of m terms."""
    i = np.arange(1, m + 1, dtype=np.float64)
    terms = [
        1 / (t + i * a),
        i / (t + i * a),
        1 / (t + i * a) ** 2,
        i / (t + i * a) ** 2,
        (i / (t + i * a)) ** 2,
    ]
    got = term_sums(np.array([t]), np.array([a]), m)
    for value, direct in zip(got, terms, strict=True):
        exact = math.fsum(direct)
        assert value[0] == pytest.approx(exact, rel=1e-9, abs=1e-300)


# ARX (commit aacd487fb) on class-size histograms (size: count) with population N, Pitman's estimate as a
# fraction of N: its closed-form equations (with its ψ₁) find no root there (the first) or a far root that
# fails the term-by-term equations (the second), and its retry with the term-by-term form finds the estimate.
# With the exact ψ₁ the closed form finds that root itself (the retry is then not needed); the estimate agrees
ARX_RETRIES = [
    (4520, {1: 26, 2: 29, 3: 19, 5: 17}, 1.4628401982756078e-07, "no root"),
    (2360, {1: 16, 6: 17}, 0.0010394626799777463, "check fails"),
]


@pytest.mark.parametrize(("population", "histogram", "arx", "why"), ARX_RETRIES)
def test_pitman_retries_with_the_term_by_term_form_as_arx(
    population: int, histogram: dict[int, int], arx: float, why: str
) -> None:
    """ARX's ψ₁ substituted takes ARX's path (the retry) to ARX's estimate; the exact ψ₁ reaches it too."""
    s, c = np.array(list(histogram)), np.array(list(histogram.values()))
    n = float((s * c).sum())
    big, counts = s[s != 1].astype(np.float64), c[s != 1].astype(np.float64)
    closed = _newton(
        lambda t, a: _closed(t, a, float(c.sum()), n, big, counts, arx_trigamma),
        starts_of(s, c, n),
        lambda t, a: t >= 0,
    )
    if why == "no root":
        assert math.isnan(closed[0])
    else:
        assert closed[0] > 1e8  # a far root, which the term-by-term check refuses
    assert pitman(s, c, n, population, trigamma=arx_trigamma) / population == pytest.approx(arx, rel=1e-9)
    value = estimate(np.repeat(s, c), n / population, "pitman")
    assert value is not None
    assert value == pytest.approx(arx, rel=1e-9)


# The suppression step where ψ₁ decides: Adult, population uniqueness ≤ 0.005, Pitman, π 0.05, limit 2 %, node
# (1, 0, 0, 0, 0), the first probe of ARX's binary search over suppression (the 658 smallest classes out):
# class size:count, n = 29,504, N = 603,240. With the exact ψ₁ the node passes there, with ARX's it fails.
# ARX (commit aacd487fb, bench/anonymize/arx/Pitman.java) prints 0 (no estimate): its closed form, with its
# ψ₁, runs to a far root that passes the term-by-term check but whose Γ(θ+1)/Γ(θ+α)·N^α lies outside 0..N;
# alone, its term-by-term form finds the data's root, the one the exact ψ₁ finds in the closed form.
PSI1_STEP = (
    "1:454 2:400 3:222 4:143 5:102 6:56 7:54 8:48 9:37 10:36 11:25 12:23 13:19 14:15 15:14 16:15 "
    "17:16 18:9 19:12 20:10 21:13 22:12 23:7 24:12 25:7 26:7 27:12 28:3 29:3 30:9 31:3 32:7 33:7 "
    "34:1 35:6 36:4 37:4 38:3 39:3 40:2 41:6 42:1 43:5 44:5 45:2 46:2 48:1 49:4 50:1 51:1 52:5 "
    "53:3 54:4 55:4 57:1 58:2 59:2 60:2 61:3 63:1 64:3 65:2 66:3 69:1 70:1 71:1 73:1 74:1 76:1 "
    "78:1 80:1 81:1 82:1 83:1 84:1 85:1 86:1 89:1 93:1 98:1 100:2 104:1 107:1 108:1 112:1 114:2 "
    "115:1 116:1 117:2 118:1 119:1 122:1 123:1 132:1 133:1 137:1 141:1 143:1 157:1 158:1 161:1 "
    "162:1 167:1 170:1 192:2 200:1 201:1 202:1 214:1 234:1 236:1 239:1 254:1 257:1 261:1 266:1 "
    "284:1 285:1 290:1 292:1 327:1 332:1 337:1 343:1 355:1 372:1 381:1 383:1 396:1 428:1 436:1 "
    "455:1 464:1 479:1 589:1 591:1"
)
PSI1_POPULATION = 603_240
ARX_FAR_ROOT = (3.309790511751266e9, -1752994.4643912138)  # ARX's closed form: (θ, α), estimate none
ARX_TERMS_ROOT = (247.9444658336331, 0.1971878989257907)  # ARX's term-by-term form alone
EXACT_ESTIMATE = 0.001912969177706392  # privdb's, a fraction of N: Γ(θ+1)/Γ(θ+α)·N^α / N at that root


def test_exact_trigamma_finds_the_data_root_where_arx_trigamma_runs_off() -> None:
    """ψ₁ enters only the Jacobian: the exact one leads Newton to the data's root (ARX's term-by-term root, an
    estimate); ARX's ψ₁, substituted, leads to ARX's far root and no estimate, as ARX answers."""
    pairs = [tuple(map(int, w.split(":"))) for w in PSI1_STEP.split()]
    s = np.array([p[0] for p in pairs])
    c = np.array([p[1] for p in pairs])
    n = float((s * c).sum())
    assert n == 29_504
    big, counts = s[s != 1].astype(np.float64), c[s != 1].astype(np.float64)
    roots = {}
    for name, psi1 in (("exact", _trigamma), ("arx", arx_trigamma)):
        roots[name] = _newton(
            lambda t, a, psi1=psi1: _closed(t, a, float(c.sum()), n, big, counts, psi1),
            starts_of(s, c, n),
            lambda t, a: t >= 0,
        )
    assert roots["exact"] == pytest.approx(ARX_TERMS_ROOT, rel=1e-9)
    assert roots["arx"] == pytest.approx(ARX_FAR_ROOT, rel=1e-5)  # a far root: the path there is chaotic
    sizes = np.repeat(s, c)
    assert estimate(sizes, n / PSI1_POPULATION, "pitman") == pytest.approx(EXACT_ESTIMATE, rel=1e-9)
    assert math.isnan(pitman(s, c, n, PSI1_POPULATION, trigamma=arx_trigamma))  # ARX's answer: none


def _bits(values: object) -> list[int]:
    return np.asarray(values, dtype=np.float64).ravel().view(np.int64).tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e12, 1e12, allow_nan=False) | st.sampled_from([0.0, -0.0, 1e-7, 3.5e9]),
    st.floats(-1e6, 1e6, allow_nan=False)
    | st.sampled_from([0.0, 1e-160, -1e-76, 2e-75, 1e76, 0.999999, 1.0]),
    st.lists(st.integers(2, 600), min_size=0, max_size=300, unique=True),  # past NumPy's 128-term sum blocks
)
def test_the_float_form_of_the_closed_equations_has_the_array_forms_bits(
    t: float, a: float, big_sizes: list[int]
) -> None:
    """The solver's one-try steps run on ``_closed_one``: the same IEEE operations as ``_closed``, so the
    same bits (a chaotic Newton path would amplify one ulp), off the usual domain too (α ≈ 0, huge, < 0)."""
    big = np.array(sorted(big_sizes), dtype=np.float64)
    counts = np.arange(1, len(big) + 1, dtype=np.float64)
    u, n = float(counts.sum() + 7), float((big * counts).sum() + 7)
    for psi1 in (_trigamma, arx_trigamma):
        with np.errstate(all="ignore"):  # as the solver evaluates it
            (f1, f2), jac = _closed(np.array([t]), np.array([a]), u, n, big, counts, psi1)
        assert _bits(_closed_one(t, a, u, n, big, counts, psi1)) == _bits([f1, f2, *jac])


def test_one_try_on_floats_takes_the_array_path_bit_for_bit() -> None:
    """``newton(..., scalar=...)`` runs a try alone on floats: the roots are the array search's to the bit,
    on ARX's chaotic far-root path (ARX's ψ₁), the data's root, and histograms whose tries jitter for 1,001
    evaluations around a point where the equations stay above 1e-6."""
    pairs = [tuple(map(int, w.split(":"))) for w in PSI1_STEP.split()]
    histograms = [(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))]
    rng = np.random.default_rng(7)
    for _ in range(25):
        s = np.unique(rng.zipf(1.6, size=rng.integers(20, 400)))
        s = s[s < 5000]
        histograms.append((s, rng.integers(1, 2000, size=len(s))))
    for s, c in histograms:
        n = float((s * c).sum())
        big, counts = s[s != 1].astype(np.float64), c[s != 1].astype(np.float64)
        for psi1 in (_trigamma, arx_trigamma):
            args = (float(c.sum()), n, big, counts, psi1)

            def arrays(t: Arr, a: Arr, args: tuple = args) -> tuple:  # type: ignore[type-arg]
                return _closed(t, a, *args)

            def floats(t: float, a: float, args: tuple = args) -> tuple:  # type: ignore[type-arg]
                return _closed_one(t, a, *args)

            on_arrays = _newton(arrays, starts_of(s, c, n), lambda t, a: t >= 0)
            on_floats = _newton(
                arrays,
                starts_of(s, c, n),
                lambda t, a: t >= 0,
                scalar=floats,
                scalar_constraint=lambda t, a: t >= 0,
            )
            assert _bits(on_floats) == _bits(on_arrays)


def test_an_estimate_is_remembered_per_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second search on the same table asks the same histograms: each solver runs once per histogram and N,
    and another solver (a test's substitute, say) is never answered from the first one's results."""
    import privdb.anonymize.uniqueness as uniqueness

    calls: list[str] = []

    def counted(name: str) -> Any:
        def solve(*args: Any) -> float:
            calls.append(name)
            return float(uniqueness.pitman(*args))

        return solve

    sizes = np.repeat([1, 2, 3, 4, 5, 8, 13], [40, 25, 12, 8, 5, 3, 2])
    monkeypatch.setitem(uniqueness._ESTIMATE, "pitman", counted("a"))
    first = estimate(sizes, 0.05, "pitman")
    assert estimate(sizes, 0.05, "pitman") == first and estimate(sizes, 0.05, "dankar") == first
    assert estimate(sizes[1:], 0.05, "pitman") != first  # another histogram: solved
    assert estimate(sizes, 0.06, "pitman") != first  # another N: solved
    assert calls == ["a"] * 3
    monkeypatch.setitem(uniqueness._ESTIMATE, "pitman", counted("b"))
    assert estimate(sizes, 0.05, "pitman") == first and calls[-1] == "b"
