"""The truncation estimate and the ``covers`` label on neighbouring tables: one person with many visits (far
over the bound) in or out. What the analyst observes besides the noisy values (the answer's fields, its
columns and rows, the label) is the same on both; only the noisy count moves, and by at most its
sensitivity of 1 in the engine's count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from adversarial.neighbours import neighbours
from privdb.sql import engine
from privdb.sql.engine import prepare
from privdb.sql.plan.truncation import COLUMN, units_over
from privdb.sql.run.targets import histogram_queries as queries_of

META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 2,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int"},
        "stay": {"type": "int", "lower": 0, "upper": 30},
        "ward": {"type": "text", "values": ["a", "b", "c"]},
    },
}
QUERIES = [
    "DP-SELECT 1 COUNT(*) FROM people",
    "DP-SELECT 1 AVG(stay) FROM people WHERE stay > 3",
    "DP-SELECT 1 ward, SUM(stay) FROM people GROUP BY ward",
    "DP-SELECT 1 DELTA 1e-6 stay, COUNT(*) FROM people GROUP BY stay",
    "DP-SELECT 1 MEDIAN(stay) FROM people",
    "DP-SELECT 1 COUNT(DISTINCT ward) FROM people",
]


def _visits(n: int = 300, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(n), rng.integers(1, 4, size=n))
    return pd.DataFrame(
        {
            "pid": pid,
            "stay": rng.integers(0, 31, size=pid.size),
            "ward": rng.choice(["a", "b", "c"], pid.size),
        }
    )


def _heavy() -> list[dict[str, Any]]:
    """One person (pid 9999) with 40 visits in every ward."""
    return [{"pid": 9999, "stay": i % 31, "ward": "abc"[i % 3]} for i in range(40)]


def _pair(tmp_path: Path) -> Any:
    return neighbours(tmp_path, _visits(), _heavy(), META)  # the table is named people


@pytest.mark.parametrize("query", QUERIES)
def test_same_fields_and_rows_on_neighbours(tmp_path: Path, query: str) -> None:
    pair = _pair(tmp_path)
    try:
        shapes = []
        for db in pair.both():
            out = engine.run(db, "eve", query).to_dict()
            accuracy_keys = [sorted(a) for a in out["accuracy"]]
            shapes.append(
                (
                    sorted(out),
                    out["columns"],
                    len(out["rows"]),
                    out["covers"],
                    sorted(out["truncation"]),
                    [a["covers"] for a in out["accuracy"]],
                    accuracy_keys,
                    out["truncation"]["epsilon"],
                    out["truncation"]["what"],
                )
            )
        assert shapes[0] == shapes[1], query
    finally:
        pair.close()


@pytest.mark.parametrize("query", QUERIES)
def test_the_engine_count_moves_by_at_most_one(tmp_path: Path, query: str) -> None:
    """The sensitivity the estimate's noise assumes: the heavy person changes the engine's count of units
    over the bound by exactly 1 (they are over it) and never by more."""
    pair = _pair(tmp_path)
    try:
        counts = []
        for db in pair.both():
            plan, sql = prepare(db, query)
            backend, _ = db.backend_for("people")
            extra = queries_of(db, plan)
            source = backend.fetch(extra["(truncation)"]) if "(truncation)" in extra else backend.fetch(sql)
            assert COLUMN in source
            counts.append(units_over(source))
        assert counts[1] - counts[0] == 1, (query, counts)
    finally:
        pair.close()
