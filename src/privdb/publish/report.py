"""The owner's utility report of a release: marginal distances and what sampling and suppression removed.

Every 1-, 2- and 3-way marginal of the quasi-identifiers is compared by total-variation distance
(½ Σ |p − q| over the cells) two ways:

* ``marginals_tvd``: against the original's raw values, each released label spread uniformly over the
  hierarchy's leaves under it (independently per column): what a user who reads the release as a
  distribution over raw values gets wrong, generalisation included.
* ``marginals_tvd_at_node``: against the original generalised to the released node: what sampling and
  suppression alone distort.

What generalisation coarsens per cell is ``ncp``, the normalised
certainty penalty of the released records against their originals (``privdb.anonymize.utility.ncp``, the
hierarchy's leaves; ``None`` when nothing is released). With the ``classification`` score, ``classification``
says how well a majority vote within each released class predicts the target column (which is not
released) against always predicting the released records' most frequent target value. The report reads the
private table exactly: it is for the owner deciding whether to publish, not part of the DP release.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import combine
from privdb.anonymize.hierarchy import Hierarchy, raw_strings
from privdb.anonymize.utility import ncp
from privdb.publish.safepub import Published
from privdb.publish.safepub_search import PublicHierarchy

__all__ = [
    "majority_accuracy",
    "marginal_distances",
    "publication_report",
    "raw_marginal_distances",
    "report_png",
]

WAYS = (1, 2, 3)
MAX_CELLS = 4_000_000  # a raw marginal with more cells is left out (None)


def marginal_distances(
    original: pd.DataFrame, released: pd.DataFrame, columns: Sequence[str], ways: Sequence[int] = WAYS
) -> dict[str, dict[str, Any]]:
    """Per way w: the total-variation distance of every w-way marginal (``"a,b": tvd``), their mean and max.
    An empty release is at distance 1 from any non-empty original."""
    both = pd.concat([original[list(columns)], released[list(columns)]], ignore_index=True).astype(str)
    codes = {c: pd.factorize(both[c])[0].astype(np.int64) for c in columns}
    n_orig = len(original)
    out: dict[str, dict[str, Any]] = {}
    for w in ways:
        per: dict[str, float] = {}
        for combo in combinations(columns, w):
            key = combine([codes[c] for c in combo], [int(codes[c].max(initial=0)) + 1 for c in combo])
            cells, inv = np.unique(key, return_inverse=True)
            p = np.bincount(inv[:n_orig], minlength=len(cells)).astype(np.float64)
            q = np.bincount(inv[n_orig:], minlength=len(cells)).astype(np.float64)
            if p.sum() == 0 or q.sum() == 0:
                per[",".join(combo)] = 1.0 if p.sum() != q.sum() else 0.0
                continue
            per[",".join(combo)] = float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
        if per:
            vals = list(per.values())
            out[str(w)] = {"mean": float(np.mean(vals)), "max": float(max(vals)), "marginals": per}
    return out


def _spread(hierarchy: Hierarchy, level: int, labels: NDArray[np.object_]) -> NDArray[np.float64]:
    """Per released label, the uniform distribution over the hierarchy's leaves under it; the last column
    stands for values the hierarchy does not list (which are ``*`` below the top level)."""
    dom = np.asarray(hierarchy.domain)
    under = np.asarray(PublicHierarchy(hierarchy).labels(dom, level), dtype=object).astype(str)
    out = np.zeros((len(labels), len(dom) + 1))
    for i, label in enumerate(np.asarray(labels, dtype=object).astype(str)):
        leaves = under == label
        if leaves.any():
            out[i, :-1] = leaves / leaves.sum()
        else:
            out[i, -1] = 1.0
    return out


def raw_marginal_distances(
    original: pd.DataFrame,
    published: Published,
    hierarchies: Mapping[str, Hierarchy],
    ways: Sequence[int] = WAYS,
) -> dict[str, dict[str, Any]]:
    """``marginals_tvd`` (module doc): per way, every marginal's distance, their mean and max."""
    qi = list(published.qi)
    codes, sizes = {}, {}
    for c in qi:
        dom = pd.Index(raw_strings(np.asarray(hierarchies[c].domain)))
        idx = dom.get_indexer(pd.Index(raw_strings(original[c].to_numpy())))
        codes[c] = np.where(idx < 0, len(dom), idx).astype(np.int64)
        sizes[c] = len(dom) + 1
    out: dict[str, dict[str, Any]] = {}
    for w in ways:
        per: dict[str, float | None] = {}
        for combo in combinations(qi, w):
            shape = tuple(sizes[c] for c in combo)
            if math.prod(shape) > MAX_CELLS:
                per[",".join(combo)] = None
                continue
            flat = np.ravel_multi_index(tuple(codes[c] for c in combo), shape)
            p = np.bincount(flat, minlength=math.prod(shape)).astype(np.float64)
            if len(published.table) == 0 or p.sum() == 0:
                per[",".join(combo)] = 1.0 if p.sum() != len(published.table) else 0.0
                continue
            cells = published.table.groupby(list(combo), sort=False).size()
            index = cells.index.to_frame(index=False)
            factors = [
                _spread(hierarchies[c], published.node[c], index[c].to_numpy(dtype=object)) for c in combo
            ]
            letters = "abc"[:w]
            spec = "t," + ",".join(f"t{x}" for x in letters) + "->" + letters
            q = np.einsum(spec, cells.to_numpy(dtype=np.float64), *factors).ravel()
            per[",".join(combo)] = float(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
        known = [v for v in per.values() if v is not None]
        if per:
            out[str(w)] = {
                "mean": float(np.mean(known)) if known else None,
                "max": float(max(known)) if known else None,
                "marginals": per,
            }
    return out


def majority_accuracy(released: pd.DataFrame, target: pd.Series) -> dict[str, Any]:
    """For the released records (``released``'s rows, ``target`` their target values in the same order): the
    share a majority vote within their class predicts right, and the share of the most frequent value."""
    n = len(released)
    if n == 0:
        return {"released_records": 0, "majority_in_class": None, "majority_overall": None}
    labels = pd.Series(target.to_numpy(dtype=object)).astype(str)
    classes = released.reset_index(drop=True).astype(str).agg("\x1f".join, axis=1)
    counts = pd.crosstab(classes, labels)
    return {
        "released_records": n,
        "majority_in_class": float(counts.max(axis=1).sum()) / n,
        "majority_overall": float(labels.value_counts().iloc[0]) / n,
    }


def publication_report(
    original: pd.DataFrame, published: Published, hierarchies: Mapping[str, Hierarchy]
) -> dict[str, Any]:
    """The JSON report of a SafePub release (module doc)."""
    qi = list(published.qi)
    gen = pd.DataFrame(
        {
            c: PublicHierarchy(hierarchies[c]).generalize(
                original[c].to_numpy(dtype=object), published.node[c]
            )
            for c in qi
        }
    )
    n = len(original)
    n_sampled = int(published.sampled.sum())
    n_kept = int(published.kept.sum())
    p = published.params
    per_column = (
        ncp(original.loc[published.kept, qi].reset_index(drop=True), published.table, qi, hierarchies)
        if n_kept
        else None
    )
    return {
        "algorithm": "safepub",
        "privacy": {
            "epsilon": published.epsilon,
            "delta": p.delta,
            "epsilon_anon": p.epsilon_anon,
            "epsilon_search": published.epsilon_search,
            "beta": p.beta,
            "k": p.k,
        },
        "search": {
            "kind": published.search,
            "metric": published.metric,
            "target": published.target,
            "steps": published.steps,
            "pivots": published.pivots,
        },
        "classification": None
        if published.target is None
        else {
            "target": published.target,
            **majority_accuracy(published.table, original.loc[published.kept, published.target]),
        },
        "node": published.node,
        "rows": {"input": n, "sampled": n_sampled, "released": n_kept},
        "dropped_by_sampling": (n - n_sampled) / n if n else 0.0,
        "suppressed": (n_sampled - n_kept) / n if n else 0.0,
        "removed": (n - n_kept) / n if n else 0.0,
        "ncp": None if per_column is None else float(np.mean(list(per_column.values()))),
        "ncp_per_column": per_column,
        "marginals_tvd": raw_marginal_distances(original, published, hierarchies),
        "marginals_tvd_at_node": marginal_distances(gen, published.table, qi),
        "seconds": published.seconds,
    }


def report_png(report: dict[str, Any], path: str | Path) -> Path:
    """A chart of the report: mean and max marginal distance per way, and the shares removed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=110)
    ways = sorted(report["marginals_tvd"], key=int)
    x = np.arange(len(ways))
    means = [report["marginals_tvd"][w]["mean"] or 0.0 for w in ways]
    maxes = [report["marginals_tvd"][w]["max"] or 0.0 for w in ways]
    left.bar(x - 0.2, means, 0.4, label="mean", color="#3b6ea8")
    left.bar(x + 0.2, maxes, 0.4, label="max", color="#a83b3b")
    left.set_xticks(x, [f"{w}-way" for w in ways])
    left.set_ylabel("total-variation distance")
    left.set_title("Marginals: release (spread over leaves) vs original")
    left.legend()
    shares = [report["dropped_by_sampling"], report["suppressed"], 1 - report["removed"]]
    bars = right.bar(["sampled out", "suppressed", "released"], shares, color="#6a8f3b")
    right.bar_label(bars, labels=[f"{s:.1%}" for s in shares], fontsize=8)
    right.set_ylim(0, 1.1)
    right.set_title(f"Records (k = {report['privacy']['k']}, β = {report['privacy']['beta']:.3f})")
    return save_png(fig, path)


def save_png(fig: Any, path: str | Path) -> Path:
    """Lay out ``fig``, write it to ``path`` as PNG and free it (every publish report's picture)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    target = Path(path)
    target.write_bytes(buffer.getvalue())
    return target
