"""Issue 26's HAVING and ORDER BY typing on neighbouring databases: refusals of a text key meeting a number,
answers of text stored as numbers, ORDER BY expressions and an aggregate selected twice end the same way
whether or not Alice (with a disease outside every domain) is in the data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from adversarial.neighbours import ALICE, PEOPLE_META, Neighbours, neighbours, people, same_outcome

META: dict[str, Any] = {
    "columns": {
        **PEOPLE_META["columns"],
        "disease": {"type": "category", "values": ["flu", "cold", "none"]},
        "code": {"type": "text"},  # stored as integers: a SmartNoise `string` of codes
    }
}
QUERIES = [
    ("DP-SELECT 1 disease, COUNT(*) FROM people GROUP BY disease HAVING disease = 1", "error"),
    ("DP-SELECT 1 disease, COUNT(*) FROM people GROUP BY disease HAVING disease", "error"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE disease = 1", "error"),
    ("DP-SELECT 1 DELTA 1e-6 code, COUNT(*) FROM people GROUP BY code HAVING code = 1", "answered"),
    ("DP-SELECT 1 COUNT(*) FROM people WHERE code = 1 AND NOT (code = TRUE)", "answered"),
    ("DP-SELECT 1 disease, COUNT(*) AS n FROM people GROUP BY disease ORDER BY -n", "answered"),
    ("DP-SELECT .5 COUNT(*), COUNT(*) AS again, AVG(age), AVG(age) FROM people", "answered"),
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    frame = people()
    frame["code"] = frame["age"] % 3
    made = neighbours(tmp_path_factory.mktemp("typed"), frame, dict(ALICE, code=2), META)
    yield made
    made.close()


@pytest.mark.parametrize(("query", "ends"), QUERIES)
def test_typed_postprocessing_ends_alike_on_neighbours(pair: Neighbours, query: str, ends: str) -> None:
    found = same_outcome(pair, query)
    assert found[0] == ends, found
