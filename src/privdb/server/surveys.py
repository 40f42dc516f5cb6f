"""The survey routes of the local model, as a FastAPI router over :class:`privdb.local.store.SurveyStore`.

Who may do what (docs/server.md):

- declare a survey (``POST /v1/surveys``): the owner; the answer holds the survey's collection token, once;
- add randomised responses (``POST /v1/surveys/{name}/responses``): that survey's collection token, or the
  owner;
- read a survey's spec and estimate (``GET /v1/surveys/{name}``): the owner, any analyst, and that survey's
  own collection token (its respondents fetch the protocol and ε there before randomising; another survey's
  collection token is ``forbidden``);
- list surveys (``GET /v1/surveys``): the owner and analysts see all; a collection token sees its own.

Estimates are functions of randomised responses only, each of which is ε-LDP for its sender, so any reader
may see them. The server never receives a true answer: respondents randomise on their side
(``privdb survey submit``, ``RemoteConnection.submit_survey``, or their own :mod:`privdb.local` code).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from privdb.catalog.store import Catalog, Principal
from privdb.errors import Forbidden, RawAccessDenied, Unauthorized
from privdb.local.store import SurveyStore

__all__ = ["router"]

router = APIRouter(prefix="/v1/surveys", tags=["surveys (local model)"])
_bearer = HTTPBearer(
    auto_error=False, description="the owner's, an analyst's, or a survey's collection token"
)


class SurveyIn(BaseModel):
    name: str = Field(max_length=64)
    protocol: str = Field(description="coin, alpha, flip, binary, krr, oue or olh")
    domain: list[str | int] | None = Field(default=None, description="the values people answer with")
    epsilon: float | None = None
    alpha: float | None = None
    p: float | None = None


class ResponsesIn(BaseModel):
    responses: list[Any] = Field(description="already-randomised responses, as the randomiser returned them")


def _store(request: Request) -> SurveyStore:
    return SurveyStore(request.app.state.db.catalog)


async def _token(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> str:
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized("missing token: send `Authorization: Bearer <token>`")
    return credentials.credentials.strip()


Store = Annotated[SurveyStore, Depends(_store)]
Token = Annotated[str, Depends(_token)]


def _collects(catalog: Catalog, token: str) -> str | None:
    """The survey this token collects for, if it is a collection token (one hash comparison per survey)."""
    return next((s["name"] for s in catalog.surveys() if catalog.is_collector(s["name"], token)), None)


def _reader(catalog: Catalog, token: str) -> Principal | str:
    """The owner or an analyst (a :class:`Principal`), or the name of the survey a collection token is for."""
    try:
        return catalog.authenticate(token)
    except Unauthorized:
        survey = _collects(catalog, token)
        if survey is None:
            raise
        return survey


@router.post("", summary="Declare a survey (protocol, ε, domain); returns its collection token")
def add_survey(body: SurveyIn, store: Store, token: Token) -> dict[str, Any]:
    if not store.catalog.authenticate(token).is_owner:
        raise RawAccessDenied("declaring surveys is for the database owner; use an owner token")
    return store.declare(body.name, body.model_dump(exclude={"name"}, exclude_none=True))


@router.get("", summary="The declared surveys (a collection token: its own)")
def list_surveys(store: Store, token: Token) -> list[dict[str, Any]]:
    reader = _reader(store.catalog, token)
    everyone = store.surveys()
    return everyone if isinstance(reader, Principal) else [s for s in everyone if s["name"] == reader]


@router.post("/{name}/responses", summary="Add a batch of already-randomised responses")
def add_responses(name: str, body: ResponsesIn, store: Store, token: Token) -> dict[str, Any]:
    if not store.catalog.is_collector(name, token) and not store.catalog.authenticate(token).is_owner:
        raise Forbidden(f"this token may not add responses to survey {name!r}; use its collection token")
    return store.add_responses(name, body.responses)


@router.get("/{name}", summary="The survey's spec and current estimate per value, with 95% intervals")
def survey_estimate(name: str, store: Store, token: Token) -> dict[str, Any]:
    if not store.catalog.is_collector(name, token):
        reader = _reader(store.catalog, token)
        if not isinstance(reader, Principal):
            raise Forbidden(
                f"this collection token belongs to survey {reader!r}; it reads only that survey's estimate"
            )
    return store.survey(name)
