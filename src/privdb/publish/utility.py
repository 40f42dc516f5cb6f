"""The owner's utility report of a synthetic release: how close it is to the private table (owner only).

* The total-variation distance of every 1-, 2- and 3-way marginal of the released columns between the
  synthetic rows and the original (both as distributions over the public cells), with each order's average.
* With a ``target`` column (Adult's salary-class): the accuracy on held-out real rows of a classifier trained
  on the synthetic rows ("train on synthetic, test on real"), beside the same classifier trained on real rows
  and the majority class's share. The real rows are split 70/30 with a fixed seed; the synthetic rows were
  made from the whole table, test rows included (as in the literature's TSTR figures).
* A PNG: the distances by order and the accuracies.

Both sides are the encoded cells (privdb.publish.synthetic.encode), so a number is compared by its bin.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter

__all__ = ["classifier_accuracy", "plot", "tv_distances", "utility_report"]

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


def classifier_accuracy(
    real: Codes, synthetic: Codes, names: Sequence[str], target: str, seed: int = 0, with_real: bool = True
) -> dict[str, Any]:
    """Accuracy on 30% held-out real rows of gradient-boosted trees trained on synthetic vs real rows
    (``with_real=False``: the synthetic one only)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    if target not in names:
        raise InvalidParameter(f"--target {target!r} is not a released column; released: {', '.join(names)}")
    t = list(names).index(target)
    features = [i for i in range(len(names)) if i != t]
    order = np.random.default_rng(seed).permutation(len(real))
    cut = int(0.7 * len(real))
    train, test = real[order[:cut]], real[order[cut:]]

    def accuracy(rows: Codes) -> float | None:
        if not features or len(np.unique(rows[:, t])) < 2 or not len(test):
            return None  # one class only: nothing to learn
        model = HistGradientBoostingClassifier(
            categorical_features=[True] * len(features), max_iter=100, random_state=seed
        )
        model.fit(rows[:, features], rows[:, t])
        return float((model.predict(test[:, features]) == test[:, t]).mean())

    majority = float(np.bincount(test[:, t]).max() / len(test)) if len(test) else None
    return {"target": target, "train_synthetic_test_real": accuracy(synthetic),
            "train_real_test_real": accuracy(train) if with_real else None, "majority_class": majority,
            "test_rows": len(test), "model": "HistGradientBoostingClassifier (categorical)"}  # fmt: skip


def utility_report(
    real: Codes, synthetic: Codes, names: Sequence[str], sizes: Sequence[int], target: str | None
) -> dict[str, Any]:
    """The whole report (module doc)."""
    report: dict[str, Any] = {"tv_distance": tv_distances(real, synthetic, names, sizes)}
    if target is not None:
        report["classifier"] = classifier_accuracy(real, synthetic, names, target)
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
