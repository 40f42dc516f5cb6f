"""Validation shared by the local protocols: every bad input becomes an ``invalid_parameter`` error."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _validate

MAX_EPSILON = 50.0  # e^50 ≈ 5e21: beyond it a local protocol tells the truth with probability 1 − 2e-22


def epsilon(value: object) -> float:
    """A local ε: finite, > 0 and at most ``MAX_EPSILON``."""
    eps = _validate.positive("epsilon", value)
    if eps > MAX_EPSILON:
        raise InvalidParameter(
            f"epsilon {eps:g} is above {MAX_EPSILON:g}: a local report would be the true answer in all but"
            f" e^-{MAX_EPSILON:g} of cases; pass a smaller epsilon (local surveys typically use 0.5 to 4)"
        )
    return eps


def domain(d: object, *, limit: int = 2**31 - 1) -> int:
    """A domain size: an integer from 2 to ``limit``."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise InvalidParameter(f"the domain size d must be an integer, got {type(d).__name__}")
    size = int(d)
    if size < 2:
        raise InvalidParameter(
            f"the domain must hold at least 2 values, got d = {size}; an empty or one-value domain has"
            " nothing to estimate"
        )
    if size > limit:
        raise InvalidParameter(f"the domain size d = {size} is above the supported {limit}")
    return size


def values(data: ArrayLike, d: int, *, what: str = "values") -> NDArray[np.int64]:
    """A non-empty 1-d array of integers in ``[0, d)``; the message names the first bad entry's kind."""
    arr = np.atleast_1d(np.asarray(data))
    if arr.ndim != 1:
        raise InvalidParameter(f"{what} must be a 1-d array (one entry per person), got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidParameter(f"{what} is empty; pass at least one entry")
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameter(
            f"{what} must be integers in [0, {d}) (encode categories as 0..d-1), got dtype {arr.dtype}"
        )
    outside = (arr < 0) | (arr >= d)
    if outside.any():  # the message counts bad entries and never shows one: they may be private answers
        raise InvalidParameter(
            f"{what} must lie in the domain [0, {d}), but {int(outside.sum())} entries lie outside it; encode"
            " categories as 0..d-1 and pass the full domain size d"
        )
    return arr.astype(np.int64, copy=False)
