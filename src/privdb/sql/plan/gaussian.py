"""USING GAUSSIAN in a plan: which statistics get (discrete) Gaussian noise and at what ρ, and what a plan's
Gaussian part costs in zCDP (docs/proofs/sql.md, "Gaussian noise"; the ledger's side is
privdb.accounting.composition)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from privdb.accounting import zcdp

if TYPE_CHECKING:
    from privdb.sql.plan.types import Plan, Statistic

__all__ = ["gaussian_statistics", "zcdp_cost"]


def gaussian_statistics(statistics: list[Statistic], *, skip: str | None, delta: float) -> list[Statistic]:
    """The statistics (all but ``skip``) noised with the (discrete) Gaussian: their ε shares, at ``delta``,
    become one ρ (the largest whose conversion is at most their sum), split in the same proportions. zCDP
    composes by adding ρ, so together they are at most (Σε_i, δ)-DP, as the Laplace plan was."""
    gaussian = [s for s in statistics if s.name != skip]
    total = sum(s.epsilon for s in gaussian)
    if not gaussian or total <= 0:
        return statistics
    rho = zcdp.rho_from_epsilon(total, delta)
    return [
        s if s.name == skip else replace(s, noise="gaussian", rho=rho * s.epsilon / total, delta=delta)
        for s in statistics
    ]


def zcdp_cost(plan: Plan) -> tuple[float, float, float] | None:
    """(ρ, ε, δ) of a plan's Gaussian statistics — the ρ their noise has (at most the planned ρ), the ε
    plain composition charges for them and the δ they convert at — or None without Gaussian noise."""
    gaussian = [s for s in plan.statistics if s.noise == "gaussian"]
    if not gaussian:
        return None
    rho = sum(s.mechanism().cost.rho or 0.0 for s in gaussian)
    return rho, sum(s.epsilon for s in gaussian), gaussian[0].delta
