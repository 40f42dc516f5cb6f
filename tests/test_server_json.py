"""/v1/query writes its answer to JSON itself (sparing FastAPI's validation hand-off): the bytes are those
FastAPI writes for the same dict, whatever the values (NaN, infinities, dates, text)."""

from __future__ import annotations

import datetime
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from privdb.server.negotiate import _JSON

ANSWERS: list[dict[str, Any]] = [
    {"columns": ["n"], "rows": [[12]], "epsilon_spent": 0.5, "budget": {"epsilon_remaining": 9.5}},
    {"rows": [[float("nan"), float("inf"), -float("inf"), -0.0, 1e-300, 2**70]]},
    {"rows": [[datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 1, 12, 30, 5, 123456), None, True]]},
    {"columns": ["é", "\u2603", 'a"b\\c'], "rows": [["Zürich", "\n\t", ""]], "extra": {"nested": [[{}]]}},
]


def test_the_answer_bytes_are_fastapis() -> None:
    app = FastAPI()
    answer: dict[str, Any] = {}

    @app.get("/a")
    def route() -> dict[str, Any]:
        return answer

    client = TestClient(app)
    for value in ANSWERS:
        answer.clear()
        answer.update(value)
        assert client.get("/a").content == _JSON.dump_json(value)
