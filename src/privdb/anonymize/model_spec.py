"""Which of issue 31's privacy models to check or enforce, and their parameters (``Models``), with ARX's
k-map estimate (``derived_k``). Kept apart from ``criteria`` (which checks them on a table and needs the
linkage join) so the search can import it without the checker; the definitions are in ``criteria``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privdb.anonymize.uniqueness import check_estimator
from privdb.errors import InvalidParameter

__all__ = ["KMAP_ESTIMATORS", "Models", "check_model_inputs", "derived_k", "needs_lattice"]

KMAP_ESTIMATORS = ("poisson", "zero-truncated-poisson")


def _positive(name: str, value: float, example: str, top: float = math.inf) -> float:
    bad = isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
    if bad or not 0 < value <= top or not math.isfinite(float(value)):
        rng = "a positive number" if top == math.inf else f"a number in (0, {top:g}]"
        raise InvalidParameter(f"{name} must be {rng} (got {value!r}): e.g. {example}")
    return float(value)


@dataclass(frozen=True)
class Models:
    """Which models to check and their parameters (None: not checked).

    ``beta`` / ``enhanced_beta``: β-likeness; ``delta_disclosure``: δ; ``delta_presence``: (δmin, δmax);
    ``k_map``: k (with ``k_map_estimator`` and ``significance`` when only π is known); ``average_risk``,
    ``sample_uniqueness``, ``population_uniqueness``: thresholds in (0, 1] (the last with ``estimator``).
    ``presence_coverage=False`` checks δ-presence as ARX does, not by privdb's rule that with δmin > 0
    every population record must fall in a released class: δ of each class holding sample records, and a
    class of population records only fails the node unless k ≥ 2 or l-diversity is asked
    (``node_criteria``).
    """

    beta: float | None = None
    enhanced_beta: float | None = None
    delta_disclosure: float | None = None
    delta_presence: tuple[float, float] | None = None
    k_map: int | None = None
    k_map_estimator: str = "poisson"
    significance: float = 0.01
    average_risk: float | None = None
    sample_uniqueness: float | None = None
    population_uniqueness: float | None = None
    estimator: str = "dankar"
    presence_coverage: bool = True  # False: ARX's δ-presence, without privdb's rule on uncovered people

    def __post_init__(self) -> None:
        if self.beta is not None:
            _positive("β", self.beta, "beta=1.0")
        if self.enhanced_beta is not None:
            _positive("β", self.enhanced_beta, "enhanced_beta=1.0")
        if self.delta_disclosure is not None:
            _positive("δ", self.delta_disclosure, "delta_disclosure=1.5")
        if self.delta_presence is not None:
            lo, hi = self.delta_presence
            ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (lo, hi))
            if not ok or not 0 <= lo <= hi <= 1:
                raise InvalidParameter(
                    f"δ-presence needs 0 ≤ δmin ≤ δmax ≤ 1 (got {self.delta_presence!r}): e.g. (0.0, 0.5)"
                )
        if self.k_map is not None and (
            isinstance(self.k_map, bool) or not isinstance(self.k_map, (int, np.integer)) or self.k_map < 1
        ):
            raise InvalidParameter(f"k of k-map must be a whole number of at least 1 (got {self.k_map!r})")
        if self.k_map_estimator not in KMAP_ESTIMATORS:
            raise InvalidParameter(
                f"unknown k-map estimator '{self.k_map_estimator}': use {' or '.join(KMAP_ESTIMATORS)}"
            )
        if not 0 <= self.significance <= 1:
            raise InvalidParameter(f"the significance level lies in 0..1 (got {self.significance!r})")
        for name in ("average_risk", "sample_uniqueness", "population_uniqueness"):
            value = getattr(self, name)
            if value is not None:
                _positive(f"the {name.replace('_', ' ')} threshold", value, f"{name}=0.05", top=1.0)
        check_estimator(self.estimator)

    @property
    def needs_sensitive(self) -> bool:
        return any(x is not None for x in (self.beta, self.enhanced_beta, self.delta_disclosure))

    @property
    def any(self) -> bool:
        return self.needs_sensitive or any(
            x is not None
            for x in (
                self.delta_presence,
                self.k_map,
                self.average_risk,
                self.sample_uniqueness,
                self.population_uniqueness,
            )
        )


def check_model_inputs(models: Models | None, sensitive: str | None, population: Any, fraction: Any) -> None:
    """Refuse a model whose inputs are missing, and a population table or sampling fraction no model asked
    uses (it would be silently ignored)."""
    models = models if models is not None else Models()
    if not models.any and (population is not None or fraction is not None):
        raise InvalidParameter(
            "a population table and a sampling fraction serve δ-presence, k-map and population uniqueness: "
            "ask one of those models or leave them out"
        )
    if models.needs_sensitive and sensitive is None:
        raise InvalidParameter("β-likeness and δ-disclosure privacy need sensitive='<column>'")
    if models.delta_presence is not None and population is None:
        raise InvalidParameter("δ-presence needs the population table the research sample was drawn from")
    if models.k_map is not None and population is None and fraction is None:
        raise InvalidParameter(
            "k-map needs a population table, or the sampling fraction to estimate the population counts"
        )
    if models.population_uniqueness is not None and fraction is None:
        raise InvalidParameter(
            "population uniqueness needs the sampling fraction (the table's share of its population), "
            "e.g. 0.01"
        )
    if population is not None and models.delta_presence is None and models.k_map is None:
        raise InvalidParameter(
            "a population table serves only δ-presence and k-map, neither of which was asked: "
            "ask one of them or leave out the population table"
        )
    if fraction is not None and models.k_map is None and models.population_uniqueness is None:
        raise InvalidParameter(
            "a sampling fraction serves only k-map and population uniqueness, neither of which was asked: "
            "ask one of them or leave out the sampling fraction"
        )


def needs_lattice(models: Models, population: Any) -> bool:
    """Whether ``models`` are enforced per lattice node (δ-presence, k-map against a population, risk
    thresholds), which Mondrian cannot honour."""
    risk = (models.average_risk, models.sample_uniqueness, models.population_uniqueness)
    return (
        models.delta_presence is not None
        or (models.k_map is not None and population is not None)
        or any(x is not None for x in risk)
    )


MONDRIAN_REFUSAL = (
    "δ-presence, k-map against a population and the risk thresholds are checked on whole generalisations "
    "with suppression, which Mondrian (no suppression, classes cut one by one) cannot honour: use the "
    "lattice search (algorithm='lattice'; on the command line, leave out --algorithm mondrian)"
)


def derived_k(k: int, sampling_fraction: float, significance: float, estimator: str, n: int) -> int:
    """ARX's k-anonymity equivalent of k-map when only π is known (see the module docstring)."""
    from scipy.stats import poisson  # heavy (about a second to import), and only k-map's estimate needs it

    lam = sampling_fraction * k
    if estimator == "poisson":
        counter, value = 0, 0.0
        while value < 1 - significance:
            value = float(poisson.cdf(counter, lam))
            counter += 1
            if counter >= k:
                break
        out = counter + 1
    else:
        nonzero = 1 - float(poisson.pmf(0, lam))
        counter, value = 1, 0.0
        while value < 1 - significance:
            value += float(poisson.pmf(counter, lam)) / nonzero
            counter += 1
            if counter >= k:
                break
        out = counter
    return min(k, out, n)
