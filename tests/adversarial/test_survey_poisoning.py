"""Issue 25, "Privacy at the seams": surveys that resist poisoning, and text that is not Unicode.

Finding (medium): anyone holding a survey's collection token could push its estimate anywhere (shares of
−1.16 from 2,000 empty OUE reports at ε = 1) and send 700,000 responses in one request. Now:

- a survey is closed unless its owner opens it; one-time respondent tokens add exactly one response each,
  also when many requests race with one token on a two-worker server;
- every response is checked against what the randomiser can output, so a crafted value is refused and the
  responses that are taken move an estimate by their number only: each adds between ``response_range``'s
  two ends to every count (the 2,000-report attack above uses honest-looking empty reports: only the
  count limit stops it, and it does);
- at most ``MAX_BATCH`` responses per request (413) and ``OPEN_RATE`` per window per collection token (429),
  in the standard error JSON with the limit and what to do in the message.

Finding (low): a lone surrogate (a JSON ``"\\ud800"`` escape) in a query was an HTTP 500 missing from the
log; in any other text field it was a 500 or a stored survey no one could read. Now it is a 400
``parse_error`` (logged as a refusal) or ``invalid_parameter``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from conftest import seeded
from privdb.errors import InvalidParameter
from privdb.local.limits import MAX_BATCH, OPEN_RATE
from privdb.local.survey import Survey
from serverfixtures import Server, make_server_db

OUE = {"protocol": "oue", "epsilon": 1.0, "domain": ["A", "B", "C"]}
OLH = {"protocol": "olh", "epsilon": 1.0, "domain": ["A", "B", "C", "D", "E"]}
CRAFTED: dict[str, tuple[dict[str, Any], list[Any]]] = {
    "coin": ({"protocol": "coin"}, [2, -1, "maybe", True, 1.0, None, ["yes"], {"yes": 1}, "YES", 0]),
    "coin coded": ({"protocol": "coin", "domain": [0, 1]}, [True, False, 1.0, "1", 2, -1, [1], None]),
    "krr": (
        {"protocol": "krr", "epsilon": 1.0, "domain": [1, 2, 3]},
        [0, 4, "1", 1.0, True, 2**70, -(2**70), [1], None, 1.5],
    ),
    "oue": (
        OUE,
        [["A", "A"], ["D"], "A", [["A"]], [True], ["A", "B", "C", "A"], [None], {"A": 1}, ["A", 1]],
    ),
    "olh": (
        OLH,
        [
            [0, 0, 0],
            [5, 0, 0],
            [1, 5, 0],
            [1, 0, 4],
            [1, 0, -1],
            [2**70, 0, 0],
            [True, 0, 0],
            [1, 0],
            [1, 0, 0, 0],
            [1.0, 0, 0],
            "1,0,0",
            [1, 0, None],
        ],
    ),  # OLH at ε = 1 over 5 values: P = 5, g = 4
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_every_crafted_response_is_refused_and_every_honest_one_taken(case: str) -> None:
    """Each response no randomiser of the survey can output is refused on its own, counted and never
    echoed; what the randomiser does output is taken."""
    spec, crafted = CRAFTED[case]
    survey = Survey(spec)
    honest = survey.randomize(survey.domain * 50, rng=seeded(1))
    assert survey.support(honest)[1] == len(honest)
    for response in crafted:
        with pytest.raises(InvalidParameter, match="1 of 1 responses are not") as refused:
            survey.support([response])
        assert json.dumps(response) not in refused.value.message.split("(")[0]
    with pytest.raises(InvalidParameter, match=f"{len(crafted)} of {len(crafted) + 3} responses"):
        survey.support([*honest[:3], *crafted])


@pytest.mark.parametrize("spec", [OUE, OLH, {"protocol": "krr", "epsilon": 0.5, "domain": list("abcdefgh")},
                                  {"protocol": "coin"}])  # fmt: skip
def test_a_response_moves_a_count_only_within_its_range(spec: dict[str, Any]) -> None:
    """Whatever valid responses an attacker picks, each adds to every count estimate between the ends of
    ``response_range`` (checked on the most harmful single responses the randomiser could send), and the
    ends are reached: the bound is exact, not loose."""
    survey = Survey(spec)
    lo, hi = survey.response_range()
    candidates = survey.randomize(survey.domain * 200, rng=seeded(2))
    if spec["protocol"] == "oue":
        candidates += [[], list(survey.domain)]  # the extreme reports: every bit off, every bit on
    seen_lo, seen_hi = np.inf, -np.inf
    for response in candidates:
        support, n = survey.support([response])
        counts = np.array([e["count"] for e in survey.estimate(support, n)["estimates"]])
        assert (counts >= lo - 1e-9).all() and (counts <= hi + 1e-9).all()
        seen_lo, seen_hi = min(seen_lo, counts.min()), max(seen_hi, counts.max())
    assert seen_lo == pytest.approx(lo) and seen_hi == pytest.approx(hi)
    if spec == OUE:  # the finding's −1.16: the share of every value after empty reports only
        assert lo == pytest.approx(-1.164, abs=1e-3)


# ------------------------------------------------------------------------------------ over the server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("poisoning") / "db"
    tokens = make_server_db(path, people=100)
    server = Server(path, workers=2).start()  # two processes: limits must hold across workers
    try:
        yield server, tokens
    finally:
        server.stop()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _declare(server: Server, owner: str, name: str, spec: dict[str, Any], **access: Any) -> str:
    made = httpx.post(server.url + "/v1/surveys", json={"name": name, **spec, **access}, headers=_auth(owner))
    assert made.status_code == 200, made.text
    return str(made.json()["collect_token"])


def _send(server: Server, token: str, name: str, responses: list[Any]) -> httpx.Response:
    return httpx.post(
        server.url + f"/v1/surveys/{name}/responses", json={"responses": responses}, headers=_auth(token),
        timeout=60,
    )  # fmt: skip


def _survey(server: Server, token: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(server.url + f"/v1/surveys/{name}", headers=_auth(token)).json()
    return found


def _error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert (
        set(body) == {"error"} and set(body["error"]) == {"code", "message"} and body["error"]["code"] == code
    )
    return str(body["error"]["message"])


def test_the_findings_attack_is_refused_on_a_default_survey(served: tuple[Server, dict[str, str]]) -> None:
    """The finding, replayed: 2,000 empty OUE reports from the collection token. A survey is closed by
    default, so none is taken and the estimate stays the honest one."""
    server, tokens = served
    collect = _declare(server, tokens["owner"], "finding", OUE)
    honest = Survey(OUE).randomize(["A"] * 300 + ["B"] * 200 + ["C"] * 100, rng=seeded(3))
    assert _send(server, tokens["owner"], "finding", honest).status_code == 200
    before = _survey(server, tokens["alice"], "finding")
    message = _error(_send(server, collect, "finding", [[]] * 1000), 403, "forbidden")
    assert "closed" in message and "respondent token" in message
    after = _survey(server, tokens["alice"], "finding")
    assert after["estimates"] == before["estimates"] and after["n"] == 600
    assert min(e["share"] for e in after["estimates"]) > -0.3  # honest noise, nowhere near −1.16


def test_an_open_survey_bounds_poisoning_by_count(served: tuple[Server, dict[str, str]]) -> None:
    """An open survey's collection token adds at most its limit, m; the most harmful valid responses then
    move each count by at most m times ``response_range`` (exactly: support counts are deterministic), and
    one response more is refused with 409 ``limit_reached``, nothing of the batch kept."""
    server, tokens = served
    m = 200
    collect = _declare(server, tokens["owner"], "open_oue", OUE, open=True, open_limit=m)
    survey = Survey(OUE)
    honest = survey.randomize(["A"] * 600 + ["B"] * 300 + ["C"] * 100, rng=seeded(4))
    assert _send(server, tokens["owner"], "open_oue", honest).status_code == 200
    clean = {e["value"]: e["count"] for e in _survey(server, tokens["alice"], "open_oue")["estimates"]}
    assert _send(server, collect, "open_oue", [[]] * m).status_code == 200  # the attack, within the limit
    message = _error(_send(server, collect, "open_oue", [[]]), 409, "limit_reached")
    assert f"{m:,}" in message and "nothing was added" in message
    found = _survey(server, tokens["alice"], "open_oue")
    lo, hi = found["response_range"]
    assert found["n"] == len(honest) + m and found["access"]["open_responses"] == m
    for e in found["estimates"]:
        assert clean[e["value"]] + m * lo - 1e-6 <= e["count"] <= clean[e["value"]] + m * hi + 1e-6
        assert e["count"] == pytest.approx(clean[e["value"]] + m * lo)  # empty reports: the lower end


def test_one_response_per_respondent_token_even_when_requests_race(
    served: tuple[Server, dict[str, str]],
) -> None:
    """Sixteen simultaneous submissions with one respondent token, on two server processes: one is taken
    (200), the others are 409 ``limit_reached``; the survey holds one response. A batch of two is 413."""
    server, tokens = served
    _declare(server, tokens["owner"], "race", {"protocol": "coin"})
    issued = httpx.post(
        server.url + "/v1/surveys/race/tokens", json={"count": 3}, headers=_auth(tokens["owner"])
    )
    assert issued.status_code == 200, issued.text
    first, second, third = issued.json()["tokens"]
    barrier = threading.Barrier(16)

    def one(_: int) -> int:
        with httpx.Client(headers=_auth(first), timeout=60) as client:
            client.get(server.url + "/healthz")  # connected before the race starts
            barrier.wait()
            return client.post(
                server.url + "/v1/surveys/race/responses", json={"responses": ["yes"]}
            ).status_code

    with ThreadPoolExecutor(16) as pool:
        statuses = sorted(pool.map(one, range(16)))
    assert statuses == [200] + [409] * 15
    assert _survey(server, tokens["owner"], "race")["n"] == 1
    message = _error(_send(server, second, "race", ["yes", "no"]), 413, "request_too_large")
    assert "exactly one response" in message
    _error(_send(server, second, "race", ["maybe"]), 400, "invalid_parameter")  # a bad one uses nothing …
    assert _send(server, second, "race", ["no"]).status_code == 200  # … the token still sends its one
    _error(_send(server, third, "finding", ["yes"]), 403, "forbidden")  # another survey's: no
    found = _survey(server, third, "race")  # a respondent reads its own survey's spec and estimate
    assert found["n"] == 2 and found["access"]["respondent_tokens"] == 3
    assert found["access"]["respondent_tokens_used"] == 2
    _error(httpx.get(server.url + "/v1/surveys/finding", headers=_auth(third)), 403, "forbidden")
    for who in ("alice", "bob"):  # only the owner issues tokens
        refused = httpx.post(
            server.url + "/v1/surveys/race/tokens", json={"count": 1}, headers=_auth(tokens[who])
        )
        assert refused.status_code == 403
    zero = httpx.post(
        server.url + "/v1/surveys/race/tokens", json={"count": 0}, headers=_auth(tokens["owner"])
    )
    _error(zero, 400, "invalid_parameter")


def test_batch_and_rate_limits(served: tuple[Server, dict[str, str]]) -> None:
    """More than ``MAX_BATCH`` responses in a request: 413 for any token (the finding's 700,000 too); more
    than ``OPEN_RATE`` per window from a collection token: 429 with Retry-After. Nothing refused is kept."""
    server, tokens = served
    collect = _declare(server, tokens["owner"], "flood", {"protocol": "coin"}, open=True, open_limit=100_000)
    for token in (collect, tokens["owner"]):
        message = _error(_send(server, token, "flood", ["yes"] * (MAX_BATCH + 1)), 413, "request_too_large")
        assert f"{MAX_BATCH:,}" in message and "batches" in message
    huge = _send(server, collect, "flood", ["no"] * 700_000)
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "request_too_large"
    for _ in range(OPEN_RATE // MAX_BATCH):
        assert _send(server, collect, "flood", ["yes"] * MAX_BATCH).status_code == 200
    limited = _send(server, collect, "flood", ["yes"])
    message = _error(limited, 429, "rate_limited")
    assert f"{OPEN_RATE:,}" in message and "send again in" in message
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert _send(server, tokens["owner"], "flood", ["no"]).status_code == 200  # the owner has no rate
    assert _survey(server, tokens["owner"], "flood")["n"] == OPEN_RATE + 1


# ---------------------------------------------------------------------- text that is not Unicode

SURROGATE = "\\ud800"  # as JSON writes it: the six characters of the escape


def _raw(server: Server, token: str, method: str, path: str, body: str) -> httpx.Response:
    headers = _auth(token) | {"Content-Type": "application/json"}
    return httpx.request(method, server.url + path, content=body.encode(), headers=headers, timeout=60)


def test_a_lone_surrogate_in_a_query_is_a_logged_parse_error(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    query = f"DP-SELECT 1 COUNT(*) FROM people WHERE sex = '{SURROGATE}'"
    for path in ("/v1/query", "/v1/explain"):
        body = json.dumps({"sql": "X"}).replace("X", query)
        message = _error(_raw(server, tokens["alice"], "POST", path, body), 400, "parse_error")
        assert "not Unicode text" in message and "U+D800" in message
    log = httpx.get(server.url + "/v1/log?order=desc&limit=1", headers=_auth(tokens["alice"])).json()
    assert log[0]["outcome"] == "refused" and log[0]["code"] == "parse_error"
    assert log[0]["query"].endswith("sex = '\\ud800'")  # the surrogate as its escape
    budget = httpx.get(server.url + "/v1/budget", headers=_auth(tokens["alice"])).json()
    assert budget["epsilon_remaining"] == 5.0  # spent nothing


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/surveys", {"name": "s", "protocol": "krr", "epsilon": 1, "domain": ["a", "@S@"]}),
        ("POST", "/v1/surveys", {"name": "@S@", "protocol": "coin"}),
        ("POST", "/v1/surveys/race/responses", {"responses": ["@S@"]}),
        ("POST", "/v1/surveys/open_oue/responses", {"responses": [["A", "@S@"]]}),
        ("POST", "/v1/surveys/race/tokens", {"count": 1, "@S@": 1}),
        ("POST", "/v1/analysts", {"name": "@S@", "epsilon": 1}),
        ("POST", "/v1/analysts", {"name": "carol", "epsilon": 1, "tables": ["@S@"]}),
        ("POST", "/v1/analysts", {"name": "carol", "epsilon": 1, "group": "@S@"}),
        ("POST", "/v1/tables", {"name": "t", "csv": "a\n@S@\n"}),
        ("POST", "/v1/sql", {"sql": "SELECT '@S@'"}),
        ("POST", "/v1/publish", {"method": "histogram", "table": "t", "options": {"columns": [["@S@"]]}}),
        ("POST", "/v1/attachments", {"name": "t", "engine": "sqlite:///@S@.db", "metadata": {"@S@": {}}}),
    ],
)
def test_a_lone_surrogate_in_any_other_field_is_invalid_parameter(
    served: tuple[Server, dict[str, str]], method: str, path: str, body: dict[str, Any]
) -> None:
    server, tokens = served
    text = json.dumps(body).replace("@S@", SURROGATE)  # a JSON escape of half a surrogate pair
    assert SURROGATE in text
    message = _error(_raw(server, tokens["owner"], method, path, text), 400, "invalid_parameter")
    assert "not Unicode text" in message or "unicode" in message.lower()
    listed = httpx.get(server.url + "/v1/surveys", headers=_auth(tokens["owner"]))
    assert listed.status_code == 200  # nothing unreadable was stored


def test_the_library_refuses_a_surrogate_query_and_logs_it(tmp_path: Path) -> None:
    """The same refusal without the server (a CLI argument decoded with surrogateescape gives such text)."""
    from privdb.database import Database
    from privdb.errors import ParseError
    from privdb.sql import engine

    make_server_db(tmp_path / "db", people=50)
    with Database(tmp_path / "db") as db:
        for text in ("DP-SELECT 1 COUNT(*) FROM people WHERE sex = '\udcff'", "SELECT '\ud800'"):
            with pytest.raises(ParseError, match="not Unicode text"):
                engine.run(db, "alice", text)
        logged = db.log("alice")
    assert [e["code"] for e in logged] == ["parse_error", "parse_error"]
    assert "\\udcff" in logged[0]["query"]
