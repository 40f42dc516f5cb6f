"""privdb's DP-SELECT on each engine it runs on, against the raw query on that same engine, in one run.

One generated census table (``privdb.data.census.generate``, ``--rows``, default 10,000,000) and the queries
Q1–Q3 of bench.sql at ε = 1, row-level privacy (bench.harness.data's ``row_metadata``: no privacy unit), on

- **DuckDB**: privdb's own embedded engine (``Database.backend.load_frame``);
- **SQLite**: a file written with ``sqlite3`` (``executemany`` in chunks), attached as ``sqlite:///…``;
- **PostgreSQL**: a throw-away cluster (tests/pgfixture.py's ``postgres_cluster``), the table loaded with
  psycopg's ``COPY`` (CSV chunks) and ``VACUUM ANALYZE``, attached as ``postgresql://…``;
- **Spark** ``local[2]``: a Parquet file (pyarrow) attached as ``spark://local[2]`` with the path as source.

Tables stay in their engines: ``Database.attach(table, url, source, metadata)``. **raw** is the plain
aggregate (no privacy) sent to the same engine through the same connection: ``db.backend_for(table)`` →
``backend.fetch(sql)``. **privdb** is ``engine.run(db, analyst, "DP-SELECT ε …")`` end to end, ε moving by
1e-9 per repetition so no answer comes from privdb's store. One warm-up, then best of ``--repeats`` (3),
raw and privdb interleaved run by run (bench.harness.timing's ``best_of``); then privdb by stage
(``engine.prepare``, the rewritten engine SQL alone, ``add_noise``; rest = total − stages).

**Spark at scale**: ``--big-rows`` (100,000,000) rows of Parquet (the 10,000,000-row table replicated with
shifted ``pid``, written in row groups of 1,000,000 rows with pyarrow's ``ParquetWriter``, never all in
memory), Q1 through privdb on ``spark://local[2]`` in a fresh subprocess
(``python -m bench.engines.spark_big``), so its memory is its own: peak RSS of the Python driver and of
Spark's JVM (``VmHWM`` from /proc) and of the whole process tree (sampled every 0.2 s), with Spark's default
driver memory.

Run: ``.venv/bin/python -m bench.engines [--rows N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``engines`` markers; ``--quick`` (200,000 rows; 2,000,000 for Spark at scale)
only prints.
"""
