"""The exponential mechanism over a finite candidate set (McSherry & Talwar 2007).

Candidate ``r`` is chosen with probability ``∝ exp(ε·u(x, r) / (2Δ))`` where Δ is the sensitivity of the
utility: ε-DP for any utility. The course notes print ``exp(ε·u / Δ)``; that form is only ε-DP when the
utility is *monotone* (every utility moves in the same direction between neighbours, as counts do), and is
2ε-DP otherwise. privdb uses the ``1/Δ`` form only when the caller declares ``monotone=True``.

Sampling is exact and numerically stable: the mechanism is the Gumbel-max race ``argmax_r s_r + G_r``
with scores ``s_r = c·(u_r − max u)`` kept in log space (no ``exp`` overflows, whatever the utilities) and
``G_r = −ln(−ln U_r)`` from CSPRNG uniforms. Each key is known up to a certified float interval; when the
best two intervals overlap, the contenders' uniforms are refined and compared exactly with mpmath interval
arithmetic. Millions of candidates cost one vectorised pass.

Float scores: ``s_r`` is computed in float64, which moves a score by at most about ``|s|·2^-52``. privdb
shrinks the coefficient ``c`` by the public relative allowance ``10^-6`` (the same on every database, so the
shrink itself leaks nothing) and refuses utilities whose float error would not fit in it (``max_span``). A
caller whose utilities are themselves float computations states a public bound ``utility_error`` on how far
each lies from its real value (whose sensitivity is Δ): the float utilities then move by at most Δ + 2·error,
and the relative margin 2·error/Δ (4·error/Δ if monotone) takes its share of the same allowance, leaving
less for the scores. Proof: docs/proofs/exponential.md, "Float scores".

Public ranges: a caller whose utilities grow with the data (counts, rank distances, L1 errors) clips them
with :meth:`ExponentialMechanism.clamp` to a public range the span check always passes; clipping keeps Δ
and monotonicity, so whether the draw refuses never depends on the data (same page, "Public ranges").
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privdb.errors import InvalidParameter
from privdb.mechanisms import _exact, _validate
from privdb.mechanisms.base import Mechanism, PrivacyCost
from privdb.mechanisms.randomness import RandomSource

__all__ = ["ExponentialMechanism"]

_TWO_M64 = 2.0**-64
_KEY_MARGIN = 2.0**-40
_LIMIT = 1e-6  # the relative shrink of c: the float margins (the scores' and the utilities' own) share it
_MIN_EPSILON = 2.0**-1000  # below this the scores' underflow (≤ 2^-1075 each) might not fit in the allowance


def _below(x: Fraction) -> float:
    """The largest float at or below the rational ``x`` (x > 0 and within float64's range)."""
    f = float(x)
    return math.nextafter(f, 0.0) if Fraction(f) > x else f


class ExponentialMechanism(Mechanism):
    """Choose one of ``len(utilities)`` candidates, favouring high utility, with ε-DP."""

    name: ClassVar[str] = "exponential"

    def __init__(
        self,
        *,
        epsilon: float,
        sensitivity: float,
        monotone: bool = False,
        utility_error: float = 0.0,
        rng: RandomSource | None = None,
    ) -> None:
        super().__init__(rng=rng)
        self._epsilon = _validate.positive("epsilon", epsilon)
        self.sensitivity = _validate.positive("sensitivity", sensitivity)
        self.monotone = bool(monotone)
        self.utility_error = _validate.non_negative("utility_error", utility_error)
        self.coefficient = self._epsilon / ((1.0 if self.monotone else 2.0) * self.sensitivity)
        # float utilities within ``error`` of real ones move by ≤ Δ + 2·error (and a monotone family may move
        # by −2·error the wrong way): the privacy loss grows by the factor 1 + margin at most.
        self.margin = (4.0 if self.monotone else 2.0) * self.utility_error / self.sensitivity
        if not self.margin <= _LIMIT:
            raise InvalidParameter(
                f"utility_error {self.utility_error:g} is too large against sensitivity "
                f"{self.sensitivity:g}: the exponential mechanism covers at most {_LIMIT:g} of epsilon for "
                "it; compute the utilities more exactly or declare a larger sensitivity"
            )
        if not (sys.float_info.min <= self.coefficient <= 2.0**900 and self._epsilon >= _MIN_EPSILON):
            raise InvalidParameter(
                f"epsilon {self._epsilon:g} over sensitivity {self.sensitivity:g} is beyond float64's range "
                "for the exponential mechanism; rescale the utilities (and the sensitivity) or change epsilon"
            )
        # the sampler's coefficient: c·(1 − 10^-6) rounded down, a function of public parameters only (the
        # same on every pair of neighbours); the margin and the scores' float error live inside the shrink
        self.sampled = _below(Fraction(self.coefficient) * (1 - Fraction(_LIMIT)))

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(epsilon=self._epsilon)

    def probabilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        """The selection probabilities (a float approximation, for display and tests)."""
        s = self._scores(self._utilities(utilities))
        w = np.exp(s)
        return np.asarray(w / w.sum(), dtype=np.float64)

    def utility_loss(self, n_candidates: int, beta: float) -> float:
        """With probability ``1 − β`` the chosen utility is within this of the best (McSherry–Talwar)."""
        beta = _validate.probability("beta", beta, open_low=True, open_high=True)
        return (math.log(n_candidates) + math.log(1.0 / beta)) / self.sampled

    def _utilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        u = np.atleast_1d(np.asarray(utilities, dtype=np.float64))
        if u.ndim != 1 or u.size == 0:
            raise InvalidParameter("utilities must be a non-empty 1-d array, one entry per candidate")
        if not np.all(np.isfinite(u)):
            raise InvalidParameter("utilities must be finite; give impossible candidates a low utility")
        return u

    @property
    def max_span(self) -> float:
        """The largest ``(max u − min u) + |max u|`` the scores accept: their float error then fits in the
        ``1e-6·ε`` allowance less the utility error's margin (``_scores``). A function of ε, Δ, monotone and
        utility_error only: a caller whose utilities' public part already reaches it refuses before reading
        data."""
        return (_LIMIT - self.margin) * self._epsilon / (8.0 * self.coefficient * 2.0**-52)

    def accepts(self, lo: float, hi: float) -> bool:
        """Whether every utility vector with entries in ``[lo, hi]`` passes the span check, float rounding
        included: its computed span is at most ``fl(fl(hi − lo) + max(|lo|, |hi|))`` (rounding is monotone
        and ``lo``, ``hi`` are floats). Public: a function of the range and of ε, Δ, monotone, error."""
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            return False
        return (hi - lo) + max(abs(lo), abs(hi)) <= self.max_span

    def clamp(self, utilities: ArrayLike, lo: float, hi: float) -> NDArray[np.float64]:
        """The utilities clipped to the public range ``[lo, hi]``, which the mechanism always accepts.

        Clipping keeps the utilities' sensitivity (``|clip(a) − clip(b)| ≤ |a − b|``) and, clip being
        nondecreasing, their monotonicity; so the clipped utilities are a valid input at the same Δ and the
        sampler never refuses them for their size (docs/proofs/exponential.md, "Public ranges"). A range
        the mechanism would not accept is refused here, from public inputs only."""
        lo, hi = float(lo), float(hi)
        if not self.accepts(lo, hi):
            raise InvalidParameter(
                f"the utility range [{lo:g}, {hi:g}] is too wide for the exponential mechanism in float64 at "
                f"epsilon {self._epsilon:g} (at most {self.max_span:.3g} of span plus magnitude); narrow it"
            )
        return np.asarray(np.clip(self._utilities(utilities), lo, hi), dtype=np.float64)

    def _scores(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        top = float(u.max())
        shifted = u - top
        span = float(-shifted.min()) + abs(top)
        # each score's float error is ≤ |s|·2^-52·(1 + 2^-53) + 2^-1075; on utilities within max_span the
        # pair's loss from it is ≤ (1e-6 − margin)·ε/2, inside the public shrink (docs/proofs/exponential.md)
        if not (math.isfinite(span) and span <= self.max_span):
            raise InvalidParameter(
                "utilities are too large for float64 at this epsilon; rescale them (and the sensitivity)"
            )
        return np.asarray(shifted * self.sampled, dtype=np.float64)

    def select(self, utilities: ArrayLike) -> int:
        """The index of the chosen candidate."""
        return int(self.select_many(utilities, 1)[0])

    def select_many(self, utilities: ArrayLike, n: int) -> NDArray[np.int64]:
        """``n`` independent selections (each costs ε: use for simulation and auditing)."""
        scores = self._scores(self._utilities(utilities))
        words = self._source.words(n * scores.size).reshape(n, scores.size)
        # E = −ln U = −log1p(−V), V = 1 − U ∈ [(~w)·2^-64, (~w + 1)·2^-64]; G = −ln E
        v_lo = (~words).astype(np.float64) * _TWO_M64
        v_hi = np.minimum(v_lo + _TWO_M64, 1.0)
        with np.errstate(divide="ignore"):
            g_hi = -np.log(-np.log1p(-v_lo))  # +inf where V can be 0
            g_lo = -np.log(-np.log1p(-v_hi))  # −inf where V can be 1
        slack = _KEY_MARGIN * (1.0 + np.abs(scores) + np.abs(np.nan_to_num(g_hi, posinf=0.0)))
        key_lo = scores + g_lo - slack
        key_hi = scores + g_hi + slack
        best = np.argmax(key_lo, axis=1)
        best_lo = np.take_along_axis(key_lo, best[:, None], axis=1)
        unsure = np.flatnonzero((key_hi >= best_lo).sum(axis=1) > 1)
        for row in unsure:
            contenders = np.flatnonzero(key_hi[row] >= best_lo[row, 0])
            best[row] = self._exact_race(scores, words[row], contenders)
        chosen: NDArray[np.int64] = best.astype(np.int64)
        return chosen

    def _exact_race(
        self, scores: NDArray[np.float64], words: NDArray[np.uint64], contenders: NDArray[np.intp]
    ) -> int:
        """Refine the contenders' uniforms until one key's interval lies above all others'."""
        uniforms = {int(i): _exact.LazyUniform(int(words[i]), 64) for i in contenders}
        keys = {i: _exact.gumbel_key(Fraction(float(scores[i]))) for i in uniforms}
        while True:
            bounds = {i: keys[i](u.low, u.high, u.bits + 64) for i, u in uniforms.items()}
            leader = max(bounds, key=lambda i: bounds[i][0])
            rivals = [i for i in bounds if i != leader and bounds[i][1] >= bounds[leader][0]]
            if not rivals:
                return leader
            for i in [leader, *rivals]:
                uniforms[i].refine(self._source)
            uniforms = {i: uniforms[i] for i in [leader, *rivals]}
