"""Issue 31's privacy models and population-uniqueness estimates: ARX's answers on Adult (figures from ARX run
on this machine with bench/anonymize/arx/Known.java, see its README), each model's definition on random
small tables, and the refusals."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from privdb.anonymize import load_hierarchies
from privdb.anonymize._classes import group
from privdb.anonymize.criteria import Models, derived_k, evaluate
from privdb.anonymize.uniqueness import population_uniqueness
from privdb.cli import app
from privdb.errors import InvalidParameter

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
NODE = [1, 0, 0, 1, 1, 1, 1]


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Adult's raw quasi-identifiers and occupation, and the same at NODE of ARX's hierarchies."""
    df = pd.read_csv(ADULT / "adult.csv", sep=";")[[*QI, "occupation"]]
    hs = load_hierarchies(ADULT / "hierarchies", QI, fix_labels=True)
    node = df.copy()
    for c, lv in zip(QI, NODE, strict=True):
        node[c] = hs[c].labels(df[c].to_numpy(), lv)
    return df, node


# ARX (RiskModelPopulationUniqueness; SNB has no estimate on Adult: ARX reports 0) — fractions of N
ARX_UNIQUENESS = {
    ("raw", 0.01): (0.052878799149893320, 0.075590548157791600, 0.052878799149893320, "pitman"),
    ("raw", 0.1): (0.11665764261322520, 0.12135801418389070, 0.11665764261322520, "pitman"),
    ("raw", 0.5): (0.20281561345952295, 0.19822837537688384, 0.19822837537688384, "zayatz"),
    ("node", 0.01): (0.0012742196366837560, 0.0014216546930045488, 0.0012742196366837560, "pitman"),
    ("node", 0.1): (0.0054140828208912090, 0.0049016294629096190, 0.0054140828208912090, "pitman"),
    ("node", 0.5): (0.014882441692598660, 0.013564729206600310, 0.013564729206600310, "zayatz"),
}


@pytest.mark.parametrize(("table", "pi"), list(ARX_UNIQUENESS))
def test_population_uniqueness_matches_arx(
    adult: tuple[pd.DataFrame, pd.DataFrame], table: str, pi: float
) -> None:
    frame = adult[0] if table == "raw" else adult[1]
    est = population_uniqueness(group(frame, QI).sizes, pi)
    pitman, zayatz, dankar, model = ARX_UNIQUENESS[(table, pi)]
    assert est.pitman == pytest.approx(pitman, rel=1e-7)  # both solve to 1e-6; they agree to ~1e-10
    assert est.zayatz == pytest.approx(zayatz, rel=1e-7)
    assert est.snb is None  # ARX: no SNB estimate either
    assert est.dankar == pytest.approx(dankar, rel=1e-7) and est.dankar_model == model


def _value(results: list, name: str) -> float:
    return next(r.value for r in results if r.model == name)


def _holds(frame: pd.DataFrame, models: Models, **kw: object) -> bool:
    (res,) = evaluate(frame, QI, models, **kw)  # type: ignore[arg-type]
    return res.holds


def test_verdicts_match_arx_at_the_boundary(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    """ARX's verdict at 1 ∓ 1e-6 times privdb's worst value: false just below, true just above."""
    node = adult[1]
    res = evaluate(
        node,
        QI,
        Models(beta=1, delta_disclosure=1, average_risk=1, sample_uniqueness=1),
        sensitive="occupation",
    )
    worst_gain = _value(res, "basic β-likeness")
    worst_log = _value(res, "δ-disclosure privacy")
    assert worst_gain == pytest.approx(3350.3333333333335)  # ARX: false at 3350.329983, true at 3350.336684
    assert worst_log / math.log(2) == pytest.approx(
        11.7105195, rel=1e-6
    )  # ARX (log₂): 11.7105078 / 11.7105312
    assert _value(res, "average re-identification risk") == pytest.approx(0.0552350640, rel=1e-6)
    assert _value(res, "sample uniqueness") == pytest.approx(0.0219813010, rel=1e-6)
    for f, arx in ((1 - 1e-6, False), (1 + 1e-6, True)):
        assert _holds(node, Models(beta=worst_gain * f), sensitive="occupation") is arx
        assert _holds(node, Models(delta_disclosure=worst_log * f), sensitive="occupation") is arx
        assert _holds(node, Models(average_risk=0.05523506398779922 * f)) is arx
        assert _holds(node, Models(sample_uniqueness=0.021981300974736422 * f)) is arx
        for est, value in (
            ("pitman", 0.005414082821916799),
            ("zayatz", 0.004901629462576376),
            ("dankar", 0.005414082821916799),
        ):
            m = Models(population_uniqueness=value * f, estimator=est)
            assert _holds(node, m, sampling_fraction=0.1) is arx
    for beta in (0.5, 2, 5, 100, 1e4):  # ARX: enhanced β-likeness fails at every β here (−ln p caps it)
        assert not _holds(node, Models(enhanced_beta=beta), sensitive="occupation")


@pytest.mark.parametrize(
    ("k", "pi", "alpha", "estimator", "arx_k"),
    [
        (3, 0.1, 0.01, "poisson", 3),
        (10, 0.1, 0.01, "poisson", 6),
        (10, 0.01, 0.05, "poisson", 3),
        (50, 0.1, 0.01, "zero-truncated-poisson", 12),
        (20, 0.05, 0.1, "zero-truncated-poisson", 4),
        (100, 0.2, 0.01, "poisson", 33),
    ],
)
def test_k_map_estimate_matches_arx(k: int, pi: float, alpha: float, estimator: str, arx_k: int) -> None:
    assert derived_k(k, pi, alpha, estimator, 30162) == arx_k


def test_population_table_models_match_arx(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    """ARX with the generalised Adult as population and rows 0, 10, 20, … as the research sample."""
    node = adult[1]
    sample = node.iloc[::10]
    for k, arx in ((1, True), (2, False)):
        assert _holds(sample, Models(k_map=k), population=node) is arx
    # ARX: (0, 0.999999) false, (0, 1) true, (0.0192307500, 1) false, (0.0192307885, 1) false
    for lo, hi, arx in (
        (0.0, 0.999999, False),
        (0.0, 1.0, True),
        (0.01923075, 1.0, False),
        (0.019230788461538462, 1.0, False),
    ):
        assert _holds(sample, Models(delta_presence=(lo, hi)), population=node) is arx


cells = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y", "z", "w"]), min_size=n, max_size=n),
    )
)


@settings(max_examples=80, deadline=None)
@given(cells, st.floats(0.05, 5))
def test_sensitive_models_follow_their_definitions(data: tuple[list[str], list[str]], b: float) -> None:
    df = pd.DataFrame({"q": data[0], "s": data[1]})
    n = len(df)
    p = {s: c / n for s, c in Counter(df["s"]).items()}
    gains, logs, enhanced_ok = [], [], True
    for _, part in df.groupby("q"):
        for s, c in Counter(part["s"]).items():
            q = c / len(part)
            gains.append((q - p[s]) / p[s])
            logs.append(abs(math.log(q / p[s])))
            enhanced_ok &= (q - p[s]) / p[s] <= min(b, -math.log(p[s]))
    res = {
        r.model: r
        for r in evaluate(df, ["q"], Models(beta=b, enhanced_beta=b, delta_disclosure=b), sensitive="s")
    }
    assert res["basic β-likeness"].holds is (max(gains) <= b)
    assert res["basic β-likeness"].value == pytest.approx(max(gains))
    assert res["enhanced β-likeness"].holds is bool(enhanced_ok)
    assert res["δ-disclosure privacy"].holds is (max(logs) < b)
    assert res["δ-disclosure privacy"].value == pytest.approx(max(logs))


@settings(max_examples=80, deadline=None)
@given(cells, st.integers(1, 6), st.floats(0.01, 1))
def test_population_models_follow_their_definitions(
    data: tuple[list[str], list[str]], k: int, t: float
) -> None:
    population = pd.DataFrame({"q": data[0], "r": data[1]})
    sample = population.iloc[::2]
    pop_count, samp_count = (
        Counter(zip(*data, strict=True)),
        Counter(zip(sample["q"], sample["r"], strict=True)),
    )
    deltas = [samp_count[key] / pop_count[key] for key in samp_count]
    uncovered = any(key not in samp_count for key in pop_count)
    res = {
        r.model: r
        for r in evaluate(
            sample,
            ["q", "r"],
            Models(k_map=k, delta_presence=(t / 2, t), average_risk=t, sample_uniqueness=t),
            population=population,
        )
    }
    assert res["k-map"].holds is (min(pop_count[key] for key in samp_count) >= k)
    lo = 0.0 if uncovered else min(deltas)
    assert res["δ-presence"].holds is (t / 2 <= lo and max(deltas) <= t)
    assert res["average re-identification risk"].value == pytest.approx(len(samp_count) / len(sample))
    uniques = sum(1 for c in samp_count.values() if c == 1) / len(sample)
    assert res["sample uniqueness"].holds is (uniques <= t)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=3, max_size=60), st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.6]))
def test_estimates_are_fractions_and_dankar_follows_its_rule(sizes: list[int], pi: float) -> None:
    est = population_uniqueness(np.array(sizes), pi)
    for v in (est.pitman, est.zayatz, est.snb, est.dankar):
        assert v is None or 0 <= v <= 1
    if 1 not in sizes:
        assert est.pitman == est.zayatz == est.snb == est.dankar == 0
    elif pi <= 0.1:
        assert est.dankar == (est.pitman if est.pitman is not None else est.zayatz)
    elif est.snb is not None:
        assert est.dankar == min(est.snb, est.zayatz if est.zayatz is not None else math.inf)


def test_refusals(adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    node = adult[1].head(200)
    with pytest.raises(InvalidParameter, match="population table"):
        evaluate(node, QI, Models(delta_presence=(0.0, 0.5)))
    with pytest.raises(InvalidParameter, match="k-map needs"):
        evaluate(node, QI, Models(k_map=5))
    with pytest.raises(InvalidParameter, match="sampling fraction"):
        evaluate(node, QI, Models(population_uniqueness=0.1))
    with pytest.raises(InvalidParameter, match="sensitive"):
        evaluate(node, QI, Models(beta=1.0))
    with pytest.raises(InvalidParameter, match="sampling fraction"):
        evaluate(node, QI, Models(average_risk=0.1), sampling_fraction=1.5)
    for bad in (
        {"beta": 0},
        {"beta": -1.0},
        {"delta_disclosure": float("nan")},
        {"k_map": 0},
        {"delta_presence": (0.6, 0.5)},
        {"average_risk": 1.5},
        {"estimator": "magic"},
        {"k_map_estimator": "normal"},
        {"significance": 2.0},
    ):
        with pytest.raises(InvalidParameter):
            Models(**bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="sampling fraction"):
        population_uniqueness(np.array([1, 2]), 0.0)


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.output


def test_cli_check_and_risk(tmp_path: Path, adult: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    path = tmp_path / "node.csv"
    adult[1].to_csv(path, index=False)
    qi = ",".join(QI)
    code, out = _cli(
        "check",
        str(path),
        "--qi",
        qi,
        "--sensitive",
        "occupation",
        "--beta",
        "5000",
        "--delta-disclosure",
        "8",
        "--population-uniqueness",
        "0.005",
        "--sampling-fraction",
        "0.1",
        "--format",
        "json",
    )
    assert code == 0, out
    models = {m["model"]: m for m in json.loads(out)["models"]}
    assert models["basic β-likeness"]["holds"] and not models["δ-disclosure privacy"]["holds"]
    assert not models["population uniqueness"]["holds"]  # ARX's Dankar/Pitman: 0.005414 > 0.005
    assert models["population uniqueness"]["value"] == pytest.approx(0.0054140828208912090, rel=1e-7)
    code, out = _cli("risk", str(path), "--qi", qi, "--sampling-fraction", "0.01", "--format", "json")
    assert code == 0, out
    assert json.loads(out)["population_uniqueness"]["dankar"] == pytest.approx(
        0.0012742196366837560, rel=1e-7
    )
    for args, needle in (
        (["--k-map", "3"], "k-map needs a population table"),
        (["--delta-presence", "0.5", "--population", str(path)], "δmin,δmax"),
        (["--population-uniqueness", "0.1"], "sampling fraction"),
        (["--beta", "-1", "--sensitive", "occupation"], "β must be"),
    ):
        code, out = _cli("check", str(path), "--qi", qi, *args)
        assert code != 0 and needle in out and "Traceback" not in out
