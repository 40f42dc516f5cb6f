"""One query's time by stage in one thread (no HTTP), the embedded API, TRY()'s cost, and the disk's fsync."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.harness.query import ANALYST, EPS, Query
from bench.harness.timing import nearest_rank as quantile
from bench.server.spec import QUERY_TIMEOUT, TABLE, Epsilons, check_fresh

if TYPE_CHECKING:
    from privdb.accounting.ledger import Reservation
    from privdb.accounting.sqlstore import Cursor
    from privdb.database import Database


@dataclass
class Stages:
    """Median ms of each part of one query, each timed alone in one thread."""

    setting: str
    query: Query
    ms: dict[str, float]
    raw_ms: float  # the plain aggregate on the same connection, not private: the engine's floor


def run_embedded(db_dir: Path, query: Query, epsilons: Epsilons, n: int) -> list[float]:
    """``privdb.connect(DIR, analyst=…).sql(…)`` ``n`` times in this thread (after 3 untimed)."""
    import privdb

    out = []
    with privdb.connect(db_dir, analyst=ANALYST) as con:
        for i in range(n + 3):
            epsilon = epsilons.next()
            t0 = time.perf_counter()
            result = con.sql(query.dp(epsilon))
            elapsed = time.perf_counter() - t0
            check_fresh(result.to_dict(), epsilon, f"{query.key} embedded")
            if i >= 3:
                out.append(elapsed)
    return out


def stage_times(
    db: Database, token: str, query: Query, epsilons: Epsilons, n: int
) -> tuple[dict[str, float], float]:
    """Median ms of each part of ``engine.run`` (and the token check the server adds), each timed alone;
    and of the plain aggregate (``SELECT …``, not private) on the same connection."""
    import json

    from privdb.sql import engine
    from privdb.sql.answer.noise import add_noise
    from privdb.sql.plan.types import Plan

    plan, sql = engine.prepare(db, query.dp(EPS))
    assert isinstance(plan, Plan)
    columns = db.backend.fetch_columns(sql)
    result = engine.run(db, ANALYST, query.dp(epsilons.next())).to_dict()
    counter = itertools.count()
    pending: list[Reservation] = []

    def settle(cur: Cursor) -> None:  # what engine.run does in the spend's transaction
        db.ledger.budget(ANALYST, db.name, cur)
        db.catalog.store_answer(ANALYST, f"bench stage {next(counter)}", TABLE, result, cur)

    parts: dict[str, Callable[[], object]] = {
        "token check": lambda: db.catalog.authenticate(token),
        "parse, plan, bind": lambda: engine.prepare(db, query.dp(epsilons.next())),
        "stored-answer lookup": lambda: db.catalog.stored_answer(ANALYST, f"bench stage {next(counter)}"),
        "engine SQL": lambda: db.backend.fetch_columns(sql, timeout=QUERY_TIMEOUT),
        "noise": lambda: add_noise(plan, columns),
        "ledger reserve": lambda: pending.append(
            db.ledger.reserve(ANALYST, db.name, epsilon=epsilons.next(), note="bench stage")
        ),
        "ledger commit + stored answer + budget": lambda: pending.pop().commit(then=settle),
        "answer to JSON": lambda: json.dumps(result),
        "raw": lambda: db.backend.fetch(query.raw()),
    }
    times: dict[str, list[float]] = {name: [] for name in parts}
    for i in range(n + 3):
        for name, part in parts.items():
            t0 = time.perf_counter()
            part()
            if i >= 3:
                times[name].append(time.perf_counter() - t0)
    ms = {name: 1000 * quantile(values, 0.5) for name, values in times.items()}
    return ms, ms.pop("raw")


TRY_VARIANTS = {  # what privdb's engine SQL wraps in TRY(), timed with and without it (not private)
    "WHERE age > 30": f"SELECT COUNT(*) FROM {TABLE} WHERE age > 30",
    "WHERE TRY(age > 30)": f"SELECT COUNT(*) FROM {TABLE} WHERE TRY(age > 30)",
    "GROUP BY state": f"SELECT state AS k0, COUNT(*) FROM {TABLE} GROUP BY k0",
    "GROUP BY TRY(state)": f"SELECT TRY(state) AS k0, COUNT(*) FROM {TABLE} GROUP BY k0",
}


def try_costs(db: Database, n: int) -> dict[str, float]:
    """Median ms of each of ``TRY_VARIANTS`` on the engine's connection, interleaved."""
    times: dict[str, list[float]] = {name: [] for name in TRY_VARIANTS}
    for i in range(n + 2):
        for name, sql in TRY_VARIANTS.items():
            t0 = time.perf_counter()
            db.backend.fetch(sql)
            if i >= 2:
                times[name].append(time.perf_counter() - t0)
    return {name: 1000 * quantile(values, 0.5) for name, values in times.items()}


def fsync_ms(directory: Path, n: int = 100) -> str:
    """Median and p99 of a 4 KiB write + fsync in ``directory`` (what a durable commit waits for)."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 4096)
            t0 = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return f"p50 {1000 * quantile(times, 0.5):.2f} ms, p99 {1000 * quantile(times, 0.99):.2f} ms"


def filesystem(path: Path) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts; the longest matching mount)."""
    best, kind = "", "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 3 and str(path.resolve()).startswith(parts[1]) and len(parts[1]) > len(best):
                best, kind = parts[1], parts[2]
    return kind
