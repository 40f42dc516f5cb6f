"""Data-independent SafePub (a user-fixed node, no search) on two neighbours: D = m records of one value and
D' = D plus one more. The release is the class's sampled count when ≥ k, else nothing; its frequency on each
neighbour matches the exact binomial tail, and the (ε, δ) lower bound from Clopper–Pearson intervals stays
within (ε, δ) with all of ε spent on sampling (false failure ≤ ALPHA per interval)."""

from __future__ import annotations

import pandas as pd

from adversarial.safepub_audit import audit_neighbours
from conftest import seeded
from privdb.anonymize import FlatHierarchy
from privdb.publish import parameters, safepub


def test_fixed_node_release_on_neighbours() -> None:
    eps, delta = 2.0, 0.05
    p = parameters(eps, delta)  # no search: ε_anon = ε
    m, trials = p.k + 2, 1500
    hier = {"x": FlatHierarchy("x", ["a", "b"])}
    rng = seeded(23)

    def released(df: pd.DataFrame) -> bool:
        out = safepub(df, ["x"], hier, epsilon=eps, delta=delta, node=(0,), rng=rng)
        assert out.node == {"x": 0} and out.pivots == []
        return len(out.table) > 0

    audit_neighbours(released, m, trials, p, epsilon=eps, delta=delta)
