"""The surveys of one database: declared, collected and estimated in its catalog (the collector's side).

The server's survey routes and ``privdb survey … --db DIR`` both go through :class:`SurveyStore`, so a
survey behaves the same embedded and over HTTP. Who may do what is the face's business (the server checks
tokens; on ``--db`` whoever holds the directory is its owner, docs/security.md). The store keeps a survey's
spec, the hash of its collection token, its number of reports and its support counts: never a response.

:meth:`SurveyStore.submit_survey` is the embedded respondent: it randomises true answers in this process
with the survey's protocol, then adds only the randomised responses (the client's method of the same name
does the same before sending them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from privdb.backends.duckdb import check_name
from privdb.catalog.store import Catalog
from privdb.local.survey import SpecParts, Survey, survey_spec
from privdb.mechanisms.randomness import RandomSource

__all__ = ["SurveyStore"]


class SurveyStore:
    """Declare, collect and estimate the surveys kept in one catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def declare(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Declare a survey from its spec; returns its collection token (shown once) and normalised spec."""
        check_name(name, "survey")
        survey = Survey(spec)
        token = self.catalog.create_survey(name, survey.spec, len(survey.domain))
        return {"name": name, "collect_token": token, "spec": survey.spec, "epsilon": survey.epsilon}

    def create_survey(self, name: str, protocol: str, **parts: Unpack[SpecParts]) -> dict[str, Any]:
        """Declare a survey: its protocol, ``values`` (the domain), and ε (or α, p)."""
        return self.declare(name, survey_spec(protocol, **parts))

    def surveys(self) -> list[dict[str, Any]]:
        """Every survey's name, spec and number of responses."""
        return self.catalog.surveys()

    def survey(self, name: str) -> dict[str, Any]:
        """The survey's spec and current estimate per value, with 95% intervals."""
        spec, n, support = self.catalog.survey(name)
        return {"name": name, "spec": spec} | Survey(spec).estimate(support, n)

    def add_responses(self, name: str, responses: list[Any]) -> dict[str, Any]:
        """Add a batch of already-randomised responses (only their support counts are kept)."""
        spec, _, _ = self.catalog.survey(name)
        support, n = Survey(spec).support(responses)
        return {"name": name, "added": n, "n": self.catalog.add_to_survey(name, support, n)}

    def submit_survey(
        self, name: str, answers: Sequence[Any], *, rng: RandomSource | None = None
    ) -> dict[str, Any]:
        """Randomise true answers here with the survey's protocol, then add the randomised responses."""
        spec, _, _ = self.catalog.survey(name)
        return self.add_responses(name, Survey(spec).randomize(answers, rng=rng))
