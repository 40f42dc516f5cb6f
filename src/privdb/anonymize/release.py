"""Formatting a generalisation as a release (DESIGN.md, "Anonymised output").

``build_release`` keeps the input's columns and row order (what the report and checks compare record by
record); ``publishable`` is what is written: only the quasi-identifiers, the sensitive column and the
columns the owner named (ARX's rule: an attribute nobody classified is identifying, and removed), in a
shuffled row order (the input's order can itself identify: a file sorted by id or by admission time). Each
quasi-identifier arrives as per-record integer
codes into an array of labels (``lo-hi``, a hierarchy label, values joined by ``|``), so writing a column is
one ``take``. Suppressed records get ``*`` in every quasi-identifier and no class: they are never counted as
an equivalence class (ARX exports them as one ``*`` class, which other checkers then count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import combine
from privdb.anonymize.hierarchy import Hierarchy
from privdb.mechanisms.randomness import RandomSource, default_source

__all__ = ["Anonymized", "GeneralizedColumn", "build_release", "class_ids", "publishable"]

STAR = "*"


@dataclass(frozen=True)
class GeneralizedColumn:
    """One quasi-identifier after generalisation: record ``i`` reads ``labels[codes[i]]``."""

    codes: NDArray[np.int64]
    labels: NDArray[np.object_]


@dataclass(frozen=True)
class Anonymized:
    """An anonymised table and how it was made.

    ``class_ids[i]`` numbers record i's equivalence class (records with equal released quasi-identifiers),
    −1 for suppressed records. ``ncp`` is the algorithm's information loss (see its docstring), in 0..1;
    ``ncp_by_column`` the full-domain search's loss per quasi-identifier (empty for Mondrian).
    """

    table: pd.DataFrame
    qi: tuple[str, ...]
    class_ids: NDArray[np.int64]
    suppressed: NDArray[np.bool_]
    suppression_reason: str | None
    algorithm: str
    k: int
    ncp: float
    seconds: float
    partitions: int
    node: dict[str, int] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    columns: tuple[GeneralizedColumn, ...] = ()
    hierarchies: Mapping[str, Hierarchy] = field(default_factory=dict)  # those the labels came from
    ncp_by_column: dict[str, float] = field(default_factory=dict)

    def coded_table(self) -> pd.DataFrame:
        """``table`` with each quasi-identifier as a pandas categorical of the same values (categories
        sorted, as ``astype("category")`` makes them), built from the codes the algorithm released rather
        than by hashing a million strings again: what the report groups and the CLI writes."""
        if len(self.columns) != len(self.qi):
            return self.table
        out = self.table.copy(deep=False)
        for name, col in zip(self.qi, self.columns, strict=True):
            cat = _categorical(col, self.suppressed)
            out[name] = out[name].astype("category") if cat is None else pd.Series(cat, index=out.index)
        return out

    @property
    def n_suppressed(self) -> int:
        return int(self.suppressed.sum())

    @property
    def n_classes(self) -> int:
        return int(self.class_ids.max()) + 1 if len(self.class_ids) else 0

    def class_sizes(self) -> NDArray[np.int64]:
        """Sizes of the equivalence classes (suppressed records excluded)."""
        return np.bincount(self.class_ids[self.class_ids >= 0], minlength=self.n_classes).astype(np.int64)


def _categorical(col: GeneralizedColumn, suppressed: NDArray[np.bool_]) -> pd.Categorical | None:
    """The column's labels per record (``*`` where suppressed) as a categorical with sorted categories, as
    ``astype("category")`` would make it; None when a label is not text (then that is left to pandas)."""
    codes = np.where(suppressed, len(col.labels), col.codes)
    used = np.flatnonzero(np.bincount(codes, minlength=len(col.labels) + 1))
    values = np.append(np.asarray(col.labels, dtype=object), STAR)[used]
    if not all(isinstance(v, str) for v in values):
        return None
    # sorted as np.unique sorts text (by code point: Arrow's UTF-8 byte order is the same), in C, not by
    # Python comparisons of tens of thousands of labels
    remap, categories = pd.Index(values).factorize(sort=True)
    lookup = np.zeros(len(col.labels) + 1, dtype=np.int64)
    lookup[used] = remap
    return pd.Categorical.from_codes(lookup[codes], categories=categories)


def class_ids(columns: Sequence[GeneralizedColumn], suppressed: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Number the distinct combinations of released codes, in order of first appearance; −1 if suppressed."""
    n = len(suppressed)
    key = combine([col.codes for col in columns], [len(col.labels) for col in columns])
    out = np.full(n, -1, dtype=np.int64)
    keep = ~suppressed
    out[keep] = pd.factorize(key[keep])[0]
    return out


def build_release(
    df: pd.DataFrame, qi: Sequence[str], columns: Sequence[GeneralizedColumn], suppressed: NDArray[np.bool_]
) -> pd.DataFrame:
    """The input with each quasi-identifier replaced by its labels and ``*`` on suppressed records."""
    out = df.copy(deep=False)  # the other columns are shared, not copied (copy-on-write keeps df as it is)
    for name, col in zip(qi, columns, strict=True):
        labels = np.asarray(col.labels, dtype=object)
        values = np.take(labels, col.codes)
        values[suppressed] = STAR
        out[name] = pd.Series(values, index=df.index, dtype=object)
    return out


def publishable(
    table: pd.DataFrame, written: Sequence[str], source: RandomSource | None = None
) -> pd.DataFrame:
    """The columns ``written`` of a release (in the table's column order), its rows in a uniformly random
    order: each row gets 64 random bits from ``source`` (default: the CSPRNG) and the rows are sorted by
    them (a tie, of probability below n²/2⁶⁵, keeps the input order of the two rows)."""
    wanted = set(written)
    columns = [c for c in table.columns if c in wanted]
    keys = (source or default_source()).words(len(table))
    order = np.argsort(keys)  # the fast unstable sort: with no tie it is the stable order
    ranked = keys[order]
    if len(keys) > 1 and (ranked[1:] == ranked[:-1]).any():
        order = np.argsort(keys, kind="stable")
    return table.loc[:, columns].iloc[order].reset_index(drop=True)
