"""Thresholdout: a holdout set that can be reused adaptively (Dwork, Feldman, Hardt, Pitassi, Reingold,
Roth, "The reusable holdout", Science 349, 2015; "Generalization in adaptive data analysis and holdout
reuse", NeurIPS 2015).

A query is a function ``φ: row → [0, 1]``; the analyst wants its mean over the population. Thresholdout
answers with the *training* mean as long as training and holdout agree within a noisy threshold, and
otherwise with a noisy *holdout* mean, spending one unit of the overfitting budget ``B``:

    T̂ = T + γ,  γ ~ Lap(2σ)                        (drawn once, and again after every detection)
    per query:  η ~ Lap(4σ)
    if |mean_holdout − mean_train| > T̂ + η:  B ← B − 1, redraw T̂, answer mean_holdout + ξ,  ξ ~ Lap(σ)
    else:                                    answer mean_train
    once B < 1: refuse (``BudgetExhausted``)

The holdout is touched only through the sparse vector technique and the Laplace mechanism, so the whole
interaction is ``(2B/(σ·n), 0)``-DP in the holdout (``n`` holdout rows, substitution neighbours), which is
what makes its answers generalise (docs/proofs/thresholdout.md). All noise is privdb's Laplace mechanism on
the CSPRNG (:class:`privdb.mechanisms.SeededRandom` only in tests and seeded simulations).
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import BudgetExhausted, InvalidParameter
from privdb.mechanisms import _validate
from privdb.mechanisms.laplace import Laplace
from privdb.mechanisms.randomness import RandomSource

__all__ = ["Query", "Thresholdout", "ThresholdoutExhausted"]

Query = Callable[[Any], ArrayLike]
"""A query: applied to the whole train (or holdout) data at once, returns one value in [0, 1] per row,
or an ``(n, m)`` array for ``m`` queries asked in order."""


class ThresholdoutExhausted(BudgetExhausted):
    """The overfitting budget ran out; ``answers`` holds the answers given before it did (a batch call)."""

    def __init__(self, message: str, answers: NDArray[np.float64]) -> None:
        super().__init__(message)
        self.answers = answers


def _first_above(gap: NDArray[np.float64], bar: NDArray[np.float64], start: int) -> int:
    """The first index ``>= start`` with ``gap > bar``, or -1: doubling windows keep a batch of ``m``
    queries with ``k`` detections at ``O(m + k·64)`` work instead of ``O(m·k)``."""
    step = 64
    while start < gap.size:
        stop = min(gap.size, start + step)
        hit = np.flatnonzero(gap[start:stop] > bar[start:stop])
        if hit.size:
            return start + int(hit[0])
        start, step = stop, 2 * step
    return -1


def _rows(data: object, name: str) -> int:
    if not isinstance(data, Sized):
        raise InvalidParameter(f"{name} must have a length (a NumPy array, pandas frame or list of rows)")
    n = len(data)
    if n < 1:
        raise InvalidParameter(f"{name} is empty; pass at least one row")
    return n


class Thresholdout:
    """The reusable holdout: training answers while they generalise, noisy holdout answers otherwise.

    ``threshold`` is T (the paper's experiment: 0.04 for 10,000 rows), ``sigma`` the Laplace scale σ of
    the answers (γ and η use 2σ and 4σ), ``budget`` the number B of overfitting detections allowed.
    """

    def __init__(
        self,
        train: object,
        holdout: object,
        *,
        threshold: float,
        sigma: float,
        budget: int,
        rng: RandomSource | None = None,
    ) -> None:
        self.threshold = _validate.positive("threshold", threshold)
        self.sigma = _validate.positive("sigma", sigma)
        if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
            raise InvalidParameter(f"budget must be an integer >= 1 (overfitting detections), got {budget!r}")
        self.budget = int(budget)
        self._train = train
        self._holdout = holdout
        self.n_train = _rows(train, "train")
        self.n_holdout = _rows(holdout, "holdout")
        # privdb's secure Laplace noise, calibrated to the holdout mean's sensitivity Δ = 1/n: scale b
        # is Laplace(ε = Δ/b, Δ); its grid and rounding allowance are then accounted in Δ's units.
        self._xi = self._laplace(self.sigma, rng)
        self._gamma = self._laplace(2.0 * self.sigma, rng)
        self._eta = self._laplace(4.0 * self.sigma, rng)
        self._remaining = self.budget
        self._answered = 0
        self._noisy_threshold = self._draw_threshold()

    @property
    def remaining(self) -> int:
        """Overfitting detections left before Thresholdout stops answering."""
        return self._remaining

    @property
    def detections(self) -> int:
        """Queries answered from the holdout so far (each cost one unit of budget)."""
        return self.budget - self._remaining

    @property
    def answered(self) -> int:
        """Queries answered so far."""
        return self._answered

    @property
    def epsilon(self) -> float:
        """The DP guarantee in the holdout over the whole interaction: ``2B/(σ·n_holdout)``."""
        return 2.0 * self.budget / (self.sigma * self.n_holdout)

    def _laplace(self, scale: float, rng: RandomSource | None) -> Laplace:
        sensitivity = 1.0 / self.n_holdout
        return Laplace(epsilon=sensitivity / scale, sensitivity=sensitivity, rng=rng)

    def _draw_threshold(self) -> float:
        return self.threshold + float(self._gamma.release(np.zeros(1))[0])

    def query(self, phi: Query) -> float:
        """Answer one query ``φ`` applied (vectorised) to the train and holdout data."""
        return float(self.query_many(phi)[0])

    def query_many(self, phi: Query) -> NDArray[np.float64]:
        """Answer the ``m`` queries of ``φ`` (an ``(n, m)`` result), in column order."""
        return self.answer_many(phi(self._train), phi(self._holdout))

    def answer(self, train_values: ArrayLike, holdout_values: ArrayLike) -> float:
        """Answer one query from its precomputed per-row values on train and holdout."""
        return float(self.answer_many(train_values, holdout_values)[0])

    def answer_many(self, train_values: ArrayLike, holdout_values: ArrayLike) -> NDArray[np.float64]:
        """Answer ``m`` queries given as ``(n_train, m)`` and ``(n_holdout, m)`` per-row values, in order.

        The result is the same as ``m`` calls to :meth:`answer`. If the budget runs out part-way,
        :class:`ThresholdoutExhausted` carries the answers given so far.
        """
        t = self._means(train_values, self.n_train, "train", private=False)
        h = self._means(holdout_values, self.n_holdout, "holdout", private=True)
        if t.size != h.size:
            raise InvalidParameter(
                f"train values hold {t.size} queries but holdout values {h.size}; "
                "ask the same queries of both"
            )
        m = t.size
        answers = t.copy()
        gap = np.abs(h - t)
        eta = self._eta.release(np.zeros(m))  # one independent η per query, drawn up front
        i = 0
        while i < m:
            if self._remaining < 1:
                self._answered += i
                raise ThresholdoutExhausted(self._exhausted_message(i, m), answers[:i].copy())
            j = _first_above(gap, self._noisy_threshold + eta, i)
            if j < 0:
                break
            # queries i..j-1 keep their training answers; query j is a detection
            answers[j] = float(self._xi.release(h[j : j + 1])[0])
            self._remaining -= 1
            self._noisy_threshold = self._draw_threshold()
            i = j + 1
        self._answered += m
        return answers

    def _exhausted_message(self, given: int, asked: int) -> str:
        batch = f" (answered {given} of the {asked} queries in this call)" if asked > 1 else ""
        return (
            f"Thresholdout's budget of {self.budget} overfitting detections is spent{batch}: further "
            "answers would leak the holdout set and lose their validity. Collect a fresh holdout set and "
            "start a new Thresholdout, or create one with a larger budget (at a larger privacy cost)."
        )

    @staticmethod
    def _means(values: ArrayLike, n: int, name: str, *, private: bool) -> NDArray[np.float64]:
        """Column means of ``(n,)`` or ``(n, m)`` per-row values in [0, 1].

        Training values are checked and errors name the fix. Holdout values are clipped into [0, 1]
        (NaN counts as 0) instead: an error that depends on the holdout would leak it.
        """
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[0] != n:
            raise InvalidParameter(
                f"{name} values must have one entry per {name} row ({n}), as shape ({n},) or ({n}, m); "
                f"got shape {np.shape(values)}"
            )
        if arr.shape[1] == 0:
            raise InvalidParameter("no queries given; pass at least one column of per-row values")
        if private:
            arr = np.nan_to_num(np.clip(arr, 0.0, 1.0), nan=0.0)
        elif not (np.all(np.isfinite(arr)) and arr.min() >= 0.0 and arr.max() <= 1.0):
            raise InvalidParameter(
                f"query values on {name} must lie in [0, 1]; rescale the query, e.g. (f - lo) / (hi - lo)"
            )
        means: NDArray[np.float64] = arr.mean(axis=0)
        return means
