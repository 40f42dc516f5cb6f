"""A protocol's domain: the values people answer with (labels), and the codes ``0 … d−1`` it computes on.

People and reports speak labels (``"yes"``, ``"Paris"``, ``42``); the randomisers and estimators compute on
codes, a label's position in the domain. A domain given as a size ``d`` is its own codes: its labels are
``0 … d−1``, and encoding is the validation integer-code users always had (vectorised, no copy). Labelled
domains encode through a :class:`pandas.Index` lookup, vectorised as well.

A value outside the domain is refused with a message that counts the bad entries and never shows one: on the
client side they are people's true answers.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks

__all__ = ["Domain"]


class Domain:
    """The ordered, distinct values of a protocol's domain; ``Domain(5)`` is the codes ``0 … 4``."""

    def __init__(self, values: int | Sequence[Hashable], *, limit: int = 2**31 - 1) -> None:
        if isinstance(values, int | np.integer) and not isinstance(values, bool):
            self.size = _checks.domain(values, limit=limit)
            self.labels: tuple[Hashable, ...] = tuple(range(self.size))
            self.coded = True
            return
        if isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray | pd.Index):
            raise InvalidParameter(
                "a domain is a size d (an integer) or a list of the values people answer with, e.g. "
                "['no', 'yes']"
            )
        labels = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
        self.size = _checks.domain(len(labels), limit=limit)
        try:
            distinct = len(set(labels)) == len(labels)
        except TypeError:
            raise InvalidParameter(
                "domain values must be hashable: strings, numbers or other scalars"
            ) from None
        if not distinct:
            raise InvalidParameter("domain values must be distinct; a value listed twice cannot be estimated")
        self.labels = labels
        self.coded = labels == tuple(range(self.size))
        self._index = pd.Index(list(labels), dtype="object")
        self._array = np.empty(self.size, dtype=object)
        self._array[:] = labels

    @classmethod
    def of(cls, d: int | None, domain: int | Sequence[Hashable] | Domain | None) -> Domain:
        """A protocol's domain from its ``d=`` (a size) or ``domain=`` (labels or a size), given once."""
        if isinstance(domain, Domain):
            found = domain
        elif domain is not None:
            found = cls(domain)
        elif d is not None:
            found = cls(d)
        else:
            raise InvalidParameter("give the domain: d=SIZE (values 0 … d-1) or domain=[labels]")
        if d is not None and domain is not None and _size(d) != found.size:
            raise InvalidParameter(
                f"d = {d} disagrees with the domain's {found.size} values; give one of them"
            )
        return found

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.labels)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and other.labels == self.labels

    def __hash__(self) -> int:
        return hash(self.labels)

    def __repr__(self) -> str:
        shown = ", ".join(repr(v) for v in self.labels[:5]) + (", …" if self.size > 5 else "")
        return f"Domain({self.size} values: {shown})"

    def codes(self, values: ArrayLike | Sequence[Any], *, what: str = "values") -> NDArray[np.int64]:
        """The codes of a batch of labels (a scalar is one person's), refused without echoing any."""
        if self.coded:
            return _checks.values(values, self.size, what=what)
        batch: Any = values
        if np.ndim(values) == 0:  # one person's answer (a 0-d array too)
            batch = [values.item() if isinstance(values, np.ndarray | np.generic) else values]
        try:
            found = self._index.get_indexer(pd.Index(batch, dtype="object"))
        except (TypeError, ValueError):
            found = None
        if found is None or found.ndim != 1:
            raise InvalidParameter(f"{what} must be a flat list of the domain's values (one per person)")
        if found.size == 0:
            raise InvalidParameter(f"{what} is empty; pass at least one entry")
        outside = int((found < 0).sum())
        if outside:  # counted, never shown: on the client side they are true answers
            raise InvalidParameter(
                f"{outside} of {found.size} {what} are not values of the domain ({self.describe()}); "
                "map them onto it before randomising"
            )
        return found.astype(np.int64, copy=False)

    def index(self, label: Hashable) -> int:
        """The code of one label (e.g. to read its estimate)."""
        return int(self.codes([label], what="the value asked for")[0])

    def labels_of(self, codes: ArrayLike) -> NDArray[Any]:
        """The labels of codes: the codes themselves for a coded domain, else an object array of labels."""
        arr = np.asarray(codes)
        if self.coded:
            return arr
        out: NDArray[Any] = self._array[arr.astype(np.int64)]
        return out

    def describe(self, most: int = 8) -> str:
        """The domain in a message: its first values, or the range of codes."""
        if self.coded:
            return f"0 … {self.size - 1}"
        shown = ", ".join(str(v) for v in self.labels[:most])
        return shown + (f", … ({self.size} values)" if self.size > most else "")


def _size(d: object) -> int:
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise InvalidParameter(f"the domain size d must be an integer, got {type(d).__name__}")
    return int(d)
