"""The "no signal" experiment of Dwork et al., "The reusable holdout" (Science 2015, Fig. 1).

Labels are fair ±1 coins independent of ``d`` standard Gaussian features, so no classifier beats 50% on
fresh data. The analyst still fits one, adaptively, with the holdout's help:

1. score every feature on the training set: ``s_j = 2·mean(sign(x_j) = y) − 1`` (its sign agreement with
   the label, a query with values in [0, 1]);
2. ask the holdout for the same scores, and keep the features whose training and holdout scores both
   exceed ``1/√n`` in absolute value with the same sign;
3. for each ``k``, classify by the sign of ``Σ sign(s_j)·x_j`` over the ``k`` kept features with the
   largest ``|s_j|`` (fewer if fewer were kept), and ask the holdout for its accuracy.

With the *standard* holdout, step 2 and 3 read the holdout's exact means; with *Thresholdout* they read
its answers. The reported holdout accuracy climbs above 0.5 with the standard holdout (the holdout was
used to select the features), and stays near 0.5 with Thresholdout; a fresh test set shows the truth.

Differences from the paper: features are scored by sign agreement (a [0, 1]-valued query, as Thresholdout
requires) rather than by the raw correlation ``mean(x_j·y)``; Thresholdout is the Laplace version with its
budget (the authors' demo code used Gaussian noise and no budget). ``n`` is the size of *each* of the
training, holdout and fresh sets, as in the authors' code. Data are generated in column chunks, so the
paper's size (n = d = 10,000) runs in bounded memory.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.holdout.thresholdout import Thresholdout
from privdb.mechanisms.randomness import InsecureRandomWarning, RandomSource, SecureRandom, SeededRandom

__all__ = ["Curves", "ExperimentResult", "demo", "plot", "run"]

_CHUNK_CELLS = 2_000_000  # features are drawn in chunks of about this many cells per data set


@dataclass(frozen=True)
class Curves:
    """One method's accuracies, each of shape ``(runs, len(ks))``."""

    train: NDArray[np.float64]
    reported: NDArray[np.float64]  # holdout accuracy as the method reports it
    fresh: NDArray[np.float64]


@dataclass(frozen=True)
class ExperimentResult:
    """Both methods' accuracy curves and the Thresholdout parameters used."""

    n: int
    d: int
    ks: tuple[int, ...]
    runs: int
    seed: int | None
    threshold: float
    sigma: float
    budget: int
    standard: Curves
    thresholdout: Curves
    detections: NDArray[np.int64]  # Thresholdout's overfitting detections per run
    seconds: float

    def summary(self) -> list[dict[str, float]]:
        """Mean accuracies per ``k``: train, reported and fresh, for both methods."""
        rows = []
        for i, k in enumerate(self.ks):
            row: dict[str, float] = {"k": float(k)}
            for name, c in (("standard", self.standard), ("thresholdout", self.thresholdout)):
                row[f"{name}_train"] = float(c.train[:, i].mean())
                row[f"{name}_reported"] = float(c.reported[:, i].mean())
                row[f"{name}_fresh"] = float(c.fresh[:, i].mean())
            rows.append(row)
        return rows


@dataclass
class _Kept:
    """A method's candidate features so far: the best ``limit`` by ``|score|`` among those selected."""

    limit: int
    index: NDArray[np.int64]
    score: NDArray[np.float64]
    train: NDArray[np.float64]
    holdout: NDArray[np.float64]

    @classmethod
    def empty(cls, limit: int, n: int) -> _Kept:
        none = np.zeros((n, 0))
        return cls(limit, np.zeros(0, np.int64), np.zeros(0), none, none.copy())

    def add(
        self,
        offset: int,
        score: NDArray[np.float64],
        chosen: NDArray[np.bool_],
        xt: NDArray[np.float64],
        xh: NDArray[np.float64],
    ) -> None:
        cols = np.flatnonzero(chosen)
        index = np.concatenate([self.index, offset + cols])
        scores = np.concatenate([self.score, score[cols]])
        train = np.hstack([self.train, xt[:, cols]])
        holdout = np.hstack([self.holdout, xh[:, cols]])
        order = np.argsort(-np.abs(scores), kind="stable")[: self.limit]
        self.index, self.score = index[order], scores[order]
        self.train, self.holdout = train[:, order], holdout[:, order]


def _accuracy(
    x: NDArray[np.float64], weights: NDArray[np.float64], y: NDArray[np.float64], ks: Sequence[int]
) -> NDArray[np.float64]:
    """Per-row correctness ``(n, len(ks))`` of the sign classifiers on the first ``k`` columns."""
    n = y.size
    margins = np.cumsum(x * weights, axis=1) if weights.size else np.zeros((n, 0))
    out = np.empty((n, len(ks)))
    for i, k in enumerate(ks):
        m = margins[:, min(k, weights.size) - 1] if weights.size else np.zeros(n)
        out[:, i] = np.where(m >= 0, 1.0, -1.0) == y  # no feature kept: predict +1
    return out


def _one_run(
    n: int,
    d: int,
    ks: Sequence[int],
    gen: np.random.Generator,
    mech: Thresholdout,
    y_train: NDArray[np.float64],
    y_hold: NDArray[np.float64],
) -> tuple[Curves, Curves]:
    cut = 1.0 / math.sqrt(n)  # the analyst's significance cut: one standard error of s_j
    kmax = max(ks)
    kept = {"standard": _Kept.empty(kmax, n), "thresholdout": _Kept.empty(kmax, n)}
    chunk = max(1, min(d, _CHUNK_CELLS // n))
    for start in range(0, d, chunk):
        width = min(chunk, d - start)
        xt = gen.standard_normal((n, width))
        xh = gen.standard_normal((n, width))
        agree_t = (np.sign(xt) == y_train[:, None]).astype(np.float64)
        agree_h = (np.sign(xh) == y_hold[:, None]).astype(np.float64)
        s_train = 2.0 * agree_t.mean(axis=0) - 1.0
        answers = {
            "standard": 2.0 * agree_h.mean(axis=0) - 1.0,
            "thresholdout": 2.0 * mech.answer_many(agree_t, agree_h) - 1.0,
        }
        for name, s_hold in answers.items():
            chosen = ((s_train > cut) & (s_hold > cut)) | ((s_train < -cut) & (s_hold < -cut))
            kept[name].add(start, s_train, chosen, xt, xh)
    # fresh data: new rows of the kept features (every feature is independent of everything else)
    y_fresh = gen.choice([-1.0, 1.0], size=n)
    union = np.union1d(kept["standard"].index, kept["thresholdout"].index)
    x_fresh = gen.standard_normal((n, union.size))
    curves = {}
    for name, k in kept.items():
        w = np.sign(k.score)
        fresh_cols = x_fresh[:, np.searchsorted(union, k.index)]
        acc_t = _accuracy(k.train, w, y_train, ks)
        acc_h = _accuracy(k.holdout, w, y_hold, ks)
        reported = acc_h.mean(axis=0) if name == "standard" else mech.answer_many(acc_t, acc_h)
        curves[name] = Curves(
            acc_t.mean(axis=0), reported, _accuracy(fresh_cols, w, y_fresh, ks).mean(axis=0)
        )
    return curves["standard"], curves["thresholdout"]


def run(
    n: int = 5_000,
    d: int = 500,
    ks: Sequence[int] = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100),
    runs: int = 100,
    seed: int | None = 0,
    *,
    threshold: float | None = None,
    sigma: float | None = None,
    budget: int | None = None,
) -> ExperimentResult:
    """Run the experiment ``runs`` times; ``n`` rows in each of train, holdout and fresh, ``d`` features.

    Defaults follow the paper's scale: ``T = 4/√n`` (0.04 at n = 10,000). ``σ = T/32``: with Laplace
    noise, η ~ Lap(4σ) must stay well below T, or chance gaps cross the threshold, leak the holdout and
    (through the noisy threshold that survives them) let real gaps pass (docs/proofs/thresholdout.md).
    ``budget`` defaults to one detection per query (it never binds, as in the paper's experiment);
    ``detections`` records how many were used. ``seed=None`` draws everything
    from the CSPRNG; a seed makes the simulation reproducible (seeded noise: simulation only).
    """
    if n < 10 or d < 1 or runs < 1:
        raise InvalidParameter(f"need n >= 10, d >= 1 and runs >= 1; got n={n}, d={d}, runs={runs}")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1:
        raise InvalidParameter(f"ks must be a non-empty list of feature counts >= 1, got {ks}")
    thr = 4.0 / math.sqrt(n) if threshold is None else float(threshold)
    sig = thr / 32.0 if sigma is None else float(sigma)
    bud = d + len(ks) if budget is None else int(budget)
    started = time.perf_counter()
    results: list[tuple[Curves, Curves]] = []
    detections = np.zeros(runs, dtype=np.int64)
    for r in range(runs):
        entropy = None if seed is None else [seed, r]
        gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
        noise = _noise_source(seed, r)
        y_train = gen.choice([-1.0, 1.0], size=n)
        y_hold = gen.choice([-1.0, 1.0], size=n)
        mech = Thresholdout(y_train, y_hold, threshold=thr, sigma=sig, budget=bud, rng=noise)
        results.append(_one_run(n, d, ks, gen, mech, y_train, y_hold))
        detections[r] = mech.detections

    def stack(i: int) -> Curves:
        return Curves(
            *(np.vstack([getattr(res[i], f) for res in results]) for f in ("train", "reported", "fresh"))
        )

    return ExperimentResult(
        n=n,
        d=d,
        ks=ks,
        runs=runs,
        seed=seed,
        threshold=thr,
        sigma=sig,
        budget=bud,
        standard=stack(0),
        thresholdout=stack(1),
        detections=detections,
        seconds=time.perf_counter() - started,
    )


def _noise_source(seed: int | None, r: int) -> RandomSource:
    if seed is None:
        return SecureRandom()
    with warnings.catch_warnings():  # a seeded simulation on synthetic data, never a release
        warnings.simplefilter("ignore", InsecureRandomWarning)
        return SeededRandom(int(np.random.SeedSequence([seed, r, 1]).generate_state(1)[0]))


def plot(result: ExperimentResult, path: Path | str) -> Path:
    """Write a PNG of both methods: train, reported holdout and fresh accuracy against ``k`` (±1 SD)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    ks = np.asarray(result.ks)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = (("Standard holdout", result.standard), ("Thresholdout", result.thresholdout))
    top = max(float(c.train.mean(axis=0).max()) for _, c in panels) + 0.03
    for ax, (title, curves) in zip(axes, panels, strict=True):
        for values, label, colour, style in (
            (curves.train, "training", "tab:blue", "--"),
            (curves.reported, "holdout (reported)", "tab:green", "-"),
            (curves.fresh, "fresh data", "tab:red", "-"),
        ):
            mean, sd = values.mean(axis=0), values.std(axis=0)
            ax.plot(ks, mean, style, color=colour, marker="o", markersize=3, label=label)
            ax.fill_between(ks, mean - sd, mean + sd, color=colour, alpha=0.15, linewidth=0)
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(title)
        ax.set_xlabel("number of variables k")
        ax.set_ylim(0.45, top)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    axes[0].legend(loc="upper left", fontsize=9)
    fig.suptitle(
        f"No signal: n = {result.n:,} per set, d = {result.d:,}, {result.runs} runs; "
        f"Thresholdout T = {result.threshold:.3g}, σ = {result.sigma:.3g} (Dwork et al., Science 2015)",
        fontsize=10,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def demo(path: Path) -> Path:
    """The experiment at a moderate size (well under a minute) written as a PNG to ``path``."""
    result = run(n=4_000, d=4_000, ks=(10, 25, 50, 75, 100, 150, 200, 250), runs=20, seed=2015)
    return plot(result, path)
