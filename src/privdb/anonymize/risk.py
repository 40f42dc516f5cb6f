"""Re-identification risk of a table under the three attacker models of El Emam (2013), as ARX reports them.

* Prosecutor: the attacker knows the target is in the table; a record in a class of size |E| is picked out
  with probability 1/|E|. Highest = 1/(smallest class); average over records = #classes / n (ARX; pycanon's
  ``average_rir`` averages over classes instead: 0.857 against 0.600 on raw Adult).
* Journalist: the attacker does not know whether the target is in the table; the risk of a class is 1/F,
  F the population records its released values cover. F comes from one of three population models (the
  ``model`` field says which):

  - ``population table``: a table of the population (raw values); F is counted by joining it with the
    release (``linkage.match``, through the release's hierarchies when given), and never below the class's
    own size. A released value read as no range, set, mask, ``*``, population value or hierarchy label is
    refused, as in ``criteria.evaluate``: counted as covering nobody it would make F too small.
  - ``sampling fraction``: only the population's size N is known; the table is taken as a uniform random
    sample of it (sampling fraction π = n/N), so each class's population count is estimated F̂ = f/π, f the
    class's size in the table (the simple f/F ratio; no Pitman or Zayatz super-population model).
    Journalist risk is then π/f: π times the prosecutor risk.
  - ``sample as population``: neither is given; F = f, so journalist risk equals prosecutor risk.
* Marketer: the expected share of records re-identified when linking everyone: (1/n)·Σ_E f_E/F_E, which is
  #classes / n with the sample as population and π·#classes / n under the sampling fraction.
* Sample uniques: the share of records alone in their class.

Suppressed records are no class, but they are not riskless: an attacker who sees that no published class
matches a target learns that the target is suppressed, so the suppressed records are one anonymity set of
size |suppressed| in the prosecutor model (and ARX's #classes / n gains one for it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import Classes, FloatArray, group, require_columns, require_rows
from privdb.anonymize.hierarchy import Hierarchy
from privdb.anonymize.linkage import match_population
from privdb.errors import InvalidParameter

__all__ = ["Risk", "record_risk", "risk"]


def record_risk(classes: Classes) -> FloatArray:
    """Prosecutor risk of each record: 1/|E|, and 1/|suppressed| for suppressed records."""
    out = np.empty(classes.n)
    keep = ~classes.suppressed
    out[keep] = 1.0 / classes.sizes[classes.ids[keep]]
    if classes.n_suppressed:
        out[classes.suppressed] = 1.0 / classes.n_suppressed
    return out


@dataclass(frozen=True)
class Risk:
    """Risk figures of one table (fractions 0..1)."""

    prosecutor_max: float
    prosecutor_avg: float
    journalist_max: float
    journalist_avg: float
    marketer: float
    sample_uniques: float
    records: int
    classes: int
    suppressed: int
    model: str = "sample as population"

    def to_dict(self) -> dict[str, Any]:
        return {
            "prosecutor_max": self.prosecutor_max,
            "prosecutor_avg": self.prosecutor_avg,
            "journalist_max": self.journalist_max,
            "journalist_avg": self.journalist_avg,
            "marketer": self.marketer,
            "sample_uniques": self.sample_uniques,
            "records": self.records,
            "classes": self.classes,
            "suppressed": self.suppressed,
            "model": self.model,
        }


def risk(
    table: pd.DataFrame,
    qi: Sequence[str],
    population: pd.DataFrame | None = None,
    *,
    population_size: int | None = None,
    classes: Classes | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
) -> Risk:
    """Prosecutor, journalist and marketer risk and sample uniques of ``table`` over ``qi``.

    ``population`` (raw values, the same quasi-identifier columns) makes the journalist and marketer risk
    count, for each class, the population records its released values cover (see ``linkage.match``);
    ``population_size`` N instead estimates that count as f·N/n (the sampling-fraction model of the module
    docstring). ``classes`` reuses a grouping already made by ``_classes.group``. ``hierarchies``: those the
    release was generalised with, so that a category label (``Undergraduate``) covers the population
    values under it; without them a release of such labels is refused (``InvalidParameter``).
    """
    if population is not None and population_size is not None:
        raise InvalidParameter("give a population table or a population size, not both")
    cl = classes if classes is not None else group(table, qi)
    n = cl.n
    sets = cl.n_classes + (1 if cl.n_suppressed else 0)
    smallest = min(int(cl.sizes.min()) if cl.n_classes else n, cl.n_suppressed or n)
    prosecutor_max = 1.0 / smallest
    prosecutor_avg = sets / n
    uniques = float((cl.sizes == 1).sum()) / n
    model = "sample as population"
    j_max, j_avg = prosecutor_max, prosecutor_avg
    if population_size is not None:
        fraction = _sampling_fraction(population_size, n)
        j_max, j_avg = fraction * prosecutor_max, fraction * prosecutor_avg
        model = "sampling fraction"
    elif population is not None:
        model = "population table"
        require_columns(population, qi, "population table")
        require_rows(population, "population table")
        found = match_population(table, population, qi, cl, hierarchies).public_per_class.astype(np.float64)
        # a class covers at least its own records when the population holds the sample
        f = np.maximum(found, cl.sizes)
        j_max = float((1.0 / f).max()) if cl.n_classes else 0.0
        j_avg = float((cl.sizes / f).sum()) / n
        if cl.n_suppressed:
            j_max = max(j_max, 1.0 / max(len(population), cl.n_suppressed))
    return Risk(
        prosecutor_max=prosecutor_max,
        prosecutor_avg=prosecutor_avg,
        journalist_max=j_max,
        journalist_avg=j_avg,
        marketer=j_avg,
        sample_uniques=uniques,
        records=n,
        classes=cl.n_classes,
        suppressed=cl.n_suppressed,
        model=model,
    )


def _sampling_fraction(population_size: int, n: int) -> float:
    """π = n/N, refusing a population smaller than the table."""
    if isinstance(population_size, bool) or not isinstance(population_size, (int, np.integer)):
        raise InvalidParameter(f"the population size is a whole number of records (got {population_size!r})")
    if population_size < n:
        raise InvalidParameter(
            f"the population size {population_size:,} is smaller than the table ({n:,} records): the table "
            "is a sample of its population, so give N of at least the table's size"
        )
    return n / float(population_size)
