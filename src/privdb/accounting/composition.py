"""What a Gaussian answer costs when the analyst's Gaussian answers are accounted together in zCDP.

Plain (sequential) composition charges T Gaussian answers of (ε, δ) each Tε. zCDP is tighter: answers of
ρ_i compose to Σρ_i-zCDP (Bun & Steinke 2016, Lemma 2.3; adaptively chosen answers too), which is
(ε(Σρ_i, Δ), Δ)-DP for any Δ > 0 (privdb.accounting.zcdp). privdb converts at Δ = Σδ_i, the Gaussian
δ the analyst's answers declared, so the δ side of the budget is charged exactly as under plain composition.

The ledger keeps, per analyst, the Gaussian answers' ρ_i, δ_i and the ε part each was charged, c_i. A new
answer (ρ, δ, plain ε e) is charged

    c = min(e, max(0, ⌈ε(Σρ_i + ρ, Σδ_i + δ)⌉ − Σc_i))

(⌈·⌉ rounds up to 10⁻¹² so the ledger stays exact). By induction Σc_i ≥ ε(Σρ_i, Σδ_i) after every answer
(when c = e, plain composition already covers the answer), so the Gaussian answers together are
(Σc_i, Σδ_i)-DP and, composed sequentially with every other answer, the analyst's spent (ε, δ) in the
ledger is a valid guarantee at every moment. A shared budget keeps a released answer that a later one was
charged with in its sums (privdb.accounting.shared.return_draws): dropping it could leave the later
marginals short. docs/proofs/ledger.md, "Gaussian answers in zCDP".

The same rule runs once per budget an answer draws on: the analyst's own over the analyst's Gaussian
answers, and each table's lifetime budget, budget group and renewing window over the Gaussian answers (of
every analyst) drawn on it, in its current window (privdb.accounting.shared). A budget's charges thus cover
the zCDP conversion of the answers it bounds, whatever else those analysts asked elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from privdb.accounting.zcdp import epsilon_from_rho

__all__ = ["GaussianCost", "gaussian_charge"]

_GRID = 10**12  # charges are rounded up to 1e-12


@dataclass(frozen=True)
class GaussianCost:
    """The Gaussian part of one answer: its ρ, the δ it converts at, and what plain composition charges."""

    rho: float
    delta: Fraction
    epsilon: Fraction


def gaussian_charge(prior: Iterable[tuple[float, Fraction, Fraction]], cost: GaussianCost) -> Fraction:
    """The ε charged for ``cost`` after the analyst's earlier Gaussian answers ``prior`` (ρ_i, δ_i, c_i)."""
    rho, delta, charged = cost.rho, cost.delta, Fraction(0)
    for r, d, c in prior:
        rho, delta, charged = rho + r, delta + d, charged + c
    if not 0 < delta < 1:
        return cost.epsilon
    return min(cost.epsilon, max(Fraction(0), _converted(rho, delta) - charged))


def _converted(rho: float, delta: Fraction) -> Fraction:
    """ε(ρ, δ) rounded up to the ledger's grid."""
    return Fraction(math.ceil(epsilon_from_rho(rho, float(delta)) * _GRID), _GRID)
