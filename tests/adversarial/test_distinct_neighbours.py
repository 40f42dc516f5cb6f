"""COUNT(DISTINCT) on tables privdb loaded, one person in or out (issue 40's distinct form): units with
at most ``m`` rows give their values without the draw, larger units have their distinct pairs drawn.
Whichever side of that split the person falls, small or far over the bound, holding values nobody else
holds or only shared ones, the engine's count before noise moves by at most ``m`` in all and in at most
``G`` groups: the sensitivity the noise is calibrated to. (Large units elsewhere draw independently on each
side, so the others are kept within the split's bound here: their values are the same on both sides.)
What the analyst sees besides the noisy values is the same on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from adversarial.neighbours import Neighbours, same_outcome
from privdb.backends.names import unit_rows_column
from privdb.database import Database
from privdb.sql.engine import prepare
from privdb.sql.run.targets import histogram_queries

M, G = 3, 1
ITEMS = [f"i{i}" for i in range(40)]
META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": M,
    "max_groups": G,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "ward": {"type": "category", "values": ["a", "b", "c"]},
        "item": {"type": "text"},
    },
}
QUERIES = [
    "DP-SELECT 1 COUNT(DISTINCT item) FROM people",
    "DP-SELECT 1 ward, COUNT(DISTINCT item) FROM people GROUP BY ward",
]


def _base(most: int, n: int = 200, seed: int = 5) -> pd.DataFrame:
    """Units of 1 to ``most`` rows over 40 items and three wards."""
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(n), rng.integers(1, most + 1, size=n))
    return pd.DataFrame(
        {"pid": pid, "ward": rng.choice(["a", "b", "c"], pid.size), "item": rng.choice(ITEMS, pid.size)}
    )


def _person(rows: int, new_items: bool) -> list[dict[str, Any]]:
    """Person 9999 with ``rows`` rows over every ward, items nobody else holds or items everybody holds."""
    item = (lambda i: f"only-{i}") if new_items else (lambda i: ITEMS[i % 5])
    return [{"pid": 9999, "ward": "abc"[i % 3], "item": item(i)} for i in range(rows)]


PEOPLE = {
    "small, new items": _person(2, True),
    "at the bound, new items": _person(M, True),
    "one over the bound, new items": _person(M + 1, True),
    "far over the bound, new items": _person(60, True),
    "far over the bound, shared items": _person(60, False),
}


def _pair(tmp_path: Path, extra: list[dict[str, Any]], most: int) -> Neighbours:
    base = _base(most)
    dbs = []
    for name, frame in (("without", base), ("with", pd.concat([base, pd.DataFrame(extra)]))):
        data = tmp_path / f"{name}.parquet"
        frame.to_parquet(data)
        db = Database(tmp_path / name)
        db.load("people", data, META)  # the owner's load: the hidden per-unit row count is written
        db.grant("eve", epsilon=1_000, delta=1e-3)
        dbs.append(db)
    return Neighbours(dbs[0], dbs[1])


def _engine_counts(db: Database, query: str) -> dict[tuple[Any, ...], int]:
    """The engine's distinct counts per group, before noise, as privdb sends the query."""
    plan, _ = prepare(db, query)
    sql = histogram_queries(db, plan)["s0"]
    assert unit_rows_column("pid") in sql  # the small-unit split is what runs
    frame = db.backend.fetch(sql)
    keys = [c for c in frame.columns if c.startswith("k")]
    return {tuple(row[k] for k in keys): int(row["n"]) for _, row in frame.iterrows()}


@pytest.mark.parametrize("who", list(PEOPLE))
@pytest.mark.parametrize("query", QUERIES)
def test_the_distinct_count_moves_by_at_most_m_in_at_most_g_groups(
    tmp_path: Path, who: str, query: str
) -> None:
    # everyone else within the split's bound (m rows ungrouped, min(m, G) grouped): their values are kept
    # without a draw, the same on both sides, so the only randomness is the person's own draw and the two
    # runs are coupled as the proof couples them (docs/proofs/sql.md, "Distinct counts")
    pair = _pair(tmp_path, PEOPLE[who], most=min(M, G) if "GROUP BY" in query else M)
    try:
        for _ in range(5):  # the draw of large units' pairs differs per run: the bound holds for each
            without, with_ = (_engine_counts(db, query) for db in pair.both())
            groups = set(without) | set(with_)
            moves = {g: with_.get(g, 0) - without.get(g, 0) for g in groups}
            moved = {g: d for g, d in moves.items() if d != 0}
            assert all(d > 0 for d in moved.values()), (who, moved)  # a person only adds values
            assert sum(abs(d) for d in moved.values()) <= M and len(moved) <= G, (who, moved)
            if "new items" in who and "GROUP BY" not in query:
                assert sum(moved.values()) == min(M, len(PEOPLE[who])), (who, moved)  # all of its values
        same_outcome(pair, query)
    finally:
        pair.close()
