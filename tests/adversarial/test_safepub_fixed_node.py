"""Data-independent SafePub (a user-fixed node, no search) on two neighbours: D = m records of one value and
D' = D plus one more. The release is the class's sampled count when ≥ k, else nothing; its frequency on each
neighbour matches the exact binomial tail, and the (ε, δ) lower bound from Clopper–Pearson intervals stays
within (ε, δ) with all of ε spent on sampling (false failure ≤ ALPHA per interval)."""

from __future__ import annotations

import math

import pandas as pd
from scipy.stats import binom

from conftest import ALPHA, seeded
from privdb.anonymize import FlatHierarchy
from privdb.audit.auditor import clopper_pearson
from privdb.publish import parameters, safepub


def test_fixed_node_release_on_neighbours() -> None:
    eps, delta = 2.0, 0.05
    p = parameters(eps, delta)  # no search: ε_anon = ε
    m, trials = p.k + 2, 1500
    hier = {"x": FlatHierarchy("x", ["a", "b"])}
    rng = seeded(23)

    def released(rows: int) -> int:
        df = pd.DataFrame({"x": ["a"] * rows})
        hits = 0
        for _ in range(trials):
            out = safepub(df, ["x"], hier, epsilon=eps, delta=delta, node=(0,), rng=rng)
            assert out.node == {"x": 0} and out.pivots == []
            hits += int(len(out.table) > 0)
        return hits

    h0, h1 = released(m), released(m + 1)
    lo0, hi0 = clopper_pearson(h0, trials, ALPHA)
    lo1, hi1 = clopper_pearson(h1, trials, ALPHA)
    assert lo0 <= binom.sf(p.k - 1, m, p.beta) <= hi0
    assert lo1 <= binom.sf(p.k - 1, m + 1, p.beta) <= hi1
    assert lo1 - delta <= math.exp(eps) * hi0
    assert (1 - hi0) - delta <= math.exp(eps) * (1 - lo1)
