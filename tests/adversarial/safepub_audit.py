"""SafePub's release audited on two neighbours, written once for the fixed-node and the searched release:
D = m records of one value and D' = D plus one more (the target)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
from scipy.stats import binom

from conftest import ALPHA
from privdb.audit.auditor import clopper_pearson
from privdb.publish.parameters import SafePubParameters


def audit_neighbours(
    released: Callable[[pd.DataFrame], bool],
    m: int,
    trials: int,
    p: SafePubParameters,
    *,
    epsilon: float,
    delta: float,
) -> None:
    """Run ``released`` (was the value published?) ``trials`` times on D, then on D'; assert each frequency's
    Clopper–Pearson interval holds the exact tail P(Bin(n, β) ≥ k), and that the (ε, δ) lower bound from the
    two intervals stays within (``epsilon``, ``delta``) both ways. Each interval misses its probability with
    chance ≤ ALPHA."""
    frames = [pd.DataFrame({"x": ["a"] * rows}) for rows in (m, m + 1)]
    hits = [sum(released(frame) for _ in range(trials)) for frame in frames]
    lo0, hi0 = clopper_pearson(hits[0], trials, ALPHA)
    lo1, hi1 = clopper_pearson(hits[1], trials, ALPHA)
    assert lo0 <= binom.sf(p.k - 1, m, p.beta) <= hi0
    assert lo1 <= binom.sf(p.k - 1, m + 1, p.beta) <= hi1
    assert lo1 - delta <= math.exp(epsilon) * hi0
    assert (1 - hi0) - delta <= math.exp(epsilon) * (1 - lo1)
