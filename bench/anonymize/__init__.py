"""privdb's anonymisation (Mondrian, optimal full-domain search, privacy checks) against its peers, one run.

Data: UCI Adult (``data/adult``, 30,162 records, ``;``-separated) with quasi-identifiers age,
workclass, education, marital-status, occupation, race, sex, native-country and sensitive salary-class; the
shipped ARX hierarchies for the full-domain search. Adult replicated to ``--rows`` (1,000,000) records, age
perturbed by a uniform integer in [-2, 2] clipped to 17..90 (seeded), and a harder variant where, for half the
records, one categorical quasi-identifier (chosen uniformly) is redrawn from its marginal in Adult.

1. **Mondrian** (privdb, strict, categories ordered) on Adult for k ∈ {2, 5, 10, 50, 100}: best of
   ``--repeats`` in-process after one warm-up, NCP. The reference Python Mondrian (github.com/qiyuangong/
   Mondrian) is not rerun here (no way to fetch it on this machine): its figures are those measured for
   issue 4 on this machine kind, shown for context.
2. **Mondrian at 1,000,000 rows**, k = 10, both variants, each in a fresh process (``python -m
   bench.anonymize.workers mondrian``, which loads the table from Parquet, then anonymises it three times):
   best and first-run seconds, NCP and the process's peak RSS (``ru_maxrss``), also before anonymising (the
   table alone).
3. **Optimal full-domain search** (privdb ``algorithm="lattice"``, 5 % suppression, the shipped hierarchies)
   and **anjana** 1.2.3 (PyPI; greedy full-domain k-anonymity, ``k_anonymity_inner``, the same hierarchies and
   limit), each timed **from a cold process**: ``python -c`` that imports the library, reads the CSV (and,
   for anjana, the hierarchy CSVs), anonymises and writes the release as CSV; the wall time of the whole
   process minus the time it reports for writing. anjana pins ``numpy==2.0.2``, ``pandas==2.3.3`` and
   ``pycanon==1.3.5``, which the project's venv cannot hold, so it lives in its own venv under
   ``bench/.peers/anjana`` that this script creates. Both releases are read back and measured with ONE
   function, privdb's ``utility(original, release, qi, hierarchies).ncp`` (anjana has no loss measure of its
   own; the rows it drops are put back as suppressed, ``*`` in every quasi-identifier).
4. **Privacy checks** (k, distinct / entropy / recursive (c, l) l-diversity, equal-distance t-closeness and
   re-identification risk) with privdb on Adult's k = 10 Mondrian release, on the k = 10, l = 2 release, on
   raw Adult (many classes) and on the 1,000,000-row k = 10 release; beside pycanon (``k_anonymity``,
   ``l_diversity``, ``entropy_l_diversity``, ``recursive_c_l_diversity``, ``t_closeness``), which runs in a
   subprocess (``python -m bench.anonymize.workers pycanon``) with a time budget per table
   (``--pycanon-budget``): a function still running when it is spent is stopped and reported as "> remaining
   budget". Agreement of k, l, entropy l (pycanon truncates it to an integer) and t is printed; recursive c
   is compared with a brute-force oracle (plain pandas groupby), since pycanon sorts the counts the wrong way.

5. **The whole ``privdb anonymize`` command** at 1,000,000 rows beside the algorithm alone
   (``bench/anonymize_command.py``, which also runs on its own and rewrites just that part).

Run: ``.venv/bin/python -m bench.anonymize [--quick]``. A full run rewrites the section of docs/benchmarks.md
between the ``anonymize`` markers; ``--quick`` (k = 10 only, 100,000 rows, one cold run, small budgets) only
prints.
"""
