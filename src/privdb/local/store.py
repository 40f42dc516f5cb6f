"""The surveys of one database: declared, collected and estimated in its catalog (the collector's side).

The server's survey routes and ``privdb survey … --db`` both go through :class:`SurveyStore`, so a
survey behaves the same embedded and over HTTP. Who may do what is the face's business (the server checks
tokens; on ``--db`` whoever holds the directory is its owner, docs/security.md). The store keeps a survey's
spec, the hash of its collection token, its number of reports and its support counts: never a response.

**Who may send** (docs/security.md, "Surveys and poisoning"). A survey is *closed* unless its owner declares
it open: its collection token then only reads the spec, and responses come with one-time *respondent
tokens* the owner issues (:meth:`SurveyStore.issue_survey_tokens`), each adding exactly one response. An
*open* survey's collection token may add at most ``open_limit`` responses in all, at a bounded rate; the
server takes a bounded batch per request (the constants: :mod:`privdb.local.limits`). Every response is
checked against what the protocol's randomiser can output
(:mod:`privdb.local.responses`), so crafted responses move an estimate by their number, not their values.

:meth:`SurveyStore.submit_survey` is the embedded respondent: it randomises true answers in this process
with the survey's protocol, then adds only the randomised responses (the client's method of the same name
does the same before sending them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Unpack

from privdb.backends.names import check_name
from privdb.catalog.store import Catalog
from privdb.catalog.surveys import Collection, Via
from privdb.errors import InvalidParameter
from privdb.local.limits import MAX_ISSUE, MAX_OPEN_LIMIT, OPEN_RATE, RATE_WINDOW

if TYPE_CHECKING:
    from privdb.local.survey import SpecParts, Survey
    from privdb.mechanisms.randomness import RandomSource

__all__ = ["SurveyStore"]


def _count(value: object, what: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidParameter(f"{what} must be an integer from 1 to {most:,}, got {value!r}")
    return value


def _survey(spec: dict[str, Any]) -> Survey:
    """The survey a spec declares."""
    # optional: the protocols (NumPy, pandas) load when a survey is used, not before a server listens
    from privdb.local.survey import Survey

    return Survey(spec)


class SurveyStore:
    """Declare, collect and estimate the surveys kept in one catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def declare(self, name: str, spec: dict[str, Any], *, open_limit: int | None = None) -> dict[str, Any]:
        """Declare a survey from its spec; returns its collection token (shown once) and normalised spec.
        ``open_limit``: an open survey, whose collection token may add that many responses in all (None:
        closed, respondents send with respondent tokens)."""
        check_name(name, "survey")
        survey = _survey(spec)
        if open_limit is not None:
            _count(open_limit, "open_limit (responses the collection token may add)", MAX_OPEN_LIMIT)
        token = self.catalog.create_survey(name, survey.spec, len(survey.domain), open_limit=open_limit)
        return {
            "name": name,
            "collect_token": token,
            "spec": survey.spec,
            "epsilon": survey.epsilon,
            "access": self.catalog.survey_access(name),
        }

    def create_survey(
        self, name: str, protocol: str, *, open_limit: int | None = None, **parts: Unpack[SpecParts]
    ) -> dict[str, Any]:
        """Declare a survey: its protocol, ``values`` (the domain), ε (or α, p); ``open_limit`` opens it."""
        from privdb.local.survey import survey_spec  # optional: as _survey

        return self.declare(name, survey_spec(protocol, **parts), open_limit=open_limit)

    def issue_survey_tokens(self, name: str, count: int) -> list[str]:
        """``count`` one-time respondent tokens (at most ``MAX_ISSUE`` per call), each adding exactly one
        response; shown once."""
        return self.catalog.issue_respondent_tokens(name, _count(count, "count", MAX_ISSUE))

    def surveys(self) -> list[dict[str, Any]]:
        """Every survey's name, spec, number of responses and who may send them."""
        return self.catalog.surveys()

    def survey(self, name: str) -> dict[str, Any]:
        """The survey's spec, who may send, and current estimate per value, with 95% intervals."""
        spec, n, support = self.catalog.survey(name)
        access = {"access": self.catalog.survey_access(name)}
        return {"name": name, "spec": spec} | access | _survey(spec).estimate(support, n)

    def add_responses(
        self, name: str, responses: list[Any], *, via: Via = "owner", token: str | None = None
    ) -> dict[str, Any]:
        """Add a batch of already-randomised responses (only their support counts are kept), each checked
        against the protocol's outputs; ``via`` the sender's kind of token (the owner: no allowance)."""
        spec, _, _ = self.catalog.survey(name)
        support, n = _survey(spec).support(responses)
        how = Collection(via=via, token=token, rate=OPEN_RATE, window=RATE_WINDOW)
        return {"name": name, "added": n, "n": self.catalog.add_to_survey(name, support, n, how)}

    def submit_survey(
        self, name: str, answers: Sequence[Any], *, rng: RandomSource | None = None
    ) -> dict[str, Any]:
        """Randomise true answers here with the survey's protocol, then add the randomised responses."""
        spec, _, _ = self.catalog.survey(name)
        return self.add_responses(name, _survey(spec).randomize(answers, rng=rng))
