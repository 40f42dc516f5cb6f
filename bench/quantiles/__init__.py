"""privdb's MEDIAN and QUANTILE in DP-SELECT against raw DuckDB (the floor), SmartNoise SQL and OpenDP.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, default 10,000,000), three
order statistics at ε = 1, two privacy settings:

- M1 ``MEDIAN(age)`` (int 0..100: 101 integer candidates)
- M2 ``MEDIAN(income)`` (float 0..500,000: 16,385 grid points, resolution 500,000/2^14 ≈ 30.52)
- Q90 ``QUANTILE(income, 0.9)``

**Row-level**: every row is one person (privdb: ``METADATA`` without ``privacy_unit``). **User-level**: the
privacy unit is ``pid`` with at most one contribution (``METADATA`` as is).

**Time.** The floor is DuckDB's exact ``median(col)`` / ``quantile_cont(col, q)`` on privdb's own connection;
privdb is ``engine.run(db, analyst, "DP-SELECT ε MEDIAN(col) FROM people")`` end to end, its ε moving by
1e-9 per repetition so that no run is served from privdb's store of answers; then privdb by stage
(``engine.prepare``; the histogram SQL of ``histogram_queries`` run with ``db.backend.fetch``;
``add_noise``). One warm-up, then best of ``--repeats`` (5), interleaved run by run, as in bench.sql.
**SmartNoise SQL** runs in its own venv ``bench/.peers/smartnoise`` (bench.harness.peers'
``SMARTNOISE_SQL``, shared with bench.sql) as a subprocess (``python -m bench.quantiles.smartnoise``,
standard library only at import time): every way of asking for a median or
percentile that its grammar knows is tried on the same DuckDB file through bench.sql's DB-API adapter,
and timed where it answers.
**OpenDP**'s ``make_private_quantile`` (Rust, in the project's venv) is timed once on the whole column,
row-level (a Python list; converting the column is off the clock).

**Error.** Mean absolute error at ε = 1 over ``--error-reps`` (100) releases, in value units (against
DuckDB's exact quantile) and in rank units (how far ``q·n`` lies from the answer's rank interval
``[#{x < y}, #{x ≤ y}]``; 0 for a true quantile), on the whole table and on its first ``--subset-rows``
(10,000) people, where the mechanisms' noise rather than the grid dominates. privdb: ``engine.run`` end to
end, ε = 1 − k·1e-9 (never served from its store). OpenDP 0.16: ``make_private_quantile`` on the same data,
same bounds, same candidates (privdb's grid points), ``symmetric_distance`` (privdb's default add/remove
neighbours, one row per person), ``max_divergence``, its scale found by ``binary_search_param`` for ε = 1.
On tables above 1,000,000 rows OpenDP's data-dependent part (``make_quantile_score_candidates``) runs once
and its selection (``make_noisy_max`` at ``make_private_quantile``'s scale) per release: the same
distribution as calling ``make_private_quantile`` each time (checked: the same privacy map), at 1/100 of
the time.

Run: ``.venv/bin/python -m bench.quantiles [--rows N] [--quick]``. A full run rewrites the section of
docs/benchmarks.md between the ``quantiles`` markers; ``--quick`` (200,000 rows, 50 releases) only prints.
"""
