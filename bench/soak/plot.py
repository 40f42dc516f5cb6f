"""The soak's picture: the server's file descriptors, threads and resident memory, and every honest
answer's latency, against time, the attack shaded (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.soak.honest import Answer
from bench.soak.watch import Sample


def draw(
    path: Path,
    samples: Sequence[Sample],
    answers: Sequence[Answer],
    attack: tuple[float, float],
    title: str,
) -> None:
    """Four panels over the run's seconds; the attack window shaded in each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(10, 9), sharex=True, constrained_layout=True)
    at = [s.at for s in samples]
    panels = [
        ("file descriptors", [float(s.fds) for s in samples]),
        ("threads", [float(s.threads) for s in samples]),
        ("RSS (MiB)", [s.rss_mib for s in samples]),
    ]
    for ax, (label, values) in zip(axes, panels, strict=False):
        ax.plot(at, values, color="tab:blue", linewidth=1.2, marker=".", markersize=3)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    ax = axes[3]
    ax.scatter([a.start for a in answers], [1000 * a.seconds for a in answers], s=2, color="tab:green")
    ax.set_yscale("log")
    ax.set_ylabel("honest latency (ms)")
    ax.set_xlabel("seconds since the start (idle baseline, then the attack, then the settle)")
    for ax in axes:
        ax.axvspan(*attack, color="tab:red", alpha=0.08, linewidth=0)
        ax.grid(alpha=0.3)
    axes[0].set_title(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
