"""privdb's DP-SELECT over JOINs against the raw join on DuckDB (the floor) and Qrlew, in one run (issue 14).

Three generated tables, written by DuckDB itself (SQL over ``range()`` with ``hash(i, seed, …)``, so the same
seed gives the same rows whatever the thread count) into a DuckDB file cached under ``bench/.data``:

- ``people(pid BIGINT, age INT 0..100, income DOUBLE 0..500,000, state: 1 of 50 codes, region_code INT
  1..9)``, ``--people`` rows (default 10,000,000); privacy unit ``pid``, one row per person;
- ``visits(pid BIGINT, day DATE, cost DOUBLE 0..5,000, kind: 1 of 5 texts)``, 3 × ``--people`` rows, each with
  ``pid = 1 + (⌊N·u²⌋·a mod N)`` (u uniform, a a multiplier prime to N): a skewed number of visits per person,
  mean 3, most people 0–5, thousands with 50 or more, the busiest with thousands (the data's own figures are
  printed and written with the results);
- ``regions(code INT, name TEXT)``, the 9 US Census divisions: public.

Queries at ε = 1 (user-level privacy: the unit is the person, ``pid``; people ``max_contributions: 1``,
visits ``max_contributions: 10, max_groups: 1``; regions ``public: true``):

- J1 ``p.state, COUNT(*), SUM(v.cost), AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid GROUP BY
  p.state``
- J2 ``r.name, COUNT(*), AVG(p.income) FROM people p JOIN regions r ON p.region_code = r.code GROUP BY
  r.name``
- J3 ``v.kind, COUNT(*), SUM(v.cost) FROM visits v GROUP BY v.kind`` (one table, for reference)

**raw DuckDB** (the floor, not private) is the same join and aggregate as plain SQL on privdb's own DuckDB
connection (``db.backend.fetch``). **privdb** is ``engine.run(db, analyst, "DP-SELECT ε …")`` end to end; ε
moves by 1e-9 per repetition so that no run is served from privdb's store of answers. Both run in a
subprocess in the project's venv (``python -m bench.joins.privdb_worker``) on a copy of the data
file, so that its memory is its own. **Qrlew** (``pyqrlew``, Sarus's SQL-to-DP-SQL rewriter) pins
``numpy<2`` and needs a SQLAlchemy dialect for DuckDB, so it runs in its own venv under
``bench/.peers/qrlew`` (created here with
``python -m venv`` and pip) as a subprocess (``python -m bench.joins.qrlew_worker``: standard library only
at import time), on the cached data file itself, read-only: it builds its ``Dataset`` from the file through
SQLAlchemy (``duckdb-sqlalchemy``), declares the same bounds, key values and privacy unit (visits → people by
pid), rewrites each query with ``rewrite_with_differential_privacy`` and runs the rewritten SQL on DuckDB.
Its time is the rewrite plus the engine query. Qrlew charges each of a query's k Gaussian mechanisms the full
(ε, δ) it is given, so the worker gives it (1/k, 10⁻⁶/k) and checks every mechanism's noise multiplier:
(1, 10⁻⁶) per query in all.

Timing: ``time.perf_counter``, one warm-up then best of ``--repeats`` (3), the implementations of a query
interleaved run by run. Memory: the peak resident set (``VmHWM`` of /proc/self/status, reset through
/proc/self/clear_refs before each run) of the worker process while each implementation's query runs, the
largest over its runs; the data file is DuckDB's, so this includes DuckDB's buffer cache of the tables.

Run: ``.venv/bin/python -m bench.joins [--people N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``joins`` markers; ``--quick`` (200,000 people) only prints.
"""
