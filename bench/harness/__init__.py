"""What every benchmark shares, written once: ``data`` (the synthetic tables), ``timing`` (best of repeats,
interleaved runs, privdb by stage), ``memory`` (peak resident sets, CPU from /proc), ``peers`` (the peers'
own venvs and worker subprocesses, skipped when missing), ``machine`` (CPU, memory, load, versions) and
``report`` (tables and sections of docs/benchmarks.md).

``timing``, ``memory``, ``peers`` and ``query`` import the standard library only: the workers that run in a
peer's own venv (without privdb, pandas or rich) use them too."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
