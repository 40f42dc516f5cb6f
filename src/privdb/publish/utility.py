"""The owner's utility report of a synthetic release: how close it is to the private table (owner only).

* The total-variation distance of every 1-, 2- and 3-way marginal of the released columns between the
  synthetic rows and the original (both as distributions over the public cells), with each order's average.
* With a ``target`` column (Adult's salary-class): the accuracy on held-out real rows of a classifier trained
  on the synthetic rows ("train on synthetic, test on real"), beside the same classifier trained on the real
  training rows and the majority class's share. The held-out rows are split off **before** the release, which
  is made from the training rows only (privdb.publish.evaluation): a test row that helped make the release
  would flatter it.
* A PNG: the distances by order and the accuracies.

Both sides are the encoded cells (privdb.publish.synthetic.encode), so a number is compared by its bin.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.errors import InvalidParameter, install_hint

__all__ = [
    "classifier_accuracy",
    "fit_and_score",
    "majority_share",
    "plot",
    "require_classifier",
    "tv_distances",
    "utility_report",
]

Codes = NDArray[np.int64]
MAX_WAY = 3
_MAX_CELLS = 5_000_000  # a 3-way marginal larger than this is skipped (and named in the report)


def _distribution(codes: Codes, sizes: Sequence[int], axes: Sequence[int]) -> NDArray[np.float64]:
    shape = tuple(sizes[a] for a in axes)
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in axes), shape)
    counts = np.bincount(flat, minlength=math.prod(shape)).astype(np.float64)
    return np.asarray(counts / max(1.0, counts.sum()), dtype=np.float64)


def tv_distances(
    real: Codes, synthetic: Codes, names: Sequence[str], sizes: Sequence[int], max_way: int = MAX_WAY
) -> dict[str, Any]:
    """Per order k = 1..max_way: the TV distance of every k-way marginal and their average."""
    out: dict[str, Any] = {}
    for k in range(1, min(max_way, len(names)) + 1):
        distances: dict[str, float] = {}
        skipped = []
        for axes in itertools.combinations(range(len(names)), k):
            label = "|".join(names[a] for a in axes)
            if math.prod(sizes[a] for a in axes) > _MAX_CELLS:
                skipped.append(label)
                continue
            p, q = _distribution(real, sizes, axes), _distribution(synthetic, sizes, axes)
            distances[label] = float(0.5 * np.abs(p - q).sum())
        values = list(distances.values())
        out[f"{k}-way"] = {"average": float(np.mean(values)) if values else None,
                           "max": float(np.max(values)) if values else None,
                           "marginals": distances, "skipped_too_large": skipped}  # fmt: skip
    return out


def fit_and_score(
    train_x: Any, train_y: Any, test_x: Any, test_y: Any, categorical: Sequence[bool], seed: int = 0
) -> float | None:
    """Accuracy on (test_x, test_y) of gradient-boosted trees fitted on (train_x, train_y); None when there
    is nothing to learn (no feature, one class, no test row). A categorical feature with more values than the
    trees' bins is taken as ordered codes."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # optional: the `synthetic` extra

    if not len(categorical) or len(np.unique(train_y)) < 2 or not len(test_y):
        return None
    cardinal = np.asarray(train_x).max(axis=0, initial=0) if len(train_x) else np.zeros(len(categorical))
    kinds = [
        c and float(np.nan_to_num(m)) < 250 for c, m in zip(categorical, np.atleast_1d(cardinal), strict=True)
    ]
    x, tx = np.array(train_x, dtype=np.float64), np.array(test_x, dtype=np.float64)
    # a feature with no known value (a number released only as '*') carries nothing, and the trees' binning
    # fails on it: make it a constant
    blank = np.isnan(x).all(axis=0)
    x[:, blank], tx[:, blank] = 0.0, 0.0
    model = HistGradientBoostingClassifier(categorical_features=kinds, max_iter=100, random_state=seed)
    model.fit(x, np.asarray(train_y))
    return float((model.predict(tx) == np.asarray(test_y)).mean())


def require_classifier() -> None:
    """Refuse a classifier report, before anything is read or spent, when scikit-learn is not installed."""
    if importlib.util.find_spec("sklearn") is None:
        raise InvalidParameter(
            f"the classifier report needs scikit-learn: {install_hint('synthetic')} (nothing was spent)"
        )


def majority_share(labels: Any) -> float | None:
    """The share of the most frequent value (the baseline a classifier must beat)."""
    values = pd.Series(np.asarray(labels)).value_counts()
    return float(values.iloc[0] / len(labels)) if len(labels) else None


def classifier_accuracy(
    train: Codes, test: Codes, synthetic: Codes, names: Sequence[str], target: str, seed: int = 0,
    with_real: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Accuracy on the held-out real rows ``test`` of gradient-boosted trees trained on the synthetic rows vs
    on the real training rows ``train`` (``with_real=False``: the synthetic one only). The synthetic rows must
    have been made without ``test`` (privdb.publish.evaluation.split_rows)."""
    if target not in names:
        raise InvalidParameter(f"--target {target!r} is not a released column; released: {', '.join(names)}")
    t = list(names).index(target)
    features = [i for i in range(len(names)) if i != t]
    kinds = [True] * len(features)
    fake = fit_and_score(synthetic[:, features], synthetic[:, t], test[:, features], test[:, t], kinds, seed)
    real = fit_and_score(train[:, features], train[:, t], test[:, features], test[:, t], kinds, seed)
    return {"target": target, "train_synthetic_test_real": fake,
            "train_real_test_real": real if with_real else None, "majority_class": majority_share(test[:, t]),
            "test_rows": len(test), "model": "HistGradientBoostingClassifier (categorical)"}  # fmt: skip


def utility_report(
    real: Codes,
    synthetic: Codes,
    names: Sequence[str],
    sizes: Sequence[int],
    target: str | None = None,
    held_out: tuple[Codes, Codes] | None = None,
) -> dict[str, Any]:
    """The whole report (module doc): ``held_out`` = (training rows, held-out rows), encoded, for the
    classifier of ``target``; the release must have been made from the training rows only."""
    report: dict[str, Any] = {"tv_distance": tv_distances(real, synthetic, names, sizes)}
    if target is not None:
        if held_out is None:
            raise InvalidParameter("a classifier report needs rows held out before the release (split_rows)")
        report["classifier"] = classifier_accuracy(held_out[0], held_out[1], synthetic, names, target)
    report["note"] = "compares with the private table: for the owner only, not for publication"
    return report


def plot(report: dict[str, Any], path: Path, title: str) -> None:
    """A PNG: the TV distances of the 1-, 2- and 3-way marginals (box plots) and the classifier accuracies."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tv = report["tv_distance"]
    orders = [k for k in tv if tv[k]["marginals"]]
    accuracy = report.get("classifier")
    fig, axes = plt.subplots(1, 2 if accuracy else 1, figsize=(10 if accuracy else 6, 4), squeeze=False)
    ax = axes[0][0]
    ax.boxplot([list(tv[k]["marginals"].values()) for k in orders], tick_labels=orders)
    ax.set_ylabel("total-variation distance (lower is better)")
    ax.set_title("marginals: synthetic vs original")
    if accuracy:
        bars = {
            "synthetic→real": accuracy["train_synthetic_test_real"],
            "real→real": accuracy["train_real_test_real"],
            "majority": accuracy["majority_class"],
        }
        shown = {k: v for k, v in bars.items() if v is not None}
        ax2 = axes[0][1]
        ax2.bar(list(shown), list(shown.values()), color=["tab:blue", "tab:green", "tab:gray"][: len(shown)])
        ax2.set_ylim(0, 1)
        ax2.set_ylabel(f"accuracy predicting {accuracy['target']}")
        ax2.set_title("classifier trained on …, tested on real rows")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
