"""The picture of a histogram release (``privdb publish histogram --report-png``): each marginal's released
counts with their 95% intervals, and its total-variation distance to the private data in the title (the
owner's report: it compares with the private table, so it is not part of the release). A StructureFirst
release also shows its bucket boundaries, and says that its intervals cover each bucket's mean count."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privdb.publish.histogram import HistogramRelease
from privdb.publish.report import save_png

__all__ = ["histogram_png"]

_MOST_PANELS = 6
_MOST_CELLS = 60  # a panel shows at most this many cells (the largest), and says so


def histogram_png(released: HistogramRelease, path: str | Path) -> Path:
    """One panel per marginal (at most six): bars of the released counts with 95% error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = released.marginals[:_MOST_PANELS]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.8 * len(panels)), dpi=110, squeeze=False)
    for ax, (columns, frame) in zip(axes[:, 0], panels, strict=True):
        shown = frame if len(frame) <= _MOST_CELLS else frame.nlargest(_MOST_CELLS, "count")
        labels = shown[list(columns)].astype(str).agg("|".join, axis=1).tolist()
        x = np.arange(len(shown))
        counts = shown["count"].to_numpy(dtype=float)
        below = np.maximum(counts - shown["ci95_low"].to_numpy(dtype=float), 0.0)
        above = np.maximum(shown["ci95_high"].to_numpy(dtype=float) - counts, 0.0)
        ax.bar(x, counts, color="#3b6ea8")
        ax.errorbar(x, counts, yerr=[below, above], fmt="none", ecolor="#333333", elinewidth=0.8, capsize=2)
        ax.set_xticks(x, labels, rotation=60 if len(x) > 8 else 0, ha="right" if len(x) > 8 else "center",
                      fontsize=7)  # fmt: skip
        name = "|".join(columns)
        tv = released.utility.get(name)
        cut = f", the {_MOST_CELLS} largest of {len(frame)} cells" if len(frame) > _MOST_CELLS else ""
        distance = f" · TV distance to the data {tv:.3f}" if tv is not None else ""
        what = "95% intervals"
        if released.structure is not None and len(frame) <= _MOST_CELLS:
            for edge in released.structure["bounds"][1:-1]:
                ax.axvline(edge - 0.5, color="#c0392b", linewidth=0.8, linestyle="--")
            what = f"{released.structure['buckets']} buckets (dashed), 95% intervals of each bucket's mean"
        ax.set_title(f"{name}: released counts with {what}{cut}{distance}", fontsize=9)
        ax.set_ylabel("count")
    fig.suptitle(
        f"DP release: ε {released.epsilon:g}, δ {released.delta:g}, {released.noise} noise", fontsize=10
    )
    return save_png(fig, path)
