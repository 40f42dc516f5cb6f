"""Spark on a real cluster, not only local mode: a standalone master and two workers on loopback
(bench/harness/sparkcluster.py, which the cluster benchmark starts too), and the engine conformance queries
of tests/test_engines.py answered there with DuckDB's statistics, as tests/test_engines_spark.py checks them
on local[2]. Slow: about a minute (three daemons, two executors and the driver start).

One test item on purpose: pytest-xdist hands a module's tests to either worker process, and each process
would start its own cluster for the tests it got."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pandas as pd
import pytest
from bench.harness.sparkcluster import spark_cluster

from conftest import seeded
from privdb.backends.spark import SparkBackend
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.sql import engine
from test_engines import DIALECTS, META, QUERIES, _people, engine_statistics

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def master() -> Iterator[str]:
    """The master's URL, ``spark://127.0.0.1:PORT``, of a cluster started for this module."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (make java installs Debian's headless JRE)")
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    # each Spark test module closes its database (and session) at its end; one left running would make
    # privdb refuse the cluster (one master per process), which is not what this module tests
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    with spark_cluster() as url:
        yield url


@pytest.fixture(scope="module")
def cluster_db(master: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    work = tmp_path_factory.mktemp("spark_cluster")
    frame = _people(400, seed=3)
    frame.to_parquet(work / "people.parquet")  # the executors read it: they run on this machine
    db = Database(work / "db")
    db.backend.load_frame("duck", frame)
    db.set_metadata("duck", META)
    db.attach("big", master, source=str(work / "people.parquet"), metadata=META)
    db.grant("eve", epsilon=100, delta=1e-3)
    db.noise_source = seeded(4)
    yield db
    db.close()


def test_the_conformance_queries_on_a_cluster_match_duckdb(cluster_db: Database, master: str) -> None:
    backend, _ = cluster_db.backend_for("big")
    assert isinstance(backend, SparkBackend)
    context = backend._spark.sparkContext
    assert context.master == master  # not a local session some other test left behind
    differ = []
    for query in QUERIES:
        frames = [engine_statistics(cluster_db, query.format(t=t), DIALECTS[t]) for t in ("duck", "big")]
        for duck, spark in zip(*frames, strict=True):
            try:
                pd.testing.assert_frame_equal(duck, spark, check_dtype=False, rtol=1e-9)
            except AssertionError as err:
                differ.append(f"{query}: {err}")
    assert not differ, "\n".join(differ)
    res = engine.run(cluster_db, "eve", "DP-SELECT 1 city, COUNT(*), AVG(income) FROM big GROUP BY city")
    assert [r[0] for r in res.rows] == ["Bern", "Basel", "Chur"] and res.epsilon_spent == 1
    # the work ran on the two workers' executors (the driver's own block manager is listed too)
    assert context._jsc.sc().getExecutorMemoryStatus().size() == 3
    # while the cluster's session runs, asking for local[2] is refused, not answered by the cluster
    with pytest.raises(InvalidParameter, match=r"already drives a Spark session on 'spark://127\.0\.0\.1"):
        cluster_db.attach("small", "spark://local[2]", source=str(cluster_db.path), metadata=META)
    assert "small" not in cluster_db.catalog.attachments()
