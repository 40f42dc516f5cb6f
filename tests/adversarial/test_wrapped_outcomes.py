"""DP queries inside plain SQL, and plain aggregates at a session ε, on two neighbouring databases (Alice
out, Alice in): what eve observes besides the noisy values is the same on both, refusals spend nothing, and
the ledger is charged exactly the inner queries' ε (docs/proofs/sql.md, "DP queries inside plain SQL")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adversarial.neighbours import Neighbours, neighbours
from privdb.errors import PrivdbError
from privdb.sql import engine
from privdb.sql.public.wrapped import Session

AT = Session(epsilon=0.5)
CASES: list[tuple[str, Session | None]] = [
    ("SELECT n FROM (DP-SELECT 1 COUNT(*) AS n FROM people WHERE disease = 'HIV') AS vt LIMIT 5", None),
    ("WITH c AS (DP-SELECT 1 AVG(income) AS m, COUNT(*) AS n FROM people) SELECT m / n AS r FROM c", None),
    ("SELECT * FROM (DP-SELECT 1 COUNT(*) AS a FROM people) x, (DP-SELECT 1 SUM(visits) AS b FROM people) y",
     None),
    ("SELECT COUNT(*), AVG(income) FROM people WHERE disease = 'HIV'", AT),
    ("SELECT avg FROM (SELECT AVG(age) FROM public.people) AS virtual_table LIMIT 1001", AT),
    ('SELECT AVG(income) AS "AVG(income)" FROM (SELECT * FROM people WHERE age > 30) AS virtual_table', AT),
    # refused before any read, the same way on both
    ("SELECT * FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x, people", None),
    ("SELECT * FROM people", AT),
    ("SELECT name, COUNT(*) FROM people GROUP BY name", AT),
    ("SELECT repeat(CAST(n AS VARCHAR), 1000000000) FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x", None),
    ("SELECT * FROM (DP-SELECT 1 COUNT(*) AS n FROM people) x, (DP-SELECT 1 nope FROM people) y", None),
    ("SELECT n FROM (DP-SELECT 5000 COUNT(*) AS n FROM people) x", None),  # past the budget
]  # fmt: skip


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Neighbours]:
    dbs = neighbours(tmp_path)
    yield dbs
    dbs.close()


def _observe(pair: Neighbours, query: str, session: Session | None) -> list[tuple[Any, ...]]:
    seen = []
    for db in pair.both():
        before = db.budget("eve").epsilon_spent
        try:
            result = engine.run(db, "eve", query, session)
            seen.append(("answered", tuple(result.columns), len(result.rows), result.epsilon_spent))
        except PrivdbError as err:
            seen.append(("error", err.code, err.message))
        spent = db.budget("eve").epsilon_spent - before
        seen[-1] += (round(float(spent), 9),)
    return seen


@pytest.mark.parametrize(("query", "session"), CASES)
def test_the_same_outcome_and_charge_on_both_neighbours(
    pair: Neighbours, query: str, session: Session | None
) -> None:
    first, second = _observe(pair, query, session)
    assert first == second, f"{query}\n  without: {first}\n  with:    {second}"
    assert first[1] not in ("internal_error", "query_failed"), first
    if first[0] == "answered":
        assert first[-1] == pytest.approx(first[3])  # the ledger: exactly the inner queries' ε
    else:
        assert first[-1] == 0  # refused before reading: nothing spent
