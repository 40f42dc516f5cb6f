"""A survey that grows: reports arrive in batches, the estimate is available after every batch.

The collector keeps only the sufficient statistic — the number of reports and one support count per value —
so memory stays ``O(d)`` however many reports arrive, each batch costs time linear in its size, and the
estimate after any batch is exactly the one-shot estimate of all reports so far. Collectors working in
parallel on parts of the stream combine with :meth:`SurveyStream.merge`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from privdb.local.estimators import Frequencies, SupportEstimator
from privdb.local.protocols import LocalProtocol

__all__ = ["SurveyStream"]

R = TypeVar("R")


@dataclass
class SurveyStream(Generic[R]):
    """The collector of a growing survey under one protocol (``history`` keeps each batch's estimate)."""

    protocol: LocalProtocol[R]
    keep_history: bool = False
    batches: int = 0
    history: list[Frequencies] = field(default_factory=list)
    _estimator: SupportEstimator | None = None

    def __post_init__(self) -> None:
        self._estimator = self.protocol.estimator()

    @property
    def estimator(self) -> SupportEstimator:
        assert self._estimator is not None
        return self._estimator

    @property
    def n(self) -> int:
        """Reports so far."""
        return self.estimator.n

    def add(self, reports: R) -> SurveyStream[R]:
        """Take in one batch of reports."""
        self.estimator.add(reports)
        self.batches += 1
        if self.keep_history:
            self.history.append(self.estimator.estimate())
        return self

    def extend(self, batches: Iterable[R]) -> SurveyStream[R]:
        """Take in many batches (e.g. a generator reading reports as they arrive)."""
        for batch in batches:
            self.add(batch)
        return self

    def merge(self, other: SurveyStream[R]) -> SurveyStream[R]:
        """Fold in another collector's batches of the same protocol."""
        self.estimator.merge(other.estimator)
        self.batches += other.batches
        return self

    def estimate(self) -> Frequencies:
        """Unbiased count estimates from every report so far."""
        return self.estimator.estimate()
