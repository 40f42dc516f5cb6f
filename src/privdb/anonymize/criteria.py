"""Further privacy models, checked on any table (ARX's set beyond k, l and t): each says whether it holds and
the worst class's value.

* β-likeness (Cao and Karras, PVLDB 2012): for each class E and sensitive value s in it, the relative gain
  (q_E(s) − p(s)) / p(s) of its frequency q over the table's p is at most β (*basic*); *enhanced*: at most
  min(β, −ln p(s)), so that rare values may not become likely. Reported: the largest gain.
* δ-disclosure privacy (Brickell and Shmatikov, KDD 2008): |ln(q_E(s) / p(s))| < δ for each class and each
  value s it holds (values absent from a class are not checked, as in ARX). ARX takes log₂ where the paper
  takes ln: ARX's δ is this δ / ln 2. Reported: the largest |ln(q/p)|.
* δ-presence (Nergiz, Atzori, Clifton, SIGMOD 2007): with a population table holding the research sample,
  each class's δ_E = |sample ∩ E| / |population ∩ E| lies in [δmin, δmax]. Reported: the largest δ_E
  (and the smallest). Population records are counted per released class with ``linkage.match`` (never
  fewer than the class's own records; through the release's hierarchies when given, so that a category
  label covers the values under it; a released value read as none of these is refused, not counted as
  covering nobody); population records that no class covers have δ = 0 (the release
  tells the attacker they are not in it), so with any such record only δmin = 0 holds, as in ARX.
* k-map (Sweeney 2002; El Emam and Dankar 2008): each class matches at least k population records; counted
  in a population table, or, given only the sampling fraction π, ARX's estimate: the smallest k' such that
  a Poisson (or zero-truncated Poisson) count of mean π·k is at most k' − 1 with probability ≥ 1 − α (α the
  significance level), capped at k and at the table's size; then every class must hold k' records.
* Risk thresholds (ARX's risk-based criteria): average prosecutor re-identification risk (#classes / n) ≤ t;
  sample uniqueness (share of records alone in their class) ≤ t; population uniqueness (the share of the
  population estimated unique by ``uniqueness``'s estimator, Dankar's rule by default; N = n/π, the kept
  records' fraction π·kept/n, as ARX) ≤ t, which holds with no sample unique, and fails when the estimator
  has no estimate.

Suppressed records (``*`` in every quasi-identifier) form no class and are left out of every model here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import Classes, codes_of, group, histogram, require_columns, require_rows
from privdb.anonymize.hierarchy import Hierarchy
from privdb.anonymize.linkage import match_population
from privdb.anonymize.model_spec import KMAP_ESTIMATORS, Models, check_model_inputs, derived_k
from privdb.anonymize.population import require_complete
from privdb.anonymize.uniqueness import check_fraction, population_uniqueness
from privdb.errors import InvalidParameter

__all__ = ["KMAP_ESTIMATORS", "ModelResult", "Models", "derived_k", "evaluate", "likeness_gains"]


@dataclass(frozen=True)
class ModelResult:
    """One model's verdict on a table: whether it holds and the worst class's (or the table's) value."""

    model: str
    holds: bool
    value: float | None
    parameters: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "holds": self.holds,
            "value": self.value,
            **self.parameters,
            **self.detail,
        }


def likeness_gains(
    cls: np.ndarray, val: np.ndarray, cnt: np.ndarray, sizes: np.ndarray, prior: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per (class, value) pair present: the relative gain (q − p)/p and |ln(q/p)|."""
    q = cnt / sizes[cls]
    p = prior[val]
    return (q - p) / p, np.abs(np.log(q / p))


def _population_counts(
    table: pd.DataFrame,
    qi: Sequence[str],
    population: pd.DataFrame,
    cl: Classes,
    hierarchies: Mapping[str, Hierarchy] | None,
) -> tuple[Any, int]:
    """Population records each class covers (at least its own), and those no class covers; refuse released
    values that cover no population record as text (a hierarchy's labels without the hierarchy)."""
    require_columns(population, qi, "population table")
    require_rows(population, "population table")
    require_complete(population, qi)
    m = match_population(table, population, qi, cl, hierarchies)
    covered = np.zeros(len(m.tuple_count), dtype=bool)
    covered[m.pair_tuple] = True
    uncovered = int(m.tuple_count[~covered].sum())
    return np.maximum(m.public_per_class.astype(np.float64), cl.sizes), uncovered


def evaluate(
    table: pd.DataFrame,
    qi: Sequence[str],
    models: Models,
    *,
    sensitive: str | None = None,
    population: pd.DataFrame | None = None,
    sampling_fraction: float | None = None,
    classes: Classes | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> list[ModelResult]:
    """Check each model of ``models`` on ``table``; refuse a model whose inputs are missing.

    ``hierarchies``: those the release was generalised with; population records are then joined to a
    class also through them (a label such as ``Undergraduate`` covers ``Bachelors``), as the lattice
    search counts them. Without them, only the label text is read (ranges, ``a|b``, masks, ``*``, raw
    values); a released value none of these reads into a population value is refused, not counted as
    covering nobody."""
    check_model_inputs(models, sensitive, population, sampling_fraction)
    if sampling_fraction is not None:
        check_fraction(sampling_fraction)
    cl = classes if classes is not None else group(table, qi)
    out: list[ModelResult] = []
    if models.needs_sensitive and sensitive is not None:
        require_columns(table, [sensitive])
        if sensitive in qi:
            raise InvalidParameter(f"'{sensitive}' is both sensitive and a quasi-identifier: choose one role")
        codes, uniq = codes_of(table[sensitive])
        prior = np.bincount(codes, minlength=len(uniq)) / len(codes)  # the whole table, as ARX
        pairs = histogram(cl.ids, codes, cl.n_classes, len(uniq))
        gain, log_ratio = likeness_gains(pairs.cls, pairs.val, pairs.cnt, cl.sizes.astype(np.float64), prior)
        worst_gain = float(gain.max()) if len(gain) else 0.0
        if models.beta is not None:
            out.append(
                ModelResult(
                    "basic β-likeness", bool((gain <= models.beta).all()), worst_gain, {"beta": models.beta}
                )
            )
        if models.enhanced_beta is not None:
            bound = np.minimum(models.enhanced_beta, -np.log(prior[pairs.val]))
            out.append(
                ModelResult(
                    "enhanced β-likeness",
                    bool((gain <= bound).all()),
                    worst_gain,
                    {"beta": models.enhanced_beta},
                )
            )
        if models.delta_disclosure is not None:
            worst = float(log_ratio.max()) if len(log_ratio) else 0.0
            out.append(
                ModelResult(
                    "δ-disclosure privacy",
                    bool((log_ratio < models.delta_disclosure).all()),
                    worst,
                    {"delta": models.delta_disclosure},
                )
            )
    counts, uncovered = (
        _population_counts(table, qi, population, cl, hierarchies) if population is not None else (None, 0)
    )
    if models.delta_presence is not None and counts is not None:
        lo, hi = models.delta_presence
        delta = cl.sizes / counts
        # a population record no class covers is in the sample with probability 0 for the attacker
        dmin = 0.0 if uncovered or not len(delta) else float(delta.min())
        dmax = float(delta.max()) if len(delta) else 0.0
        out.append(
            ModelResult(
                "δ-presence",
                bool(lo <= dmin and dmax <= hi),
                dmax,
                {"delta_min": lo, "delta_max": hi},
                {"achieved_min": dmin, "population_uncovered": uncovered},
            )
        )
    if models.k_map is not None:
        if counts is not None:
            smallest = float(counts.min()) if len(counts) else math.inf
            out.append(
                ModelResult(
                    "k-map",
                    smallest >= models.k_map,
                    _finite(smallest),
                    {"k": models.k_map},
                    {"population_model": "population table"},
                )
            )
        elif sampling_fraction is not None:
            k2 = derived_k(models.k_map, sampling_fraction, models.significance, models.k_map_estimator, cl.n)
            out.append(
                ModelResult(
                    "k-map",
                    cl.k >= k2 if cl.n_classes else True,
                    float(cl.k),
                    {"k": models.k_map},
                    {
                        "population_model": f"sampling fraction ({models.k_map_estimator})",
                        "derived_k": k2,
                        "significance": models.significance,
                    },
                )
            )
    n_kept = int(cl.sizes.sum())
    if models.average_risk is not None:
        avg = cl.n_classes / n_kept if n_kept else 0.0
        out.append(
            ModelResult(
                "average re-identification risk",
                avg <= models.average_risk,
                avg,
                {"threshold": models.average_risk},
            )
        )
    uniques = float(cl.sizes[cl.sizes == 1].sum()) / n_kept if n_kept else 0.0
    if models.sample_uniqueness is not None:
        out.append(
            ModelResult(
                "sample uniqueness",
                uniques <= models.sample_uniqueness,
                uniques,
                {"threshold": models.sample_uniqueness},
            )
        )
    if models.population_uniqueness is not None and sampling_fraction is not None:
        # N = n/π is fixed; the kept records are the sample (ARX: π = kept records / N)
        est = population_uniqueness(cl.sizes, sampling_fraction * n_kept / cl.n) if n_kept else None
        value = est.of(models.estimator) if est is not None else 0.0
        holds = uniques == 0 or (value is not None and 0 < value <= models.population_uniqueness)
        detail: dict[str, Any] = {"estimator": models.estimator, "sampling_fraction": sampling_fraction}
        if est is not None and models.estimator == "dankar":
            detail["dankar_model"] = est.dankar_model
        out.append(
            ModelResult(
                "population uniqueness", holds, value, {"threshold": models.population_uniqueness}, detail
            )
        )
    return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
