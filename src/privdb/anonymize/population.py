"""The population table of δ-presence and k-map: refused when it cannot be joined to the research sample,
and its quasi-identifiers read as canonical text so that values of another type still match.

A CSV column with one blank reads as floats (39.0), which as text never equals the sample's 39: the values
are compared as ``hierarchy.raw_strings`` makes them (integral numbers without ``.0``), and blanks are
refused, as in the sample. A population tuple absent from the sample is legitimate; a population none of
whose records has a sample record's values is a mistake (types or labels differ) and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from privdb.anonymize.hierarchy import raw_strings
from privdb.errors import InvalidParameter

__all__ = ["check_population", "population_text", "require_complete", "unread_labels"]


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


# what the refusal says, by the table the release is joined with: (why, value kind, what is under-counted,
# what raw values would mean)
_JOINED = {
    "population": (
        "cannot count the population records each released class covers",
        "population value",
        "the population",
        "the population lacks records the release holds",
    ),
    "public table": (
        "cannot join the release with the public table",
        "public value",
        "the links (the attack would look weaker than it is)",
        "no public record holds any of them (compare how both tables write the column)",
    ),
}


def unread_labels(
    unread: Mapping[str, tuple[Any, int]],
    hierarchies: Mapping[str, Any] | None,
    *,
    joined: str = "population",
) -> str:
    """The refusal for released values that cover no record of the ``joined`` table (``"population"`` or
    ``"public table"``) when read as text (``linkage.match``'s ``unread``): counting them as covering nobody
    would under-count their classes' matches. The examples are released values (public), never values of
    the joined table."""
    why, kind, counted, raw = _JOINED[joined]
    parts = []
    for column, (values, records) in unread.items():
        shown = ", ".join(repr(str(v)) for v in sorted(values, key=str)[:3])
        kinds = ["range", "set", "mask", "'*'", kind]
        kinds += ["label of its hierarchy"] if column in (hierarchies or {}) else []
        many = len(values) != 1
        parts.append(
            f"{len(values)} released value{'s' if many else ''} of '{column}' ({records:,} records, e.g. "
            f"{shown}) {'are' if many else 'is'} no {', '.join(kinds[:-1])} or {kinds[-1]}"
        )
    return (
        f"{why}: "
        + "; ".join(parts)
        + f". Read as text they cover nobody, which would under-count {counted}. If they are labels "
        "of generalisation hierarchies, pass the hierarchies the release was made with (--hierarchies DIR; "
        f"library: hierarchies=); if they are raw values, {raw}"
    )
