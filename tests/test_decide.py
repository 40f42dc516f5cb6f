"""privdb.decide (in privdb.decisions): the exponential mechanism for decisions (McSherry & Talwar)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.decisions import Decision, decide
from privdb.errors import InvalidParameter

DOCS = Path(__file__).resolve().parents[1] / "docs" / "decisions.md"
PATIENTS = Path(__file__).resolve().parents[1] / "data" / "examples" / "patients.csv"

CANDIDATES = ["a", "b", "c", "d", "e"]
UTILITY = np.array([0.0, 1.0, 1.5, 3.0, -2.0])


def exact(u: NDArray[np.float64], epsilon: float, sensitivity: float, factor: float) -> NDArray[np.float64]:
    """exp(ε·u/(factor·Δ)) / Σ, computed independently of the mechanism."""
    w = np.exp(epsilon * (u - u.max()) / (factor * sensitivity))
    return np.asarray(w / w.sum(), dtype=np.float64)


def counts(n: int, *, monotone: bool, seed: int) -> NDArray[np.int64]:
    rng = seeded(seed)
    picks = [decide(CANDIDATES, UTILITY, 1.5, 2.0, monotone=monotone, rng=rng).index for _ in range(n)]
    return np.bincount(picks, minlength=len(CANDIDATES))


@pytest.mark.parametrize(("monotone", "right", "wrong"), [(False, 2.0, 1.0), (True, 1.0, 2.0)])
def test_choice_distribution_is_exactly_the_declared_form(monotone: bool, right: float, wrong: float) -> None:
    """χ² against exp(εu/(2Δ)) (default) or exp(εu/Δ) (monotone=True); the other form is rejected."""
    n = 20_000
    seen = counts(n, monotone=monotone, seed=11 if monotone else 10)
    assert stats.chisquare(seen, exact(UTILITY, 2.0, 1.5, right) * n).pvalue > ALPHA
    # power: at this n the other form is far outside the acceptance region
    assert stats.chisquare(seen, exact(UTILITY, 2.0, 1.5, wrong) * n).pvalue < ALPHA


def test_decision_reports_form_cost_and_accuracy() -> None:
    d = decide(["x", "y", "z"], [1.0, 5.0, 2.0], sensitivity=2.0, epsilon=0.5, rng=seeded(1))
    assert isinstance(d, Decision)
    assert d.choice == ["x", "y", "z"][d.index]
    assert d.epsilon_spent == 0.5 and d.form == "exp(ε·u/(2Δ))" and not d.monotone
    # Dwork–Roth Thm 3.11: (2Δ/ε)(ln|R| + ln(1/β)), at the sampler's coefficient (1e-6 below ε/(2Δ))
    shrink = 1 - 1e-6
    assert d.utility_loss(0.1) == pytest.approx(
        (2 * 2.0 / 0.5) * (math.log(3) + math.log(10)) / shrink, rel=1e-12
    )
    assert "McSherry" in d.note and f"{d.utility_loss(0.05):.4g}" in d.note
    m = decide(["x", "y"], [1.0, 2.0], sensitivity=1.0, epsilon=1.0, monotone=True, rng=seeded(2))
    assert m.form == "exp(ε·u/Δ)"
    assert m.utility_loss(0.1) == pytest.approx((math.log(2) + math.log(10)) / shrink, rel=1e-12)


def test_callable_and_array_utilities_agree() -> None:
    words = ["apple", "kiwi", "banana", "fig"]
    by_callable = [decide(words, len, 1.0, 3.0, rng=seeded(s)).choice for s in range(30)]
    by_array = [decide(words, [5, 4, 6, 3], 1.0, 3.0, rng=seeded(s)).choice for s in range(30)]
    assert by_callable == by_array
    assert decide(np.array([10, 20, 30]), [0.0, 0.0, 100.0], 1.0, 1.0, rng=seeded(3)).choice == 30


def revenue(prices: NDArray[np.float64], bids: NDArray[np.float64]) -> NDArray[np.float64]:
    """McSherry–Talwar: selling at price p earns p·#{bids ≥ p}."""
    return np.asarray(prices * (bids[None, :] >= prices[:, None]).sum(axis=1), dtype=np.float64)


@pytest.mark.slow
@pytest.mark.parametrize(("monotone", "true_loss"), [(False, 0.35), (True, 0.83)])
def test_auditor_finds_no_epsilon_above_the_claim_on_neighbouring_bids(
    monotone: bool, true_loss: float
) -> None:
    """Two posted prices, 30 one-euro bids, and the neighbour with one more bid at the top price.

    That bid lifts the rare top price's revenue by the whole Δ and the common one's by Δ/10: the privacy
    loss at the top price is ε/2 (or ε, monotone) minus the log-ratio of the normalisers, 0.35 (general
    form) and 0.83 (monotone form, valid: revenue only rises when a bid is added). The auditor must stay at
    or below ε = 1, and (power) get within reach of the true loss, so the check is not vacuous.
    """
    prices = np.array([1.0, 10.0])
    bids0 = np.ones(30)
    bids1 = np.append(bids0, 10.0)
    rng = seeded(21 if monotone else 20)

    def sampler(bids: NDArray[np.float64]) -> Callable[[int], NDArray[np.int64]]:
        u = revenue(prices, bids)

        def draw(n: int) -> NDArray[np.int64]:
            return np.array(
                [decide(prices, u, 10.0, 1.0, monotone=monotone, rng=rng).index for _ in range(n)]
            )

        return draw

    result = audit(
        "decide_price", sampler(bids0), sampler(bids1), epsilon=1.0, samples=20_000, confidence=1 - ALPHA
    )
    assert result.passed, result
    assert result.epsilon_lower_bound > 0.5 * true_loss, result


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"candidates": []}, "at least one candidate"),
        ({"candidates": "abc"}, "list of candidates"),
        ({"candidates": 5}, "must be a sequence"),
        ({"utility": [1.0, math.nan, 2.0]}, "finite"),
        ({"utility": [1.0, math.inf, 2.0]}, "finite"),
        ({"utility": lambda c: math.nan}, "finite"),
        ({"utility": lambda c: "high"}, "return one real number"),
        ({"utility": [1.0, 2.0]}, "one score per candidate"),
        ({"utility": [[1.0, 2.0, 3.0]]}, "1-d array"),
        ({"epsilon": 0.0}, "epsilon must be > 0"),
        ({"epsilon": -1.0}, "epsilon must be > 0"),
        ({"epsilon": math.nan}, "epsilon"),
        ({"sensitivity": 0.0}, "sensitivity must be > 0"),
    ],
)
def test_bad_inputs_name_the_fix(kwargs: dict[str, object], fix: str) -> None:
    args: dict[str, object] = {
        "candidates": ["x", "y", "z"],
        "utility": [1.0, 2.0, 3.0],
        "sensitivity": 1.0,
        "epsilon": 1.0,
    }
    args.update(kwargs)
    with pytest.raises(InvalidParameter, match=re.escape(fix)):
        decide(**args)  # type: ignore[arg-type]


def test_docs_examples_run() -> None:
    """Every python block of docs/decisions.md runs (CSPRNG noise: only the code path is checked)."""
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {"__name__": "docs_example"})


def test_docs_patients_table_is_the_course_file() -> None:
    """The docs inline patients.csv so the example runs anywhere; it must be the real file."""
    inline = re.search(r'PATIENTS_CSV = """\\\n(.*?)"""', DOCS.read_text(encoding="utf-8"), flags=re.S)
    assert inline is not None
    assert inline.group(1).strip() == PATIENTS.read_text(encoding="utf-8").strip()
