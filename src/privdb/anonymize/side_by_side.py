"""A table's columns worked on side by side: one thread per CPU, the results in the columns' order.

Mondrian's encoding and labelling of a quasi-identifier touch only that column, and their inner loops are
NumPy, pandas hash tables and Arrow kernels, which release the GIL: on the 2-CPU machine of
docs/benchmarks.md they take 0.6–0.8 of their one-thread time on a 1,000,000-row table. (The report's
measures stay on one thread: beside the release's writer, more threads made them slower.)
Threads, not processes: the columns are large arrays that a process would have to copy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["each_column"]

_T = TypeVar("_T")
_R = TypeVar("_R")


def each_column(work: Callable[[_T], _R], columns: Iterable[_T]) -> list[_R]:
    """``[work(c) for c in columns]``, run on up to one thread per usable CPU.

    The same results in the same order as the loop; a failure is raised as the loop would raise it (the
    first failing column in order), once every column already started has finished (a Ctrl-C too waits for
    those). A pool of its own per call, so a ``work`` that itself calls ``each_column`` cannot wait on its
    own pool.
    """
    items = list(columns)
    threads = min(len(items), _cpus())
    if threads < 2:
        return [work(c) for c in items]
    with ThreadPoolExecutor(threads, thread_name_prefix="privdb-column") as pool:
        return list(pool.map(work, items))


def _cpus() -> int:
    """The CPUs this process may run on (its affinity, as a container or ``taskset`` limits it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
