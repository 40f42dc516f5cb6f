"""The values the plan stage makes and the later stages take: a plan's noisy statistics (:class:`Statistic`),
the histograms of its order statistics and modes (:class:`Histogram`), its aggregates, key selection and
the whole :class:`Plan`, and the :class:`Shape` a plan takes from the text alone. This module imports none
of the modules that build or use them, so the plan stage's modules depend on it and not on each other.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.mechanisms import (
    DiscreteGaussian,
    ExponentialMechanism,
    Gaussian,
    Geometric,
    Laplace,
    RandomSource,
)
from privdb.mechanisms.base import AdditiveNoise
from privdb.sql.front.checks.validate import Resolved
from privdb.sql.front.query import DPQuery

__all__ = [
    "ANSWER_SHARE",
    "END_SHARE",
    "AggregatePlan",
    "Histogram",
    "Plan",
    "Shape",
    "Statistic",
    "Threshold",
    "answer_share",
]

ANSWER_SHARE = 0.5  # of a quantile's per-group ε: chooses the answer
END_SHARE = 0.25  # each: chooses one end of its interval


@dataclass(frozen=True)
class Statistic:
    """One noisy per-group sum."""

    name: str
    kind: (
        str  # rows | nonnull | sum | sumsq; over rows where column2 is not null too: pn | psum | psq | pprod
    )
    column: ColumnMeta | None
    sensitivity: float
    changed: int
    epsilon: float
    integer: bool  # integer counts (no privacy unit, or distinct counts): the geometric mechanism
    column2: ColumnMeta | None = None
    # USING GAUSSIAN: ρ-zCDP noise at this ρ share, its ε stated at ``delta`` (the query's Gaussian δ)
    noise: str = "laplace"
    rho: float = 0.0
    delta: float = 0.0

    def mechanism(self, rng: RandomSource | None = None) -> AdditiveNoise:
        """The mechanism that noises this statistic (``rng`` only for reproducible tests). The sensitivity is
        an L1 bound over the groups one unit reaches, hence also an L2 bound for the Gaussian."""
        if self.noise == "gaussian":
            if self.integer:
                return DiscreteGaussian(
                    rho=self.rho, delta=self.delta, sensitivity=int(self.sensitivity), rng=rng
                )
            return Gaussian(
                rho=self.rho, delta=self.delta, sensitivity=self.sensitivity, changed=self.changed, rng=rng
            )
        return self.laplace(rng)

    def laplace(self, rng: RandomSource | None = None) -> Laplace:
        """The Laplace (geometric, for integer counts) mechanism at this statistic's ε."""
        if self.integer:
            return Geometric(epsilon=self.epsilon, sensitivity=int(self.sensitivity), rng=rng)
        return Laplace(epsilon=self.epsilon, sensitivity=self.sensitivity, changed=self.changed, rng=rng)


@dataclass(frozen=True)
class Histogram:
    """Per-group counts of one column over cells, for an order statistic or a mode (exponential mechanism).

    Quantiles: one cell per candidate, a grid point of ``[L, U]`` (every integer of an int column of span
    up to ``MAX_INT_CELLS``, else ``L + j·(U − L)/QUANTILE_CELLS``, ``j = 0 … QUANTILE_CELLS``); a clamped
    value counts at its nearest grid point, so tied values stay one candidate's and a point mass can win.
    Modes: one cell per public domain value. ``epsilon`` is per group, ``sensitivity`` the utility's Δ.
    """

    name: str
    column: ColumnMeta
    lo: float
    width: float
    cells: int
    values: tuple[Any, ...] | None
    epsilon: float
    sensitivity: float
    monotone: bool
    # USING SMOOTH: the δ of each group's smooth-sensitivity answer (privdb.sql.plan.smooth); 0: exponential
    smooth_delta: float = 0.0

    @property
    def integer(self) -> bool:
        return self.values is None and self.width == 1.0 and self.column.type == "int"

    @property
    def points(self) -> int:
        """How many candidates the mechanism chooses among: one per cell."""
        return self.cells

    def mechanism(self, rng: RandomSource | None = None) -> ExponentialMechanism:
        """The answer's mechanism, at its share of ``epsilon`` (a quantile's interval gets the rest)."""
        return ExponentialMechanism(
            epsilon=self.epsilon * answer_share(self),
            sensitivity=self.sensitivity,
            monotone=self.monotone,
            rng=rng,
        )


def answer_share(hist: Histogram) -> float:
    """The share of the group's ε that chooses the answer: all of it for a mode, ``ANSWER_SHARE`` for a
    quantile (the rest buys its interval)."""
    return 1.0 if hist.values is not None else ANSWER_SHARE


@dataclass(frozen=True)
class Threshold:
    """Key selection: a key is released only if its noisy count reaches ``tau`` (costs δ)."""

    statistic: str
    tau: float
    delta: float


@dataclass(frozen=True)
class AggregatePlan:
    output: str
    kind: str
    column: ColumnMeta | None
    statistics: tuple[str, ...]
    epsilon: float
    histogram: Histogram | None = None
    q: float | None = None
    column2: ColumnMeta | None = None
    visible: bool = True  # in the answer (False: used only by HAVING, ORDER BY or an expression)


@dataclass(frozen=True)
class Plan:
    """Everything needed to run a DP-SELECT, decided before any data is read."""

    query: DPQuery
    resolved: Resolved
    statistics: tuple[Statistic, ...]
    aggregates: tuple[AggregatePlan, ...]
    domains: tuple[tuple[Any, ...], ...] | None  # public key values per key, or None (thresholding)
    threshold: Threshold | None
    epsilon: float
    delta: float
    histograms: tuple[Histogram, ...] = ()
    relation: Any = None  # privdb.sql.front.relation.model.Relation the query reads (None: the table itself)
    truncation_epsilon: float = (
        0.0  # ε of the noisy count of units over the bound (privdb.sql.plan.truncation)
    )

    @property
    def table(self) -> TableMeta:
        return self.resolved.table

    def statistic(self, name: str) -> Statistic:
        return next(s for s in self.statistics if s.name == name)

    def public_groups(self) -> list[tuple[Any, ...]]:
        """Every combination of public key values (the Cartesian product), in order."""
        assert self.domains is not None
        return list(itertools.product(*self.domains))


@dataclass(frozen=True)
class Shape:
    """What a plan takes from the query's text and the metadata alone, before ε and δ size the noise:
    the resolved SELECT and the public key domains (None: keys go through the noisy threshold). Queries
    that differ only in ε share it (privdb.sql.plan.prepared keeps it by query shape)."""

    resolved: Resolved
    domains: tuple[tuple[Any, ...], ...] | None
