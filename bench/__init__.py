"""privdb's benchmarks against its peers: one module (or folder) per benchmark, run from the repository's
root as ``python -m bench.<name>`` (``bench.mechanisms``, ``bench.sql``, ``bench.joins``, …); each writes its
section of docs/benchmarks.md. What they share (data, timing, peers, machine facts, the Markdown writer) is
``bench.harness``."""
