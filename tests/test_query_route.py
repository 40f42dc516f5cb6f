"""``POST /v1/query`` is a plain Starlette route (privdb.server.queryroute), not FastAPI's: every malformed
request still gets what FastAPI gave it (status, code, message, in the same order of checks: the body's JSON,
then the token, then the body's shape), the answer its headers, other methods 405, and the OpenAPI
document still describes the endpoint. A real server on a real port."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from serverfixtures import Server, make_server_db

QUERY = "DP-SELECT 0.1 COUNT(*) FROM people"
NOT_AN_OBJECT = "body: Input should be a valid dictionary or object to extract fields from"
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("route") / "db"
    tokens = make_server_db(path, people=200, budget=50.0)
    server = Server(path).start()
    yield server, tokens
    server.stop()


# (name, who, request keywords, status, code, the end of the message) — what FastAPI's route answered
CASES: list[tuple[str, str | None, dict[str, Any], int, str, str]] = [
    ("no token", None, {"json": {"sql": QUERY}}, 401, "unauthorized", "(from `privdb grant`)"),
    ("bad JSON before the token", None, {"content": b"{bad", "headers": JSON}, 400, "invalid_parameter",
     "the request does not fit the API: 1: JSON decode error"),
    ("bad JSON", "alice", {"content": b"{bad", "headers": JSON}, 400, "invalid_parameter",
     "1: JSON decode error"),
    ("no body", "alice", {}, 400, "invalid_parameter", "body: Field required"),
    ("a list", "alice", {"json": [1]}, 400, "invalid_parameter", NOT_AN_OBJECT),
    ("null", "alice", {"content": b"null", "headers": JSON}, 400, "invalid_parameter", NOT_AN_OBJECT),
    ("sql not text", "alice", {"json": {"sql": 3}}, 400, "invalid_parameter",
     "sql: Input should be a valid string"),
    ("no sql", "alice", {"json": {"x": 3}}, 400, "invalid_parameter", "sql: Field required"),
    ("text/plain", "alice", {"content": b'{"sql": "x"}', "headers": {"content-type": "text/plain"}}, 400,
     "invalid_parameter", NOT_AN_OBJECT),
    ("no content type", "alice", {"content": b'{"sql": "x"}'}, 400, "invalid_parameter", NOT_AN_OBJECT),
    ("not UTF-8", "alice", {"content": b'{"sql": "\xff"}', "headers": JSON}, 400, "invalid_parameter",
     "There was an error parsing the body"),
    ("the owner", "owner", {"json": {"x": 1}}, 403, "forbidden", "or run raw SQL with POST /v1/sql"),
    ("unknown token", "nobody", {"json": {"sql": QUERY}}, 401, "unauthorized", "(Authorization: Bearer …)"),
    ("parse error", "alice", {"json": {"sql": "DP-SELECT"}}, 400, "parse_error", ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "who", "request_args", "status", "code", "ending"), CASES, ids=[c[0] for c in CASES]
)
def test_malformed_requests_get_what_fastapi_gave(
    served: tuple[Server, dict[str, str]],
    name: str,
    who: str | None,
    request_args: dict[str, Any],
    status: int,
    code: str,
    ending: str,
) -> None:
    server, tokens = served
    request_args = dict(request_args)
    headers = dict(request_args.pop("headers", {}))
    if who is not None:
        headers["Authorization"] = f"Bearer {tokens.get(who, 'not-a-token')}"
    response = httpx.post(server.url + "/v1/query", headers=headers, timeout=30, **request_args)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"].endswith(ending), error
    assert (response.headers.get("www-authenticate") == "Bearer") == (code == "unauthorized")


def test_answers_negotiate_and_other_methods_are_refused(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    auth = {"Authorization": f"Bearer {tokens['alice']}"}
    answer = httpx.post(server.url + "/v1/query", json={"sql": QUERY, "extra": 1}, headers=auth, timeout=30)
    assert answer.status_code == 200 and answer.headers["vary"] == "Accept"
    assert answer.headers["content-type"] == "application/json" and answer.json()["epsilon_spent"] == 0.1
    arrow = {"accept": "application/vnd.apache.arrow.stream"}
    streamed = httpx.post(server.url + "/v1/query", json={"sql": QUERY}, headers=auth | arrow, timeout=30)
    assert streamed.headers["content-type"] == "application/vnd.apache.arrow.stream"
    assert streamed.headers["vary"] == "Accept"
    refused = httpx.get(server.url + "/v1/query", headers=auth, timeout=30)
    assert refused.status_code == 405 and refused.json()["error"]["code"] == "method_not_allowed"
    schema = httpx.get(server.url + "/openapi.json", timeout=30).json()
    post = schema["paths"]["/v1/query"]["post"]
    assert "application/vnd.apache.arrow.stream" in post["responses"]["200"]["content"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/QueryIn")
