"""Local versus central: the notes' "average salary" example, and a plot of error against n.

Every salary is clamped to ``[0, B]``. **Local**: each person adds Laplace noise of scale ``B/ε`` to their own
salary (one person's value moves by at most ``B``) and the collector averages the noisy values: the error of
the mean has standard deviation ``√2·B/(ε√n)``. **Central**: a trusted curator adds Laplace noise of scale
``B/(nε)`` once to the true mean (sensitivity ``B/n`` with ``n`` public): ``√2·B/(εn)``. At the same ε the
local error is ``√n`` times the central one. Both use :class:`privdb.mechanisms.Laplace` (secure noise).

Run ``python -m privdb.local.compare --out local-vs-central.png`` to write the plot.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from privdb.errors import InvalidParameter
from privdb.local import _checks
from privdb.mechanisms import Laplace, RandomSource

__all__ = ["LocalCentralComparison", "compare_local_central", "plot_local_central", "salaries"]

Floats = NDArray[np.float64]


def salaries(n: int, *, upper: float, seed: int = 0) -> Floats:
    """``n`` synthetic yearly salaries (log-normal, median 50,000), clamped to ``[0, upper]``."""
    data = np.random.default_rng(seed)  # the data only: every release draws from the CSPRNG
    out: Floats = np.clip(data.lognormal(math.log(50_000.0), 0.6, n), 0.0, upper)
    return out


@dataclass(frozen=True)
class LocalCentralComparison:
    """Root mean squared error of the released mean, measured and in theory, for each ``n``."""

    epsilon: float
    upper: float
    repetitions: int
    ns: list[int]
    local_rmse: list[float]
    central_rmse: list[float]
    local_theory: list[float]
    central_theory: list[float]

    @property
    def ratios(self) -> list[float]:
        """Measured local error over central error: grows like ``√n``."""
        return [lo / ce for lo, ce in zip(self.local_rmse, self.central_rmse, strict=True)]


def compare_local_central(
    ns: Sequence[int] = (10, 100, 1_000, 10_000, 100_000),
    *,
    epsilon: float = 1.0,
    upper: float = 200_000.0,
    repetitions: int = 200,
    seed: int = 0,
    rng: RandomSource | None = None,
) -> LocalCentralComparison:
    """Average salary under local and central Laplace noise at the same ε, for each number of people.

    ``repetitions`` independent releases per ``n`` give the measured RMSE; theory is the exact standard
    deviation of each mechanism's noise (``rng`` only for reproducible tests).
    """
    eps = _checks.epsilon(epsilon)
    bound = float(upper)
    if not (math.isfinite(bound) and bound > 0):
        raise InvalidParameter(f"upper (the salary bound B) must be a positive finite number, got {upper!r}")
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 2:
        raise InvalidParameter(f"repetitions must be an integer >= 2, got {repetitions!r}")
    sizes = [int(n) for n in ns]
    if not sizes or min(sizes) < 1:
        raise InvalidParameter("ns must be a non-empty list of positive numbers of people")
    local_mech = Laplace(epsilon=eps, sensitivity=bound, rng=rng)
    local_rmse, central_rmse, local_theory, central_theory = [], [], [], []
    for n in sizes:
        x = salaries(n, upper=bound, seed=seed + n)
        truth = float(x.mean())
        central_mech = Laplace(epsilon=eps, sensitivity=bound / n, rng=rng)
        local_err = np.array([local_mech.release(x).mean() - truth for _ in range(repetitions)])
        central_err = central_mech.release(np.full(repetitions, truth)) - truth
        local_rmse.append(float(np.sqrt(np.mean(local_err**2))))
        central_rmse.append(float(np.sqrt(np.mean(central_err**2))))
        local_theory.append(math.sqrt(local_mech.variance() / n))
        central_theory.append(math.sqrt(central_mech.variance()))
    return LocalCentralComparison(
        eps, bound, repetitions, sizes, local_rmse, central_rmse, local_theory, central_theory
    )


def plot_local_central(result: LocalCentralComparison, path: str | Path) -> Path:
    """Write a log-log PNG of error against n for both models (measured points, theory lines)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - matplotlib is installed with the dev tools
        raise InvalidParameter("plots need matplotlib: pip install matplotlib") from err
    out = Path(path)
    fig, ax = plt.subplots(figsize=(7.0, 4.5), dpi=120)
    ax.loglog(result.ns, result.local_theory, "-", color="tab:red", label="local, theory √2·B/(ε√n)")
    ax.loglog(result.ns, result.local_rmse, "o", color="tab:red", label="local, measured")
    ax.loglog(result.ns, result.central_theory, "-", color="tab:blue", label="central, theory √2·B/(εn)")
    ax.loglog(result.ns, result.central_rmse, "s", color="tab:blue", label="central, measured")
    last = len(result.ns) - 1
    ax.annotate(
        f"gap ×{result.ratios[last]:,.0f} ≈ √n",
        xy=(result.ns[last], math.sqrt(result.local_rmse[last] * result.central_rmse[last])),
        ha="right",
    )
    ax.set_xlabel("number of people n")
    ax.set_ylabel("RMSE of the average salary")
    ax.set_title(f"Average salary, ε = {result.epsilon:g}, salaries clamped to [0, {result.upper:,.0f}]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Local versus central DP on the average salary.")
    parser.add_argument("--out", default="local-vs-central.png", help="PNG to write")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repetitions", type=int, default=200)
    args = parser.parse_args(argv)
    result = compare_local_central(epsilon=args.epsilon, repetitions=args.repetitions)
    for n, lo, ce, ratio in zip(
        result.ns, result.local_rmse, result.central_rmse, result.ratios, strict=True
    ):
        print(f"n = {n:>7,}: local RMSE {lo:>12,.1f}, central RMSE {ce:>10,.2f}, ratio {ratio:>6,.0f}")
    print(f"wrote {plot_local_central(result, args.out)}")


if __name__ == "__main__":  # pragma: no cover
    main()
