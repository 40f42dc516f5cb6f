"""A database whose query ``SLOW`` reads for seconds (md5 thrice per row): for tests that interrupt, kill or
watch a command while DuckDB reads (tests/test_interrupt.py, tests/test_warm.py)."""

from __future__ import annotations

from pathlib import Path

from privdb.database import Database

#: A COUNT whose WHERE costs three md5 per row; ``{}`` is its ε (vary it: an equal query is a stored answer).
SLOW = "DP-SELECT {} COUNT(*) FROM people WHERE md5(md5(md5(CAST(income + age AS VARCHAR)))) LIKE 'a%'"


def slow_people(path: Path, rows: int, epsilon: float) -> Path:
    """``rows`` people (age, income; one row each) at ``path`` and the analyst ``eve`` with ``epsilon``."""
    with Database(path) as db:
        db.backend.raw(
            "CREATE TABLE people AS SELECT range AS pid, (range * 7919) % 90 AS age, "
            f"(range * 104729) % 100000 AS income FROM range({int(rows)})"
        )
        columns = {"age": {"type": "int", "lower": 0, "upper": 100},
                   "income": {"type": "int", "lower": 0, "upper": 100000}}  # fmt: skip
        db.set_metadata("people", {"columns": columns})
        db.grant("eve", epsilon=epsilon)
    return path
