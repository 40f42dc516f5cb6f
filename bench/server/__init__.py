"""privdb's server under load: answered queries per second and latency over HTTP, beside the embedded API.

One generated census table of ``--rows`` people (``privdb.data.census.generate``, default 1,000,000) in a
database directory per privacy setting (**user-level**: ``METADATA``, privacy unit pid, at most one row;
**row-level**: the same without a privacy unit), one analyst ``bench`` with a budget that never runs out
(ε = 1e9). Two queries at ε ≈ 1:

- Q1 ``COUNT(*) WHERE age > 30``
- Q2 ``state, COUNT(*), AVG(income) GROUP BY state``

The **server** is the real one: ``python -m privdb serve --db DIR --port P [--workers 2]`` as a subprocess,
asked ``POST /v1/query`` over loopback by 1, 8 and 32 concurrent clients (and 8 and 32 with ``--workers
2``). Each client is a thread with its own ``httpx.Client`` (one kept-alive connection) that sends its next
query as soon as the last one is answered. After ``--warmup`` seconds, every request that starts and ends
within the next ``--seconds`` is counted: answered queries per second = answers in the window ÷ its length;
p50 / p99 latency = client-side wall time of those requests. The **embedded API** is
``privdb.connect(DIR, analyst="bench").sql(query)`` in one thread on the same directory (the server is not
running then: DuckDB has one writer per file), once before and once after the server's runs, pooled.

privdb answers a repeated query text from its store of answers at no cost, so every request is distinct: its
ε moves by 1e-9 (``1 + i·1e-9``, ``i`` counting up over the whole run of a directory), and every answer is
checked to be fresh (not ``cached``) and charged exactly its ε. The ledger runs as privdb always runs it (WAL,
``synchronous=FULL``: each spend is fsynced before the answer leaves), on the machine's disk, not tmpfs.

A stage table times, in one thread on the same directory, the parts of one query (token check, parse/plan/
bind, engine SQL, noise, ledger reservation, the commit that stores the answer and reads the budget) and the
HTTP floor (``GET /healthz`` over the same kind of client), to show where a query's time goes.

``python -m bench.server.compare --base SRC`` (compare.py) puts one load on two versions in alternating
rounds; its load generator is wrk (light.py with query.lua; ``make bench-tools`` installs it), whose CPU per
request is a seventh of these Python clients'.

Run: ``.venv/bin/python -m bench.server [--rows N] [--seconds S] [--quick]``. A full run rewrites the section
of docs/benchmarks.md between the ``server`` markers; ``--quick`` (100,000 rows, short windows) only prints.
"""
