"""The population table of δ-presence and k-map: refused when it cannot be joined to the research sample,
and its quasi-identifiers read as canonical text so that values of another type still match.

A CSV column with one blank reads as floats (39.0), which as text never equals the sample's 39: the values
are compared as ``hierarchy.raw_strings`` makes them (integral numbers without ``.0``), and blanks are
refused, as in the sample. A population tuple absent from the sample is legitimate; a population none of
whose records has a sample record's values is a mistake (types or labels differ) and is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from privdb.anonymize.hierarchy import raw_strings
from privdb.errors import InvalidParameter

__all__ = ["check_population", "population_text", "require_complete"]


def require_complete(population: pd.DataFrame, qi: Sequence[str]) -> None:
    """Refuse a population table without a quasi-identifier, or with a missing value in one."""
    missing = [c for c in qi if c not in population.columns]
    if missing:
        raise InvalidParameter(
            f"the population table lacks the quasi-identifier '{missing[0]}': give it the same columns"
        )
    for c in qi:
        blank = int(population[c].isna().sum())
        if blank:
            raise InvalidParameter(
                f"the population table's quasi-identifier '{c}' has {blank} missing value(s): fill or drop "
                "them (a record with an unknown value cannot be counted in any class)"
            )


def population_text(population: pd.DataFrame, qi: Sequence[str]) -> pd.DataFrame:
    """The population's quasi-identifiers as canonical text (39.0 and 39 alike), one column each."""
    return pd.DataFrame({c: raw_strings(population[c].to_numpy()) for c in qi}, index=population.index)


def check_population(sample: pd.DataFrame, population: pd.DataFrame, qi: Sequence[str]) -> None:
    """Refuse a population that cannot hold the research sample ``sample`` (see the module docstring)."""
    require_complete(population, qi)
    pop, own = population_text(population, qi), population_text(sample, qi)
    if len(qi) == 1:
        matched = pop[qi[0]].isin(own[qi[0]]).any()
    else:
        matched = pd.MultiIndex.from_frame(pop).isin(pd.MultiIndex.from_frame(own)).any()
    if matched:
        return
    apart = [c for c in qi if not pop[c].isin(own[c]).any()]
    where = (
        f"no value of '{apart[0]}' in the population occurs in the sample"
        if apart
        else "no combination of the quasi-identifiers does"
    )
    raise InvalidParameter(
        f"no population record has the quasi-identifier values of any sample record ({where}): the "
        "population must hold the research sample, its values written alike (compare the columns' types "
        "and labels in both files)"
    )
