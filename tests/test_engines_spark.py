"""Spark (local[2]) as an engine for attached tables: the same clamped, bounded aggregates as DuckDB on
the same data, for every DP-SELECT form of tests/test_engines.py. Slow (one Spark start for the module)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.errors import EngineUnavailable, InvalidParameter
from privdb.sql import engine
from privdb.sql.plan.types import Plan
from privdb.sql.run.read import reader
from test_engines import DIALECTS, META, QUERIES, _people, engine_statistics

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spark_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    work = tmp_path_factory.mktemp("spark")
    frame = _people(400, seed=3)
    frame.to_parquet(work / "people.parquet")
    db = Database(work / "db")
    db.backend.load_frame("duck", frame)
    db.set_metadata("duck", META)
    db.attach("big", "spark://local[2]", source=str(work / "people.parquet"), metadata=META)
    db.grant("eve", epsilon=100, delta=1e-3)
    db.noise_source = seeded(4)
    yield db
    db.close()


@pytest.mark.parametrize("query", QUERIES)
def test_spark_returns_the_same_statistics_as_duckdb(spark_db: Database, query: str) -> None:
    frames = [engine_statistics(spark_db, query.format(t=t), DIALECTS[t]) for t in ("duck", "big")]
    for duck, spark in zip(*frames, strict=True):
        pd.testing.assert_frame_equal(duck, spark, check_dtype=False, rtol=1e-9)


def test_dp_select_on_spark_end_to_end(spark_db: Database) -> None:
    res = engine.run(spark_db, "eve", "DP-SELECT 1 city, COUNT(*), AVG(income) FROM big GROUP BY city")
    assert [r[0] for r in res.rows] == ["Bern", "Basel", "Chur"] and res.epsilon_spent == 1
    released = engine.run(spark_db, "eve", "DP-SELECT 1 city FROM big WHERE city = 'Chur' LIMIT 3")
    assert [r[0] for r in released.rows] == ["Chur"] * 3


def test_spark_refuses_what_it_cannot_run_safely(spark_db: Database) -> None:
    spent = spark_db.budget("eve").epsilon_spent  # whatever tests pytest-xdist ran before in this process
    with pytest.raises(Exception, match="cannot run"):
        engine.run(spark_db, "eve", "DP-SELECT 1 COUNT(*) FROM big WHERE 1 / (age - 37) > 0")
    assert spark_db.budget("eve").epsilon_spent == spent  # refused: nothing charged


def test_a_second_spark_master_in_the_same_process_is_refused(spark_db: Database, tmp_path: Path) -> None:
    """Spark runs one session per process and getOrCreate hands back the running one whatever master is
    asked: a table attached to a cluster would silently be read from local[2]. privdb refuses it (and the
    local tables keep answering); tests/test_engines_spark_cluster.py checks the other way round."""
    _people(10, seed=1).to_parquet(tmp_path / "far.parquet")
    assert engine_statistics(spark_db, "DP-SELECT 1 COUNT(*) FROM big", "spark")  # local[2] runs
    with pytest.raises(InvalidParameter, match=r"already drives a Spark session on 'local\[2\]'"):
        spark_db.attach("far", "spark://127.0.0.1:7077", source=str(tmp_path / "far.parquet"), metadata=META)
    assert "far" not in spark_db.catalog.attachments()
    assert engine_statistics(spark_db, "DP-SELECT 1 COUNT(*) FROM big", "spark")  # and still answers


def test_a_session_of_another_master_found_on_restart_refuses_the_query_free(spark_db: Database) -> None:
    """privdb's session stopped and someone started one on another master (local[1]) in the process: the
    query is refused as engine_unavailable, nothing spent, and answers again once that session is gone."""
    from pyspark.sql import SparkSession

    engine.run(spark_db, "eve", "DP-SELECT 1 COUNT(*) FROM big")
    active = SparkSession.getActiveSession()
    assert active is not None
    active.stop()
    other = SparkSession.builder.master("local[1]").appName("someone else").getOrCreate()
    spent = spark_db.budget("eve").epsilon_spent
    query = "DP-SELECT 1 AVG(age) FROM big"  # asked nowhere else: no stored answer could reply
    try:
        with pytest.raises(EngineUnavailable, match=r"already drives a Spark session on 'local\[1\]'"):
            engine.run(spark_db, "eve", query)
        assert spark_db.budget("eve").epsilon_spent == spent
    finally:
        other.stop()
    assert engine.run(spark_db, "eve", query).epsilon_spent == 1


def test_a_stopped_spark_session_is_started_again_before_anything_is_spent(spark_db: Database) -> None:
    from pyspark.sql import SparkSession

    engine.run(spark_db, "eve", "DP-SELECT 1 COUNT(*) FROM big")
    active = SparkSession.getActiveSession()
    assert active is not None
    active.stop()  # the cluster went away: the session, and privdb's Parquet view with it
    spent = spark_db.budget("eve").epsilon_spent
    res = engine.run(spark_db, "eve", "DP-SELECT 1 city, COUNT(*) FROM big GROUP BY city")
    assert len(res.rows) == 3 and spark_db.budget("eve").epsilon_spent == spent + 1


def test_distinct_counts_on_spark_keep_a_uniform_choice_of_each_units_values(
    spark_db: Database, tmp_path: Path
) -> None:
    """COUNT(DISTINCT) with a unit on Spark keeps ``min(m, D)`` of each unit's ``D`` distinct values, a
    uniform choice (privdb.sql.run.counts.distinct_sql). 200 units, m = 1: ``own`` values are each unit's
    alone (5 per unit), so exactly 200 survive; every unit holds the ``shared`` values 0–9, so a uniform
    choice leaves all 10 (a value is missed by all 200 with probability ≤ 10 · 0.9²⁰⁰ < 1e-8), a fixed
    choice (the set's first) only one. ``once`` has one row per unit: no bound binds, the answer at ε = 1000
    is plain SQL's."""
    pid = np.repeat(np.arange(200), 10)
    shared = np.tile(np.arange(10), 200)
    frame = pd.DataFrame({"pid": pid, "own": pid * 100 + shared % 5, "shared": shared})
    frame.to_parquet(tmp_path / "held.parquet")
    frame[frame.shared == 0].to_parquet(tmp_path / "once.parquet")
    meta = {
        "privacy_unit": "pid", "max_contributions": 1, "max_groups": 1,
        "columns": {"pid": {"type": "int", "private_id": True},
                    "own": {"type": "int", "lower": 0, "upper": 20_000},
                    "shared": {"type": "int", "lower": 0, "upper": 9}},
    }  # fmt: skip
    spark_db.attach("held", "spark://local[2]", source=str(tmp_path / "held.parquet"), metadata=meta)
    spark_db.attach("once", "spark://local[2]", source=str(tmp_path / "once.parquet"), metadata=meta)
    for column, expected in (("own", 200), ("shared", 10)):
        frames = engine_statistics(spark_db, f"DP-SELECT 1 COUNT(DISTINCT {column}) FROM held", "spark")
        assert [f.n[0] for f in frames if "n" in f.columns] == [expected], column
    spark_db.grant("dee", epsilon=2000, delta=1e-3)
    res = engine.run(spark_db, "dee", "DP-SELECT 1000 COUNT(DISTINCT own), COUNT(DISTINCT shared) FROM once")
    assert res.rows == [[200, 1]]


def _spark(db: Database) -> Any:
    return db.backend_for("big")[0]


def test_a_querys_reads_run_side_by_side_and_come_back_by_name(spark_db: Database) -> None:
    """A DP-SELECT with a median or a distinct count reads two or more queries, at once (fetch_all): each
    comes back under its own name, as the reads one after another return it."""
    backend = _spark(spark_db)
    got = backend.fetch_all(
        {"b": "SELECT 2 AS x", "a": "SELECT 1 AS x", "c": "SELECT COUNT(*) AS n FROM range(10)"}
    )
    assert list(got) == ["b", "a", "c"] and [int(f.iloc[0, 0]) for f in got.values()] == [2, 1, 10]
    for form in ("MEDIAN(age)", "COUNT(DISTINCT city)", "MEDIAN(income), COUNT(DISTINCT age)"):
        plan, sql = engine.prepare(spark_db, f"DP-SELECT 1 {form} FROM big")
        assert isinstance(plan, Plan)
        frame, histograms = reader(spark_db, plan, "big", sql)()  # what a DP-SELECT reads: side by side
        together = ([frame] if frame is not None else []) + list(histograms.values())
        alone = engine_statistics(spark_db, f"DP-SELECT 1 {form} FROM big", "spark")  # one after another
        assert len(together) == len(alone) >= 2
        for one, other in zip(together, alone, strict=True):  # the same reads, by name (not by value: a
            assert list(one.columns) == list(other.columns)  # unit over the bound has its rows chosen afresh)
    # end to end (the reads side by side, then the noise): at ε = 20 the three cities are counted (the
    # geometric noise's scale is 0.21 here: beyond ±4 with probability below 1e-8)
    res = engine.run(spark_db, "eve", "DP-SELECT 20 COUNT(DISTINCT city), MEDIAN(age) FROM big")
    assert abs(res.rows[0][0] - 3) <= 4 and 0 <= res.rows[0][1] <= 120


def test_one_read_failing_or_past_its_time_cancels_the_others(spark_db: Database) -> None:
    """A read that fails (at analysis: before its sibling's job was even submitted, the case a single
    cancel missed, and the slow read ran to its end) or passes its time ends the others; each call is
    given a minute, against hours for the slow read run to its end."""
    backend = _spark(spark_db)
    slow = "SELECT SUM(id * id % 7) AS s FROM range(0, 5000000000000)"  # hours of work on local[2]
    calls = [
        ({"slow": slow, "bad": "SELECT * FROM nowhere"}, None, r"nowhere|TABLE_OR_VIEW_NOT_FOUND"),
        ({"slow": slow, "slower": slow.replace("7", "11")}, 2.0, "longer than 2.0 s"),
    ]
    for queries, timeout, expected in calls:
        raised: list[BaseException] = []

        def call(
            queries: dict[str, str] = queries,
            timeout: float | None = timeout,
            raised: list[BaseException] = raised,
        ) -> None:
            try:
                backend.fetch_all(queries, timeout=timeout)
            except BaseException as err:
                raised.append(err)

        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(60)
        if thread.is_alive():
            backend.session.sparkContext.cancelAllJobs()
            pytest.fail(f"fetch_all({list(queries)}) still ran after 60 s: the slow read was not cancelled")
        assert len(raised) == 1 and re.search(expected, str(raised[0])), raised
    assert int(backend.fetch("SELECT 1 AS x").iloc[0, 0]) == 1  # the session goes on


def test_a_bound_statement_is_analysed_once_and_reads_what_it_was_bound_on(
    spark_db: Database, tmp_path: Path
) -> None:
    """bind keeps the DataFrame it analysed for the fetch of the same SQL: the fetch reads the files the
    plan was chosen on, even if the view was replaced between the two (an append); a fetch without a bind
    analyses afresh. Kept statements are bounded."""
    backend = _spark(spark_db)
    spark = backend.session
    for rows, name in ((3, "before"), (5, "after")):
        pd.DataFrame({"x": range(rows)}).to_parquet(tmp_path / f"{name}.parquet")
    spark.read.parquet(str(tmp_path / "before.parquet")).createOrReplaceTempView("swapped")
    sql = "SELECT COUNT(*) AS n FROM swapped"
    assert backend.bind(sql) == ["n"]
    spark.read.parquet(str(tmp_path / "after.parquet")).createOrReplaceTempView("swapped")
    assert int(backend.fetch(sql).iloc[0, 0]) == 3  # what it was bound on
    assert int(backend.fetch(sql).iloc[0, 0]) == 5  # taken by the first fetch: analysed afresh
    for i in range(40):
        backend.bind(f"SELECT {i} AS x")
    assert len(backend._bound) <= 16
