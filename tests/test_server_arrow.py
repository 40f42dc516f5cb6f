"""Answers over HTTP as Arrow streams (issue 29): a real server on a loopback port answers ``/v1/query`` with
an Arrow IPC stream when the Accept header asks for it, JSON otherwise; the stream rebuilds the same Result
as the JSON; errors stay JSON whatever was asked for; the Python client asks for Arrow by default."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pandas as pd
import pytest

import privdb
from privdb.client import RemoteConnection
from privdb.errors import BudgetExhausted, ParseError, UnknownTable
from privdb.result import Result
from privdb.result_arrow import MEDIA_TYPE, read_stream
from serverfixtures import Server, make_server_db

QUERY = (
    "DP-SELECT 2 sex, COUNT(*) AS n, AVG(age) AS mean_age, MEDIAN(income) AS mid, MODE(state) AS top "
    "FROM people GROUP BY sex"
)
ARROW = {"Accept": MEDIA_TYPE}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    path = tmp_path_factory.mktemp("arrow") / "db"
    tokens = make_server_db(path, budget=20.0)
    server = Server(path).start()
    yield server, tokens
    server.stop()


def _post(server: Server, token: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", **(headers or {})}
    return httpx.post(server.url + "/v1/query", json=body, headers=headers, timeout=60)


def test_the_arrow_stream_rebuilds_the_json_answer(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    paid = _post(server, tokens["alice"], {"sql": QUERY}, ARROW)
    assert paid.status_code == 200, paid.text
    assert paid.headers["content-type"] == MEDIA_TYPE and paid.headers["vary"] == "Accept"
    table = read_stream(paid.content)
    first = Result.from_arrow(table)
    assert table.column_names == list(first.to_pandas().columns)  # the columns of to_pandas()
    assert first.epsilon_spent == 2 and not first.cached
    assert first.budget["epsilon_remaining"] == pytest.approx(18)
    # the same query again is the stored answer (free): as JSON, and as Arrow, the very same Result
    as_json = _post(server, tokens["alice"], {"sql": QUERY})
    assert as_json.headers["content-type"] == "application/json"
    stored = Result.from_dict(as_json.json())
    again = Result.from_arrow(read_stream(_post(server, tokens["alice"], {"sql": QUERY}, ARROW).content))
    assert stored.cached and again.to_dict() == stored.to_dict()
    # the paid answer's values, intervals and other facts are the stored ones
    assert first.rows == stored.rows and first.accuracy == stored.accuracy
    assert first.extra == stored.extra
    assert {a["column"] for a in first.accuracy if a.get("ci95_rows")} == {"n", "mean_age", "mid"}
    pd.testing.assert_frame_equal(first.to_pandas(), stored.to_pandas(), check_dtype=False)


@pytest.mark.parametrize(
    ("accept", "arrow"),
    [
        (None, False),
        ("*/*", False),  # a browser's header
        ("application/json", False),
        (f"application/json, {MEDIA_TYPE};q=0.5", False),  # JSON preferred
        (f"{MEDIA_TYPE};q=0", False),
        (f"{MEDIA_TYPE}, application/json;q=0.5", True),  # the Python client's header
        (f"{MEDIA_TYPE}, */*", True),
        (f"text/html;q=0.9, {MEDIA_TYPE.upper()};q=0.8", True),
    ],
)
def test_json_is_the_default_and_arrow_only_when_asked(
    served: tuple[Server, dict[str, str]], accept: str | None, arrow: bool
) -> None:
    server, tokens = served
    response = _post(server, tokens["alice"], {"sql": QUERY}, {"Accept": accept} if accept else None)
    assert response.status_code == 200
    assert response.headers["content-type"] == (MEDIA_TYPE if arrow else "application/json")


def test_errors_stay_json_when_arrow_is_asked_for(served: tuple[Server, dict[str, str]]) -> None:
    server, tokens = served
    cases = [
        (tokens["alice"], {"sql": "DP-SELECT 1 COUNT(*) FROM"}, 400, "parse_error"),
        (tokens["alice"], {"sql": "DP-SELECT 1 COUNT(*) FROM nosuch"}, 404, "unknown_table"),
        (tokens["alice"], {"sq": "x"}, 400, "invalid_parameter"),
        ("nonsense", {"sql": QUERY}, 401, "unauthorized"),
        (tokens["owner"], {"sql": QUERY}, 403, "forbidden"),
        (tokens["bob"], {"sql": "DP-SELECT 100 COUNT(*) FROM people"}, 409, "budget_exhausted"),
        (tokens["alice"], {"sql": "x" * (17 * 2**20)}, 413, "request_too_large"),
    ]
    for token, body, status, code in cases:
        response = _post(server, token, body, ARROW)
        assert response.status_code == status, (body, response.text[:200])
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"]["code"] == code


def test_the_client_reads_arrow_by_default_and_json_on_request(
    served: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = served
    seen: list[str] = []
    query = "DP-SELECT 1 state, COUNT(*) AS n, SUM(income) AS total FROM people GROUP BY state"
    with (
        privdb.connect(server.url, token=tokens["bob"]) as bob,
        RemoteConnection(server.url, tokens["bob"], arrow=False) as plain,
    ):
        assert isinstance(bob, RemoteConnection)
        for conn in (bob, plain):
            conn._http.event_hooks["response"].append(lambda r: seen.append(r.headers["content-type"]))
        paid = bob.sql(query)
        assert seen == [MEDIA_TYPE] and paid.epsilon_spent == 1 and len(paid.rows) == 50
        stored = plain.sql(query)  # the stored answer, read from JSON
        assert seen == [MEDIA_TYPE, "application/json"]
        assert bob.sql(query).to_dict() == stored.to_dict()  # and from Arrow
        assert paid.rows == stored.rows and paid.accuracy == stored.accuracy
        with pytest.raises(ParseError):
            bob.sql("DP-SELECT 1 COUNT(*) FROM")
        with pytest.raises(BudgetExhausted):
            bob.sql("DP-SELECT 100 COUNT(*) FROM people")


def test_a_remote_answer_goes_to_polars_as_to_pandas(served: tuple[Server, dict[str, str]]) -> None:
    pytest.importorskip("polars", reason="polars is the optional extra privdb[polars]")
    server, tokens = served
    with RemoteConnection(server.url, tokens["alice"]) as conn:
        res = conn.sql(QUERY)
        frame = res.to_polars()
        assert frame.columns == list(res.to_pandas().columns)
        pd.testing.assert_frame_equal(frame.to_pandas(), res.to_pandas(), check_dtype=False)
        with pytest.raises(UnknownTable):
            conn.sql("DP-SELECT 1 COUNT(*) FROM nosuch")


def test_the_openapi_document_names_both_forms(served: tuple[Server, dict[str, str]]) -> None:
    server, _ = served
    spec = httpx.get(server.url + "/openapi.json", timeout=30).json()
    content = spec["paths"]["/v1/query"]["post"]["responses"]["200"]["content"]
    assert set(content) == {"application/json", MEDIA_TYPE}
