"""Noise a prepared query's reads into its answer, by the path its plan took: randomised records (a record
release), the accuracy-first steps (an ACCURACY clause whose intervals depend on the data), or the noisy
statistics of privdb.sql.answer; on a table with personalised ε each accuracy entry says it is of a sample.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from privdb.mechanisms import RandomSource
from privdb.sql.accuracy import first as accuracy_first
from privdb.sql.answer.noise import NoisyAnswer, add_noise
from privdb.sql.plan.types import Plan
from privdb.sql.release.plan import ReleasePlan
from privdb.sql.release.records import randomize_records
from privdb.sql.run.read import Read

if TYPE_CHECKING:
    pass

__all__ = ["responder"]

_PERSONAL = "personalised: the statistic of a sample of the units (see the answer's personalised entry)"


def responder(
    plan: Plan | ReleasePlan, personal: bool, rng: RandomSource | None
) -> Callable[[Read], NoisyAnswer]:
    """The step after the read: the answer of ``plan`` from what was read, noised from ``rng``."""

    def respond(data: Read) -> NoisyAnswer:
        frame, histograms = data
        if isinstance(plan, ReleasePlan):
            assert frame is not None and not isinstance(frame, Mapping)  # a record release reads a frame
            return randomize_records(plan, frame, rng)
        if plan.query.schedule is not None:  # accuracy first: MAX reserved, the ex-post ε charged
            answer = accuracy_first.respond(plan, frame, rng)
        else:
            answer = add_noise(plan, frame, rng, histograms)
        if personal:  # each interval is around the sample's statistic, not the table's
            for entry in answer.accuracy:
                entry["personalised"] = _PERSONAL
        return answer

    return respond
