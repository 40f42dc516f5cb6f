"""The per-class sensitive-value condition every class of a release must meet, as counts over value codes.

Both search algorithms enforce it on each candidate class, Mondrian on every child of a cut (LeFevre et al.
2006, section 5) and the lattice on every class of a node, so it lives apart from both and imports neither:
distinct, entropy and recursive (c, l)-diversity (Machanavajjhala et al. 2007) and t-closeness with the
Earth Mover's Distance, ordered for numbers or hierarchical over a taxonomy given as ``t_hierarchy``
(Li et al. 2007; ARX's ``HierarchicalDistanceTCloseness``), basic and enhanced β-likeness (Cao and Karras
2012) and δ-disclosure privacy (Brickell and Shmatikov 2008, natural log), the last three against the whole
table's distribution as ``criteria.evaluate`` checks them. Checking a release after the fact, with every
distance, is ``models.check``'s work; the other models, ``criteria.evaluate``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import HierarchyLike
from privdb.anonymize.distances import Sensitive, refuse_numbers_as_text, row_distances
from privdb.errors import InvalidParameter

__all__ = ["SensitiveCondition"]

_EPS = 1e-12


@dataclass(frozen=True)
class SensitiveCondition:
    """l-diversity and/or t-closeness of one sensitive attribute, over per-record codes ``codes``."""

    codes: NDArray[np.int64]
    m: int
    prior: NDArray[np.float64]
    l: float | None = None  # noqa: E741 (the field's notation)
    diversity: str = "distinct"
    c: float = 1.0
    t: float | None = None
    ordered: bool = False
    beta: float | None = None
    enhanced_beta: float | None = None
    delta_disclosure: float | None = None
    tree: Any = None  # the taxonomy of the hierarchical distance (codes are then its leaves)

    @classmethod
    def build(
        cls,
        column: pd.Series,
        *,
        l: float | None = None,  # noqa: E741
        diversity: str = "distinct",
        c: float | None = None,
        t: float | None = None,
        beta: float | None = None,
        enhanced_beta: float | None = None,
        delta_disclosure: float | None = None,
        t_hierarchy: HierarchyLike | None = None,
        t_distance: str = "auto",
    ) -> SensitiveCondition:
        """``t_distance``: auto (hierarchical with ``t_hierarchy``, ordered for numbers, else equal),
        equal, ordered (numbers by value, text in sorted order, as ARX orders a string attribute) or
        hierarchical (needs ``t_hierarchy``)."""
        if t_distance not in ("auto", "equal", "ordered", "hierarchical"):
            raise InvalidParameter(
                f"unknown t-closeness distance '{t_distance}': use auto, equal, ordered or hierarchical"
            )
        if (t_distance == "hierarchical") != (t_hierarchy is not None) and t_distance != "auto":
            raise InvalidParameter(
                "the hierarchical distance is the one over t_hierarchy (the sensitive attribute's taxonomy): "
                "give both, or another distance without t_hierarchy"
            )
        if diversity not in ("distinct", "entropy", "grassberger", "recursive"):
            raise InvalidParameter(
                f"unknown l-diversity '{diversity}': use distinct, entropy, grassberger or recursive (with c)"
            )
        if l is not None and l < 1:
            raise InvalidParameter(f"l must be at least 1 (got {l:g})")
        if diversity == "recursive" and l is not None and (c is None or c <= 0):
            raise InvalidParameter("recursive (c, l)-diversity needs c > 0, e.g. c=3")
        if t is not None and not 0 <= t <= 1:
            raise InvalidParameter(f"t must lie in 0..1 (got {t:g})")
        if column.isna().any():
            raise InvalidParameter(
                f"sensitive attribute '{column.name}' has {int(column.isna().sum())} missing value(s): "
                "fill or drop them first"
            )
        numeric = bool(pd.api.types.is_numeric_dtype(column)) and not pd.api.types.is_bool_dtype(column)
        ordered = t_distance == "ordered" or (t_distance == "auto" and numeric)
        if ordered and not numeric:
            refuse_numbers_as_text(column, str(column.name))
        if t_hierarchy is not None:  # codes are the taxonomy's leaves, in its order
            sens = Sensitive.encode(column.to_frame(), str(column.name), "hierarchical", t_hierarchy)
            return cls(
                sens.codes, sens.m, sens.p, l, diversity, float(c or 1.0), t, False,
                beta, enhanced_beta, delta_disclosure, sens.tree,
            )  # fmt: skip
        codes, uniq = pd.factorize(column, sort=True)
        m = max(len(uniq), 1)
        prior = np.bincount(codes, minlength=m) / max(len(codes), 1)
        return cls(
            codes.astype(np.int64), m, prior, l, diversity, float(c or 1.0), t, ordered,
            beta, enhanced_beta, delta_disclosure,
        )  # fmt: skip

    @property
    def monotone_with_suppression(self) -> bool:
        """Whether a node failing the condition (with suppression) makes every specialisation fail: only
        distinct l. β-likeness and δ-disclosure are not (ARX: monotone with generalisation only, δ not even
        that), so for them only the k part prunes."""
        likeness = (self.beta, self.enhanced_beta, self.delta_disclosure)
        plain = self.t is None and all(x is None for x in likeness)
        return plain and (self.l is None or self.diversity == "distinct")

    def histogram(
        self, groups: NDArray[np.int64], n_groups: int, rows: NDArray[np.int64] | None = None
    ) -> NDArray[np.int64]:
        """Counts of sensitive values per group; ``groups[i]`` is the group of record ``rows[i]``."""
        s = self.codes if rows is None else self.codes[rows]
        flat = np.bincount(groups * self.m + s, minlength=n_groups * self.m)
        return flat.reshape(n_groups, self.m)

    def ok(self, hist: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which classes (rows of ``hist``) satisfy every condition."""
        good = np.ones(len(hist), dtype=bool)
        size = hist.sum(axis=1)
        if self.l is not None:
            if self.diversity == "distinct":
                good &= (hist > 0).sum(axis=1) >= self.l
            elif self.diversity == "entropy":
                q = hist / np.maximum(size, 1)[:, None]
                with np.errstate(divide="ignore", invalid="ignore"):
                    ent = -np.where(q > 0, q * np.log(q), 0.0).sum(axis=1)
                good &= ent >= np.log(self.l) - _EPS
            elif self.diversity == "grassberger":
                good &= grassberger_diverse(hist, self.l)
            else:
                li = int(self.l)
                r = -np.sort(-hist, axis=1)
                tail = r[:, li - 1 :].sum(axis=1) if li <= self.m else np.zeros(len(hist))
                good &= (r[:, 0] < self.c * tail) & ((hist > 0).sum(axis=1) >= li)
        if self.t is not None:
            good &= self.emd(hist) <= self.t + _EPS
        if self.beta is not None or self.enhanced_beta is not None or self.delta_disclosure is not None:
            good &= self._likeness(hist)
        return good

    def _likeness(self, hist: NDArray[np.int64]) -> NDArray[np.bool_]:
        """β-likeness and δ-disclosure over the values each class holds (absent values are not checked)."""
        q = hist / np.maximum(hist.sum(axis=1), 1)[:, None]
        p = np.maximum(self.prior, _EPS)[None, :]
        held = hist > 0
        gain = (q - p) / p
        good = np.ones(len(hist), dtype=bool)
        if self.beta is not None:
            good &= ~(held & (gain > self.beta)).any(axis=1)
        if self.enhanced_beta is not None:
            bound = np.minimum(self.enhanced_beta, -np.log(p))
            good &= ~(held & (gain > bound)).any(axis=1)
        if self.delta_disclosure is not None:
            with np.errstate(divide="ignore"):
                ratio = np.abs(np.log(np.where(held, q, 1.0) / p))
            good &= ~(held & (ratio >= self.delta_disclosure)).any(axis=1)
        return good

    def emd(self, hist: NDArray[np.int64]) -> NDArray[np.float64]:
        """Earth Mover's Distance of each class's distribution to the table's."""
        q = hist / np.maximum(hist.sum(axis=1), 1)[:, None]
        if self.tree is not None:
            return row_distances(q, self.prior[None, :], "hierarchical", self.tree)
        diff = q - self.prior[None, :]
        if self.ordered and self.m > 1:
            return np.asarray(np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / (self.m - 1))
        return np.asarray(0.5 * np.abs(diff).sum(axis=1))


def _grassberger(top: int) -> NDArray[np.float64]:
    """ARX's Grassberger term G(n) for n = 0..top (G(0) = 0, unused): for n ≤ 100, with m = ⌊n/2⌋,
    −γ − ln 2 + Σ_{k≤m} 2/(2k − 1); above, n made even, ln n + u(1/24 − u(7/960 − u·31/8064)) with
    u = 1/(n/2)²."""
    n = np.arange(top + 1)
    m = n // 2
    small = (
        -np.euler_gamma
        - np.log(2.0)
        + np.concatenate([[0.0], np.cumsum(2.0 / (2.0 * np.arange(1, m[-1] + 1) - 1))])[m]
    )
    even = (n - n % 2).astype(np.float64)
    u = 1.0 / np.maximum(m.astype(np.float64), 1.0) ** 2
    with np.errstate(divide="ignore"):
        big = np.log(np.maximum(even, 1.0)) + u * (1 / 24 - u * (7 / 960 - u * 31 / 8064))
    out = np.where(n <= 100, small, big)
    out[0] = 0.0
    return np.asarray(out, dtype=np.float64)


def grassberger_diverse(hist: NDArray[np.int64], l: float) -> NDArray[np.bool_]:  # noqa: E741
    """Entropy l-diversity with Grassberger's estimator, as ARX checks it (``EntropyLDiversity`` with
    ``GRASSBERGER``): at least ⌈l⌉ distinct values and Σ f·G(f) ≤ N·(G(N) − ln l) over a class's counts f."""
    size = hist.sum(axis=1)
    g = _grassberger(int(size.max(initial=1)))
    lhs = (hist * g[hist]).sum(axis=1)
    return np.asarray(((hist > 0).sum(axis=1) >= np.ceil(l)) & (lhs <= size * (g[size] - np.log(l)) + _EPS))
