"""privdb and the floor on one query: raw DuckDB and privdb's DP-SELECT on the same connection,
interleaved, then privdb's time by stage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.harness import timing
from bench.harness.query import ANALYST, EPS, Query, check_fresh


@dataclass
class Row:
    setting: str
    query: Query
    raw: float
    privdb: float
    smartnoise: float | None = None
    smartnoise_error: str | None = None
    parts: dict[str, float] = field(default_factory=dict)  # where privdb's time goes


def measure_privdb(db: Any, setting: str, query: Query, repeats: int) -> Row:
    """Raw DuckDB and privdb on the same connection, interleaved; then privdb's time by stage."""
    from privdb.sql import engine
    from privdb.sql.answer.noise import add_noise

    def dp(i: int) -> None:
        check_fresh(engine.run(db, ANALYST, query.dp(EPS + i * 1e-9)), EPS + i * 1e-9, query.key)

    best = timing.best_of({"raw": lambda i: db.backend.fetch(query.raw()), "privdb": dp}, repeats)
    plan, sql = engine.prepare(db, query.dp(EPS))
    frame = db.backend.fetch(sql)
    parts = timing.stages(
        best["privdb"],
        {
            "prepare": lambda i: engine.prepare(db, query.dp(EPS + i * 1e-9)),
            "engine SQL": lambda i: db.backend.fetch(sql),
            "noise": lambda i: add_noise(plan, frame),
        },
        repeats,
    )
    return Row(setting, query, best["raw"], best["privdb"], parts=parts)
