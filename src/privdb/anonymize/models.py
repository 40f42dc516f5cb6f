"""Privacy-model checks on any table: k-anonymity and l-diversity, and the one-pass ``check`` of k, l and t.

The table may be privdb's release or anyone else's: equivalence classes are rows with equal
quasi-identifier tuples, suppressed records (``*`` in every quasi-identifier) form no class and are counted
apart. The records are grouped once (``_classes.group``) and a sparse class × sensitive-value histogram
feeds every measure, so each check is a few ``bincount`` passes.

* k-anonymity (Samarati and Sweeney 1998; Sweeney 2002): achieved k is the smallest class.
* l-diversity (Machanavajjhala et al., ICDE 2006 / TKDD 2007): distinct (values per class), entropy
  (achieved l = exp of the smallest class entropy), recursive (c, l): with the class's counts sorted
  descending r₁ ≥ r₂ ≥ … ≥ r_m, r₁ < c·(r_l + … + r_m). Achieved c for an l is the smallest integer c.
* t-closeness: ``check`` reports the achieved t with the distances of ``distances``; the t-closeness
  entry points and (n, t)-closeness are in ``closeness``, the coverage of a release in ``coverage``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdb.anonymize._classes import Classes, FloatArray, HierarchyLike, IntArray, Pairs, group, histogram
from privdb.anonymize.distances import Sensitive, class_distances
from privdb.errors import InvalidParameter

__all__ = [
    "CheckResult",
    "check",
    "is_recursive_diverse",
    "k_anonymity",
    "l_diversity",
    "recursive_c",
    "recursive_l",
]


def _check_l(l: float, integer: bool = False) -> None:  # noqa: E741 (the field's notation)
    bad = isinstance(l, bool) or not isinstance(l, (int, float, np.integer, np.floating)) or not l >= 1
    if bad or (integer and float(l) != int(l)):
        kind = "a whole number" if integer else "a number"
        raise InvalidParameter(f"l must be {kind} of at least 1 (got {l!r}): e.g. l=2")


@dataclass(frozen=True)
class _Diversity:
    distinct: IntArray
    entropy: FloatArray
    r1: IntArray
    rank: IntArray  # pairs sorted by (class, count descending): rank within the class
    cnt: IntArray  # counts in that order
    cls: IntArray

    @classmethod
    def of(cls, pairs: Pairs, sizes: IntArray) -> _Diversity:
        n_cls = len(sizes)
        q = pairs.cnt / sizes[pairs.cls]
        entropy = -np.asarray(np.bincount(pairs.cls, q * np.log(q), n_cls), dtype=np.float64)
        order = np.lexsort((-pairs.cnt, pairs.cls))
        c, cnt = pairs.cls[order], pairs.cnt[order].astype(np.int64)
        distinct = np.bincount(c, minlength=n_cls).astype(np.int64)
        start = np.cumsum(distinct) - distinct
        rank = np.arange(len(c)) - start[c]
        return cls(distinct, entropy, cnt[start], rank, cnt, c)

    def c_for(self, l: int) -> FloatArray:  # noqa: E741
        """Per class, the smallest integer c with r₁ < c·(r_l + … + r_m); inf with fewer than l values."""
        tail = np.bincount(self.cls, np.where(self.rank >= l - 1, self.cnt, 0), len(self.r1))
        tail = tail.astype(np.int64)
        safe = np.maximum(tail, 1)
        return np.where(tail > 0, (self.r1 // safe + 1).astype(np.float64), math.inf)

    def l_for(self, c: float) -> IntArray:
        """Per class, the largest l with r₁ < c·(r_l + … + r_m) (0 if none): tails shrink with l, so the
        condition holds for a prefix of ranks and l is the length of that prefix."""
        csum = np.cumsum(self.cnt)
        start = np.cumsum(self.distinct) - self.distinct
        total = np.bincount(self.cls, self.cnt, len(self.r1)).astype(np.int64)
        before = csum - self.cnt - (csum[start] - self.cnt[start])[self.cls]  # r_1 + … + r_{rank}
        ok = self.r1[self.cls] < c * (total[self.cls] - before)
        return np.bincount(self.cls, ok, len(self.r1)).astype(np.int64)


def _finite(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class CheckResult:
    """What a table achieves. Per-class arrays (``class_sizes``, ``distinct``, ``entropy``, ``class_c``,
    ``class_t``) follow the class numbering of ``classes.ids``."""

    classes: Classes
    sensitive: str | None = None
    distinct: IntArray | None = None
    entropy: FloatArray | None = None
    recursive_l: int | None = None
    class_c: FloatArray | None = None
    class_t: FloatArray | None = None
    distance: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> int:
        return self.classes.k

    @property
    def class_sizes(self) -> IntArray:
        return self.classes.sizes

    @property
    def l(self) -> int | None:  # noqa: E743 (the field's notation)
        """Achieved distinct l."""
        return int(self.distinct.min()) if self.distinct is not None and len(self.distinct) else None

    @property
    def l_entropy(self) -> float | None:
        """Achieved entropy l: exp of the smallest class entropy."""
        return float(np.exp(self.entropy.min())) if self.entropy is not None and len(self.entropy) else None

    @property
    def recursive_c(self) -> float | None:
        """Smallest integer c making the table recursive (c, ``recursive_l``)-diverse (inf: no c does)."""
        return float(self.class_c.max()) if self.class_c is not None and len(self.class_c) else None

    @property
    def t(self) -> float | None:
        return float(self.class_t.max()) if self.class_t is not None and len(self.class_t) else None

    def to_dict(self) -> dict[str, Any]:
        """DESIGN.md's ``achieved`` block (l is distinct l) plus the details."""
        c = self.recursive_c
        return {
            "achieved": {"k": self.k, "l": self.l, "t": self.t},
            "l_entropy": self.l_entropy,
            "recursive": {"l": self.recursive_l, "c": None if c is None else _finite(c)},
            "distance": self.distance,
            "sensitive": self.sensitive,
            "records": self.classes.n,
            "classes": self.classes.n_classes,
            "suppressed": self.classes.n_suppressed,
            **self.extra,
        }


def check(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str | None = None,
    *,
    distance: str = "auto",
    hierarchy: HierarchyLike | None = None,
    recursive_l: int | None = None,
) -> CheckResult:
    """k, distinct / entropy / recursive l and t of ``table``, from one grouping of its records.

    ``distance`` (auto: hierarchical with a ``hierarchy`` of the sensitive attribute, ordered for numbers,
    else equal) chooses the t-closeness distance. ``recursive_l`` (default: the achieved distinct l) is the l
    for which the smallest c of recursive (c, l)-diversity is reported.
    """
    classes = group(table, qi)
    if sensitive is None:
        return CheckResult(classes)
    if sensitive in qi:
        raise InvalidParameter(f"'{sensitive}' is both sensitive and a quasi-identifier: choose one role")
    sens = Sensitive.encode(table, sensitive, distance, hierarchy)
    pairs = histogram(classes.ids, sens.codes, classes.n_classes, sens.m)
    div = _Diversity.of(pairs, classes.sizes)
    rl = recursive_l if recursive_l is not None else max(int(div.distinct.min()), 1) if len(div.r1) else 1
    _check_l(rl, integer=True)
    return CheckResult(
        classes,
        sensitive,
        div.distinct,
        div.entropy,
        int(rl),
        div.c_for(int(rl)),
        class_distances(pairs, classes.sizes.astype(np.float64), sens),
        sens.distance,
    )


def k_anonymity(table: pd.DataFrame, qi: Sequence[str]) -> int:
    """Achieved k: the size of the smallest equivalence class (suppressed records excluded)."""
    return group(table, qi).k


def l_diversity(table: pd.DataFrame, qi: Sequence[str], sensitive: str, kind: str = "distinct") -> float:
    """Achieved l: ``distinct`` (fewest values in a class) or ``entropy`` (exp of the smallest entropy)."""
    if kind not in ("distinct", "entropy"):
        raise InvalidParameter(f"unknown l-diversity '{kind}': use distinct or entropy (or recursive_c)")
    res = check(table, qi, sensitive, distance="equal")
    value = res.l if kind == "distinct" else res.l_entropy
    return float(value) if value is not None else 0.0


def recursive_c(table: pd.DataFrame, qi: Sequence[str], sensitive: str, l: int) -> float:  # noqa: E741
    """Smallest integer c such that the table is recursive (c, l)-diverse (inf if a class has < l values)."""
    _check_l(l, integer=True)
    c = check(table, qi, sensitive, distance="equal", recursive_l=int(l)).recursive_c
    return c if c is not None else 1.0


def recursive_l(table: pd.DataFrame, qi: Sequence[str], sensitive: str, c: float) -> int:
    """Largest l such that the table is recursive (c, l)-diverse (0 if none)."""
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
        raise InvalidParameter(f"c must be a positive number (got {c!r}): e.g. c=3")
    classes = group(table, qi)
    sens = Sensitive.encode(table, sensitive, "equal")
    div = _Diversity.of(histogram(classes.ids, sens.codes, classes.n_classes, sens.m), classes.sizes)
    return int(div.l_for(float(c)).min()) if len(div.r1) else 0


def is_recursive_diverse(
    table: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    c: float,
    l: int,  # noqa: E741
) -> bool:
    """Whether every class has r₁ < c·(r_l + … + r_m) (Machanavajjhala et al. 2007, Definition 4.1)."""
    _check_l(l, integer=True)
    if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
        raise InvalidParameter(f"c must be a positive number (got {c!r}): e.g. c=3")
    return recursive_l(table, qi, sensitive, c) >= l
