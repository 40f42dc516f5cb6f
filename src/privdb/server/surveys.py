"""The survey routes of the local model, as a FastAPI router over :class:`privdb.local.store.SurveyStore`.

Who may do what (docs/server.md; the reasons in docs/security.md, "Surveys and poisoning"):

- declare a survey (``POST /v1/surveys``): the owner; the answer holds the survey's collection token, once.
  A survey is closed unless declared ``"open": true`` (with ``"open_limit"``, default
  ``DEFAULT_OPEN_LIMIT``);
- issue one-time respondent tokens (``POST /v1/surveys/{name}/tokens {"count": N}``): the owner;
- add randomised responses (``POST /v1/surveys/{name}/responses``): a respondent token of that survey
  (exactly one response, once), its collection token if the survey is open (within its limit and rate), or
  the owner; at most ``MAX_BATCH`` responses per request (413 beyond);
- read a survey's spec and estimate (``GET /v1/surveys/{name}``): the owner, any analyst, and that survey's
  own collection and respondent tokens (respondents fetch the protocol and ε there before randomising;
  another survey's token is ``forbidden``);
- list surveys (``GET /v1/surveys``): the owner and analysts see all; a survey's token sees its own.

Estimates are functions of randomised responses only, each of which is ε-LDP for its sender, so any reader
may see them. The server never receives a true answer: respondents randomise on their side
(``privdb survey submit``, ``RemoteConnection.submit_survey``, or their own :mod:`privdb.local` code).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import Field

from privdb.catalog.store import Catalog, Principal
from privdb.catalog.surveys import Via
from privdb.errors import Forbidden, InvalidParameter, RawAccessDenied, RequestTooLarge, Unauthorized
from privdb.local.limits import DEFAULT_OPEN_LIMIT, MAX_BATCH, MAX_ISSUE, MAX_OPEN_LIMIT
from privdb.local.store import SurveyStore
from privdb.server.bodies import Body

__all__ = ["router"]

router = APIRouter(prefix="/v1/surveys", tags=["surveys (local model)"])
_bearer = HTTPBearer(
    auto_error=False,
    description="the owner's, an analyst's, or a survey's collection or respondent token",
)


class SurveyIn(Body):
    name: str = Field(max_length=64)
    protocol: str = Field(description="coin, alpha, flip, binary, krr, oue or olh")
    domain: list[str | int] | None = Field(default=None, description="the values people answer with")
    epsilon: float | None = None
    alpha: float | None = None
    p: float | None = None
    open: bool = Field(
        default=False,
        description="let the collection token send responses (default: closed, respondent tokens only)",
    )
    open_limit: int | None = Field(
        default=None,
        description=f"an open survey: responses its collection token may add in all (default "
        f"{DEFAULT_OPEN_LIMIT:,}, at most {MAX_OPEN_LIMIT:,})",
    )


class ResponsesIn(Body):
    responses: list[Any] = Field(
        description=f"already-randomised responses, as the randomiser returned them (at most {MAX_BATCH:,}; "
        "a respondent token: exactly one)"
    )


class TokensIn(Body):
    count: int = Field(description=f"how many one-time respondent tokens to issue (1 to {MAX_ISSUE:,})")


def _store(request: Request) -> SurveyStore:
    return SurveyStore(request.app.state.db.catalog)


async def _token(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> str:
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized("missing token: send `Authorization: Bearer <token>`")
    return credentials.credentials.strip()


Store = Annotated[SurveyStore, Depends(_store)]
Token = Annotated[str, Depends(_token)]


def _reader(catalog: Catalog, token: str) -> Principal | str:
    """The owner or an analyst (a :class:`Principal`), or the name of the survey a survey's token is for."""
    found = catalog.survey_token(token)
    if found is not None:
        return found[0]
    return catalog.authenticate(token)


def _owner(catalog: Catalog, token: str) -> None:
    if catalog.survey_token(token) is not None or not catalog.authenticate(token).is_owner:
        raise RawAccessDenied("this is for the database owner; use an owner token")


@router.post("", summary="Declare a survey (protocol, ε, domain, open or not); returns its collection token")
def add_survey(body: SurveyIn, store: Store, token: Token) -> dict[str, Any]:
    _owner(store.catalog, token)
    if body.open_limit is not None and not body.open:
        raise InvalidParameter('open_limit is for an open survey: send "open": true with it')
    limit = (body.open_limit or DEFAULT_OPEN_LIMIT) if body.open else None
    spec = body.model_dump(exclude={"name", "open", "open_limit"}, exclude_none=True)
    return store.declare(body.name, spec, open_limit=limit)


@router.get("", summary="The declared surveys (a survey's token: its own)")
def list_surveys(store: Store, token: Token) -> list[dict[str, Any]]:
    reader = _reader(store.catalog, token)
    everyone = store.surveys()
    return everyone if isinstance(reader, Principal) else [s for s in everyone if s["name"] == reader]


@router.post("/{name}/tokens", summary="Issue one-time respondent tokens (each sends exactly one response)")
def issue_tokens(name: str, body: TokensIn, store: Store, token: Token) -> dict[str, Any]:
    _owner(store.catalog, token)
    tokens = store.issue_survey_tokens(name, body.count)
    return {"name": name, "tokens": tokens, "access": store.catalog.survey_access(name)}


def _sender(catalog: Catalog, name: str, token: str) -> Via:
    found = catalog.survey_token(token)
    if found is not None and found[0] == name:
        return found[1]
    if found is None and catalog.authenticate(token).is_owner:
        return "owner"
    raise Forbidden(
        f"this token may not add responses to survey {name!r}; use one of its respondent tokens (or its "
        "collection token if the survey is open)"
    )


@router.post("/{name}/responses", summary="Add a batch of already-randomised responses")
def add_responses(name: str, body: ResponsesIn, store: Store, token: Token) -> dict[str, Any]:
    via = _sender(store.catalog, name, token)
    most = 1 if via == "respondent" else MAX_BATCH
    if len(body.responses) > most:
        raise RequestTooLarge(
            f"a respondent token sends exactly one response, not {len(body.responses):,}"
            if via == "respondent"
            else f"{len(body.responses):,} responses in one request, more than the limit of {MAX_BATCH:,}; "
            f"send them in batches of at most {MAX_BATCH:,} (privdb survey submit and the client do)"
        )
    return store.add_responses(name, body.responses, via=via, token=token)


@router.get("/{name}", summary="The survey's spec, who may send, and its estimate per value (95% intervals)")
def survey_estimate(name: str, store: Store, token: Token) -> dict[str, Any]:
    reader = _reader(store.catalog, token)
    if isinstance(reader, str) and reader != name:
        raise Forbidden(f"this token belongs to survey {reader!r}; it reads only that survey")
    return store.survey(name)
