"""The demo's work, as plain data: randomised response on a simulated class, and DP-SELECT queries on a
real DuckDB database (the notes' tax_office and a generated census of 100,000 people), with the owner's
true answers beside the private ones and the budget running out.

Kept apart from the CLI so that tests check the numbers and the CLI only draws tables.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from privdb.data import census
from privdb.database import Database
from privdb.errors import BudgetExhausted
from privdb.mechanisms import (
    AlphaProtocol,
    BinaryRandomizedResponse,
    CoinProtocol,
    HeadsSayYes,
    epsilon_of,
)
from privdb.sql import engine

__all__ = ["DemoRow", "build_demo_database", "randomized_response_rows", "sql_rows", "tax_office"]


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


TAX_METADATA: dict[str, Any] = {
    "columns": {
        "id": {"type": "int", "identifier": True},
        "name": {"type": "text", "identifier": True},
        "salary": {"type": "int", "lower": 0, "upper": 500_000},
        "age": {"type": "int", "lower": 0, "upper": 120},
        "profession": {"type": "text"},
    }
}

# (DP-SELECT, the owner's SQL for the truth), paid from a budget of ε = 3: the last one is refused
DEMO_QUERIES: list[tuple[str, str]] = [
    (
        "DP-SELECT 0.5 COUNT(*) FROM tax_office WHERE age > 50",
        "SELECT COUNT(*) FROM tax_office WHERE age > 50",
    ),
    ("DP-SELECT 0.5 COUNT(*) FROM people WHERE age > 30", "SELECT COUNT(*) FROM people WHERE age > 30"),
    (
        "DP-SELECT 0.5 SUM(income) FROM people WHERE state = 'CA'",
        "SELECT SUM(LEAST(income, 500000)) FROM people WHERE state = 'CA'",
    ),
    (
        "DP-SELECT 0.5 AVG(income) FROM people WHERE education = 'master'",
        "SELECT AVG(LEAST(income, 500000)) FROM people WHERE education = 'master'",
    ),
    (
        "DP-SELECT 0.5 education, COUNT(*) AS n FROM people GROUP BY education ORDER BY n DESC",
        "SELECT education, COUNT(*) AS n FROM people GROUP BY education",
    ),
    (
        "DP-SELECT 0.5 AVG(salary) FROM tax_office WHERE age > 30",
        "SELECT AVG(LEAST(salary, 500000)) FROM tax_office WHERE age > 30",
    ),
    ("DP-SELECT 0.5 SUM(salary) FROM tax_office", "SELECT SUM(LEAST(salary, 500000)) FROM tax_office"),
]
DEMO_BUDGET = 3.0


def build_demo_database(path: str | Path, people: int = 100_000) -> Database:
    """The demo database: the notes' tax_office and a generated census table of ``people`` people."""
    db = Database(path)
    with resources.as_file(resources.files("privdb").joinpath("data/tax_office.csv")) as csv_path:
        db.load("tax_office", csv_path, TAX_METADATA)
    db.backend.load_frame("people", census.generate(people))
    db.set_metadata("people", census.METADATA)
    db.grant("analyst", epsilon=DEMO_BUDGET)
    return db


def sql_rows(db: Database) -> tuple[list[DemoRow], str]:
    """Run the demo queries as the analyst until the budget runs out; truth from the owner's raw SQL."""
    rows: list[DemoRow] = []
    for dp, raw in DEMO_QUERIES:
        try:
            result = engine.run(db, "analyst", dp)
        except BudgetExhausted as refused:
            return rows, f"{dp}\n  refused: {refused.message}"
        truths = {tuple(r[:-1]): float(r[-1]) for r in db.backend.raw(raw).itertuples(index=False)}
        left = f"ε left {result.budget['epsilon_remaining']:g}"
        intervals = result.accuracy[-1]["ci95_rows"]
        for r, row in enumerate(result.rows):
            label = dp if r == 0 else ""
            key = tuple(row[:-1])
            rows.append(
                DemoRow(
                    label + (f"  · {', '.join(map(str, key))}" if key else ""),
                    result.accuracy[-1]["epsilon"],
                    truths.get(key, 0.0),
                    float(row[-1]),
                    (float(intervals[r][0]), float(intervals[r][1])),
                    left if r == len(result.rows) - 1 else "",
                )
            )
    return rows, ""


def format_number(x: float) -> str:
    """Compact display: integers without decimals, large values with separators."""
    if math.isinf(x):
        return "∞"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}" if x != int(x) else f"{int(x)}"
