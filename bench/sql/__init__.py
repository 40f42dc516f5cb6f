"""privdb's DP-SELECT against raw DuckDB (the floor) and SmartNoise SQL, in one run on the same table.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, default 10,000,000), three
queries at ε = 1, two privacy settings:

- Q1 ``COUNT(*) WHERE age > 30``
- Q2 ``state, COUNT(*), SUM(income), AVG(income) GROUP BY state``
- Q3 ``sex, education, COUNT(*) GROUP BY sex, education``

**Row-level**: every row is one person (privdb: ``METADATA`` without ``privacy_unit``; SmartNoise:
``row_privacy: True``). **User-level**: the privacy unit is ``pid`` with at most one contribution (privdb:
``METADATA`` as is; SmartNoise: ``private_id`` on pid, ``max_ids: 1``). Bounds age 0..100, income 0..500,000.

The **floor** is the plain SQL aggregate on privdb's own DuckDB connection. **privdb** is
``engine.run(db, analyst, "DP-SELECT ε …")`` end to end (plan, budget, engine query, noise, stored answer);
ε moves by 1e-9 per repetition so that no run is served from privdb's store of answers. **SmartNoise SQL**
(OpenDP's SQL tool) pins ``opendp<0.15`` and ``pandas<3``, which the project's venv cannot hold, so it runs in
its own venv under ``bench/.peers/smartnoise`` (created here with ``python -m venv`` and pip) as a
subprocess (``python -m bench.sql.smartnoise``: standard library only at import time). It reads a
copy of the same DuckDB file through a small DB-API adapter for its PostgreSQL reader, its fastest engine
here; its pandas reader (which copies the data into SQLite) is timed on the first ``--pandas-rows`` people,
and marked as such. Every SmartNoise query is held to ε = 1 in total: SmartNoise charges its ε per noisy
statistic, so the worker splits ε evenly over the query's mechanisms and checks ``get_privacy_cost``.

Timing: ``time.perf_counter``, one warm-up then best of ``--repeats`` (5), the implementations of a query
interleaved run by run. Run: ``.venv/bin/python -m bench.sql [--rows N] [--quick]``. A full run rewrites the
section of docs/benchmarks.md between the ``sql`` markers; ``--quick`` (200,000 rows) only prints.
"""
