"""The demo's work, as plain data: mechanisms on the course's worked examples.

Kept apart from the CLI so that tests check the numbers and the CLI only draws tables. Until the SQL engine
exists the demo computes the true answers directly from the shipped ``tax_office.csv``; noise, accuracy and
budget are the real mechanisms and the real ledger.
"""

from __future__ import annotations

import csv
import math
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from privdb.accounting.ledger import Ledger
from privdb.errors import BudgetExhausted
from privdb.mechanisms import (
    AlphaProtocol,
    BinaryRandomizedResponse,
    CoinProtocol,
    Gaussian,
    Geometric,
    HeadsSayYes,
    Laplace,
    epsilon_of,
)

__all__ = ["DemoRow", "laplace_rows", "randomized_response_rows", "tax_office"]


@dataclass(frozen=True)
class DemoRow:
    """One line of a demo table: what was asked, the truth, the private answer and its accuracy."""

    label: str
    epsilon: float
    true_value: float
    noisy_value: float | None
    ci95: tuple[float, float] | None
    note: str = ""


def tax_office() -> list[dict[str, str]]:
    """The notes' tax-office table (shipped with privdb so the demo runs anywhere)."""
    text = resources.files("privdb").joinpath("data/tax_office.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def randomized_response_rows(n: int = 1000, true_share: float = 0.3, seed: int = 7) -> list[DemoRow]:
    """A simulated class answers "did you cheat?" through each protocol of the notes."""
    truth = np.random.default_rng(seed).random(n) < true_share  # the simulated truth, not the noise
    actual = float(truth.mean())
    rows = []
    protocols: list[tuple[str, BinaryRandomizedResponse]] = [
        ("coin protocol (notes)", CoinProtocol()),
        ("α-protocol, α = 0.25", AlphaProtocol(alpha=0.25)),
        ("RR at ε = 0.5", BinaryRandomizedResponse.for_epsilon(0.5)),
    ]
    for label, mech in protocols:
        est = mech.estimate(mech.release(truth))
        rows.append(DemoRow(label, mech.epsilon, actual, est.value, est.ci95))
    heads = epsilon_of(HeadsSayYes.matrix)
    rows.append(
        DemoRow(
            "heads: say yes (notes)",
            heads,
            actual,
            None,
            None,
            "not differentially private: a 'no' reveals the truth",
        )
    )
    return rows


def laplace_rows(epsilon_per_query: float = 0.5, budget: float = 2.0) -> tuple[list[DemoRow], str]:
    """Counts and sums on ``tax_office`` paid from a real ledger until the budget runs out."""
    people = tax_office()
    ages = np.array([float(p["age"]) for p in people])
    salaries = np.clip(np.array([float(p["salary"]) for p in people]), 0.0, 500_000.0)
    queries = [
        ("COUNT(*) WHERE age > 50", float((ages > 50).sum()), "count"),
        ("COUNT(*)", float(len(people)), "count"),
        ("SUM(salary), salary in [0, 500000]", float(salaries.sum()), "sum"),
        (
            "SUM(salary) WHERE age < 65 (Gaussian, δ=1e-6)",
            float(salaries[ages < 65].sum()),
            "gauss",
        ),
        (
            "COUNT(*) WHERE postcode = 1001",
            float(sum(p["postcode"] == "1001" for p in people)),
            "count",
        ),
    ]
    rows = []
    refusal = ""
    with tempfile.TemporaryDirectory() as tmp, Ledger(Path(tmp) / "ledger.sqlite") as ledger:
        ledger.set_budget("analyst", "tax_office", epsilon=budget, delta=1e-5)
        for label, truth, kind in queries:
            mech: Laplace | Gaussian
            if kind == "count":
                mech = Geometric(epsilon=epsilon_per_query, sensitivity=1)
            elif kind == "sum":
                mech = Laplace(epsilon=epsilon_per_query, sensitivity=500_000.0)
            else:
                mech = Gaussian(epsilon=epsilon_per_query, delta=1e-6, sensitivity=500_000.0)
            try:
                reservation = ledger.reserve(
                    "analyst", "tax_office", epsilon=mech.epsilon, delta=mech.delta, note=label
                )
            except BudgetExhausted as refused:
                refusal = f"{label}: refused — {refused.message}"
                break
            noisy = float(mech.release([truth])[0])
            reservation.commit()
            left = ledger.budget("analyst", "tax_office").epsilon_remaining
            rows.append(
                DemoRow(label, mech.epsilon, truth, noisy, mech.ci95(noisy), f"ε left {float(left):g}")
            )
    return rows, refusal


def format_number(x: float) -> str:
    """Compact display: integers without decimals, large values with separators."""
    if math.isinf(x):
        return "∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if x != int(x) else f"{int(x)}"
