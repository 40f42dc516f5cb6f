"""Microaggregation: a quasi-identifier published as one value per equivalence class (ARX's
``MicroAggregationFunction``; Domingo-Ferrer and Mateo-Sanz 2002 for the idea).

The classes are made by the other quasi-identifiers (generalised by the lattice or heuristic search, or
partitioned by Mondrian); the aggregated column then replaces each record's value by its class's

* ``mean`` (numbers): the arithmetic mean;
* ``median`` (numbers): the middle value, the mean of the two middle values for an even count;
* ``mode`` (any column): the most frequent value, the smallest of the tied ones.

Every record of a class gets the same value, so the classes are unchanged (or, where two classes get the
same aggregate, merged): k-anonymity and the l/t condition still hold. Suppressed records stay ``*``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.release import GeneralizedColumn
from privdb.errors import InvalidParameter, UnknownColumn

__all__ = ["FUNCTIONS", "aggregate", "checked"]

FUNCTIONS = ("mean", "median", "mode")


def checked(df: pd.DataFrame, qi: Sequence[str], spec: Mapping[str, str] | None) -> dict[str, str]:
    """``spec`` (column → function) validated: quasi-identifiers only, known functions, numbers for
    mean/median, and at least one quasi-identifier left to form the classes."""
    out = dict(spec or {})
    for column, how in out.items():
        if column not in qi:
            raise UnknownColumn(
                f"microaggregate names '{column}', which is not a quasi-identifier ({', '.join(qi)}): "
                "microaggregation replaces a quasi-identifier by its class's value"
            )
        if how not in FUNCTIONS:
            raise InvalidParameter(
                f"unknown microaggregation '{how}' for '{column}': use mean, median or mode"
            )
        col = df[column]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        if how != "mode" and not numeric:
            raise InvalidParameter(f"'{column}' is not numeric: its {how} is undefined; use mode")
        if how != "mode" and col.isna().any():
            raise InvalidParameter(f"'{column}' has missing values: its {how} is undefined; use mode")
    if out and len(out) == len(qi):
        raise InvalidParameter(
            "every quasi-identifier is microaggregated: leave at least one to be generalised, which forms "
            "the classes"
        )
    return out


def aggregate(column: pd.Series, ids: NDArray[np.int64], how: str) -> GeneralizedColumn:
    """The column as its class aggregates: record i reads the aggregate of class ``ids[i]`` (−1: none)."""
    n_cls = int(ids.max()) + 1 if len(ids) else 0
    keep = ids >= 0
    values = column.to_numpy()[keep]
    cls = ids[keep]
    labels: NDArray[Any]
    if how == "mean":
        sums = np.bincount(cls, weights=values.astype(np.float64), minlength=n_cls)
        labels = sums / np.maximum(np.bincount(cls, minlength=n_cls), 1)
    elif how == "median":
        labels = pd.Series(values.astype(np.float64)).groupby(cls).median().reindex(range(n_cls)).to_numpy()
    else:
        labels = _mode(values, cls, n_cls)
    obj = np.empty(max(n_cls, 1), dtype=object)
    obj[:n_cls] = [_plain(x) for x in labels]
    return GeneralizedColumn(np.where(keep, ids, 0).astype(np.int64), obj)


def _mode(values: NDArray[np.generic], cls: NDArray[np.int64], n_cls: int) -> NDArray[np.object_]:
    """Per class the most frequent value, ties to the smallest (values sorted by pandas' order)."""
    codes, uniq = pd.factorize(pd.Series(values), sort=True, use_na_sentinel=False)
    m = max(len(uniq), 1)
    pairs, counts = np.unique(cls * m + codes, return_counts=True)
    c, v = pairs // m, pairs % m
    order = np.lexsort((v, -counts, c))  # by class, then count descending, then value ascending
    first = order[np.r_[True, c[order][1:] != c[order][:-1]]] if len(order) else order
    out = np.empty(n_cls, dtype=object)
    out[c[first]] = np.asarray(uniq, dtype=object)[v[first]]
    return out


def _plain(x: object) -> object:
    """A numpy scalar as a plain Python value (integral floats stay floats: a mean is a float)."""
    return x.item() if isinstance(x, np.generic) else x
