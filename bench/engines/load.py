"""The census table loaded into each engine: privdb's DuckDB, a SQLite file, PostgreSQL (``COPY``) and a
Parquet file for Spark, chunk by chunk; and one query measured on an engine, raw and through privdb."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import timing
from bench.harness.query import ANALYST, EPS, check_fresh

CHUNK = 1_000_000  # rows per load chunk and per Parquet row group
COLUMNS_SQL = {
    "sqlite": "pid INTEGER, age INTEGER, income REAL, sex TEXT, state TEXT, education TEXT",
    "postgres": "pid BIGINT, age INTEGER, income DOUBLE PRECISION, sex TEXT, state TEXT, education TEXT",
}


# ---------------------------------------------------------------------------------- loading the engines
def chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(n, start + CHUNK)


def duckdb_table(db: Any, table: str, frame: Any, advance: Callable[[int], None]) -> None:
    """The table in privdb's own DuckDB."""
    db.backend.load_frame(table, frame)
    advance(len(frame))


def sqlite_file(path: Path, frame: Any, advance: Callable[[int], None]) -> Path:
    """The table as a SQLite file written with plain ``sqlite3`` (``executemany``, chunk by chunk)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute(f"CREATE TABLE people ({COLUMNS_SQL['sqlite']})")
    names = list(frame.columns)
    for a, b in chunks(len(frame)):
        part = frame.iloc[a:b]
        con.executemany(
            "INSERT INTO people VALUES (?, ?, ?, ?, ?, ?)",
            zip(*(part[c].tolist() for c in names), strict=True),
        )
        con.commit()
        advance(b - a)
    con.close()
    return path


def postgres_table(url: str, frame: Any, advance: Callable[[int], None]) -> None:
    """The table in PostgreSQL: ``COPY … FROM STDIN`` of CSV chunks, then ``VACUUM ANALYZE``."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS people")
        con.execute(f"CREATE TABLE people ({COLUMNS_SQL['postgres']})")
        with con.cursor().copy("COPY people FROM STDIN (FORMAT csv)") as copy:
            for a, b in chunks(len(frame)):
                copy.write(frame.iloc[a:b].to_csv(header=False, index=False))
                advance(b - a)
        con.execute("VACUUM ANALYZE people")


def parquet_file(path: Path, frame: Any, copies: int, advance: Callable[[int], None]) -> Path:
    """``frame`` ``copies`` times (``pid`` shifted by ``len(frame)`` per copy) as one Parquet file, written
    row group by row group: at most one chunk beyond the frame is in memory."""
    import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
    import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]

    table = pa.Table.from_pandas(frame, preserve_index=False)
    pid = table.column("pid")
    with pq.ParquetWriter(path, table.schema) as writer:
        for k in range(copies):
            shifted = table.set_column(0, "pid", pa.compute.add(pid, k * len(frame)))
            for a, b in chunks(len(frame)):
                writer.write_table(shifted.slice(a, b - a), row_group_size=CHUNK)
                advance(b - a)
    return path


# ---------------------------------------------------------------------------------------- measuring
@dataclass
class Row:
    engine: str
    rows: int
    key: str
    label: str
    raw: float
    privdb: float
    parts: dict[str, float] = field(default_factory=dict)
    groups: int = 0


def measure(db: Any, table: str, engine_key: str, n: int, query: Any, repeats: int) -> Row:
    """Raw SQL and privdb on the same engine, interleaved; then privdb's time by stage."""
    from privdb.sql import engine
    from privdb.sql.answer.noise import add_noise
    from privdb.sql.plan.types import Plan

    backend, source = db.backend_for(table)
    raw_sql = str(query.raw()).replace("FROM people", f"FROM {source}")

    def dp_text(i: int) -> str:
        return str(query.dp(EPS + i * 1e-9)).replace("FROM people", f"FROM {table}")

    answers: dict[str, Any] = {}

    def dp(i: int) -> None:
        result = engine.run(db, ANALYST, dp_text(i))
        check_fresh(result, EPS + i * 1e-9, query.key)
        answers["privdb"] = result

    def raw(i: int) -> None:
        answers["raw"] = backend.fetch(raw_sql)

    best = timing.best_of({"raw": raw, "privdb": dp}, repeats)
    if len(answers["raw"]) != len(answers["privdb"].rows):
        raise RuntimeError(f"{engine_key} {query.key}: raw and privdb return different numbers of groups")
    plan, sql = engine.prepare(db, dp_text(0))
    assert isinstance(plan, Plan)
    frame = backend.fetch(sql)
    parts = timing.stages(
        best["privdb"],
        {
            "prepare": lambda i: engine.prepare(db, dp_text(i)),
            "engine SQL": lambda i: backend.fetch(sql),
            "noise": lambda i: add_noise(plan, frame),
        },
        repeats,
    )
    return Row(engine_key, n, query.key, query.label, best["raw"], best["privdb"], parts, len(answers["raw"]))
