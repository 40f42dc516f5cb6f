"""USING GAUSSIAN and its zCDP charge on neighbouring databases (issue 16): besides the noisy values, an
analyst sees whether the query answered, its rows and columns, and what it was charged. Each is the same
whether or not Alice is in the table: the noise law is fixed by the query text, and the charge depends only
on the analyst's own earlier Gaussian answers (docs/proofs/ledger.md, "Gaussian answers in zCDP")."""

from __future__ import annotations

from pathlib import Path

from adversarial.neighbours import neighbours, same_outcome
from privdb.sql import engine

QUERIES = [
    "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN disease, COUNT(*), SUM(income) FROM people GROUP BY disease",
    "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM people WHERE disease = 'HIV'",
    "DP-SELECT 0.5 DELTA 1e-6 USING GAUSSIAN AVG(income), VARIANCE(age) FROM people WHERE name = 'Alice'",
    "DP-SELECT 1 USING GAUSSIAN COUNT(*) FROM people WHERE disease = 'HIV'",  # refused: no δ
    "DP-SELECT 1 DELTA 1e-6 USING CAUCHY COUNT(*) FROM people",  # refused: no such noise
    "DP-SELECT ACCURACY 1 MAX 2 DELTA 1e-6 USING GAUSSIAN AVG(age) FROM people",  # refused: accuracy first
]


def test_gaussian_queries_end_the_same_way_on_neighbours(tmp_path: Path) -> None:
    pair = neighbours(tmp_path)
    try:
        for query in QUERIES:
            same_outcome(pair, query)
    finally:
        pair.close()


def test_the_zcdp_charges_are_the_same_on_neighbours(tmp_path: Path) -> None:
    """The sequence of charges and the budget left, answer after answer, do not depend on Alice."""
    pair = neighbours(tmp_path)
    try:
        seen = []
        for db in pair.both():
            charges = []
            for i in range(4):
                result = engine.run(db, "eve", f"DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM people "
                                               f"WHERE disease = 'HIV' AND age > {i}")  # fmt: skip
                charges.append((result.epsilon_spent, result.to_dict()["composition"]["epsilon_charged"]))
            seen.append((charges, float(db.budget("eve").epsilon_remaining)))
        assert seen[0] == seen[1]
        assert seen[0][0][1][0] < seen[0][0][0][0]  # the second answer costs less than the first
    finally:
        pair.close()
