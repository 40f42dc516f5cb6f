"""Key selection's threshold: the noisy count a group (or, in BigQuery's spelling, a total's one row) must
reach to be released.

DP-SELECT's rule (privdb.sql.plan.planner): a key present in one neighbour only has a true count of at most
``reach`` in at most ``changed`` groups, each released with probability P(noise ≥ τ − reach) ≤
e^(−λ(τ − reach)/g)/(1 + q); τ is set so that their sum is at most δ (docs/proofs/sql.md, "Key selection").

BigQuery's spelling selects as ZetaSQL does (:class:`privdb.sql.front.query.Selection`):

- the count is of distinct privacy units (each unit adds at most 1 to a group, so ``reach`` is 1), as
  ZetaSQL's ``ANON_SUM(1 CLAMPED BETWEEN 0 AND 1)`` over its per-unit rows;
- ``k_threshold=k`` raises τ to at least k;
- ``min_privacy_units_per_group=M`` raises it to at least M: a group whose noisy count of units is below M
  is not released, which is what the option asks ("groups with fewer than M units are dropped"). ZetaSQL
  writes it as an exact count of at least M units and a noisy count less M − 1 past its δ-threshold; privdb
  lets the noisy count decide alone, against the larger of M and its own τ (an exact count is not a DP
  statistic; at the ε of ZetaSQL's tests the two agree);
- a total (no GROUP BY) is thresholded too when δ, ``k_threshold`` or ``min_privacy_units_per_group`` is
  given: its one row is released only if its noisy count of units reaches τ. That decision reads a noisy
  count both neighbours have (no key is revealed), so it is post-processing of an ε-DP count and spends no δ.
  At δ = 1 (ZetaSQL's "any") no δ-threshold applies: a probability of release ≤ 1 says nothing.

A higher τ only lowers each probability above, so every threshold here keeps the δ the budget records; where
``k_threshold`` or ``min_privacy_units_per_group`` raises τ above δ's, the sum of those probabilities is
smaller than δ, and that smaller δ (:func:`spent_delta`) is what the answer is charged: at ZetaSQL's
``delta=1`` with ``min_privacy_units_per_group=3`` and a large ε it is far below any budget's δ.
"""

from __future__ import annotations

import math

from privdb.mechanisms.laplace import Laplace
from privdb.sql.front.query import DPQuery

__all__ = ["selects_total", "spent_delta", "threshold_tau"]


def selects_total(query: DPQuery, grouped: bool) -> bool:
    """A total (no GROUP BY) in BigQuery's spelling, thresholded as ZetaSQL thresholds it."""
    chosen = query.selection
    if chosen is None or grouped:
        return False
    return query.delta > 0 or chosen.k_threshold is not None or chosen.min_units is not None


def threshold_tau(query: DPQuery, mech: Laplace, reach: float, changed: int, delta: float) -> float:
    """τ for a count released by ``mech`` whose one unit adds at most ``reach`` to a group it reaches, in at
    most ``changed`` groups, at ``delta`` (0: no δ-threshold, only ZetaSQL's k and M)."""
    tau = _delta_tau(mech, reach, changed, delta)
    chosen = query.selection
    if chosen is not None and chosen.k_threshold is not None:
        tau = max(tau, float(chosen.k_threshold))
    if chosen is not None and chosen.min_units is not None:
        tau = max(tau, float(chosen.min_units))
    return tau


def _delta_tau(mech: Laplace, reach: float, changed: int, delta: float) -> float:
    """δ's own τ (−∞ at δ = 1, which bounds no release probability: grouped, the ledger refuses it)."""
    if not 0 < delta < 1:
        return -math.inf
    q = math.exp(-mech.rate)
    t = (mech.granularity / mech.rate) * math.log(changed / (delta * (1 + q)))
    return reach + max(t, 0.0) + mech.granularity


def spent_delta(mech: Laplace, reach: float, changed: int, tau: float, delta: float) -> float:
    """The δ a threshold ``τ`` (from :func:`threshold_tau` at ``delta``) spends: ``delta`` itself, or less
    where k or M raised τ above δ's. A group one neighbour lacks holds at most ``reach`` (on the noise's
    grid g), and its noisy count ``reach + g·Z`` (Z discrete Laplace, P(Z ≥ k) = q^k/(1 + q)) passes τ with
    probability ``q^⌈(τ − reach)/g⌉/(1 + q)``; ``changed`` such groups: δ is their sum. At δ's own τ this
    is at most δ (τ − reach − g is the t δ sets), so it is charged only where it is smaller."""
    if (
        not 0 < delta <= 1
        or not math.isfinite(tau)
        or tau <= max(reach, _delta_tau(mech, reach, changed, delta))
    ):
        return delta
    steps = math.ceil((tau - reach) / mech.granularity)
    used = changed * math.exp(-mech.rate * steps) / (1 + math.exp(-mech.rate))
    return used if used < delta * (1 - 1e-9) else delta  # δ itself unless τ was raised past it
