"""``each_column`` runs a table's columns side by side and answers as the plain loop: the same results in the
columns' order, the loop's failure, the caller's thread on one CPU, and no wait on itself when nested."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

from privdb.anonymize import anonymize, side_by_side
from privdb.anonymize.side_by_side import each_column


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(side_by_side, "_cpus", lambda: 2)


def test_results_come_in_the_columns_order_whatever_finishes_first(two_cpus: None) -> None:
    def slow_first(i: int) -> int:
        time.sleep(0.05 if i == 0 else 0.0)
        return i * i

    assert each_column(slow_first, range(6)) == [i * i for i in range(6)]


def test_the_first_failing_column_in_order_is_raised(two_cpus: None) -> None:
    later_failed = threading.Event()

    def work(i: int) -> int:
        if i == 1:
            later_failed.wait(timeout=10)  # column 3 fails first in time
            raise ValueError("column 1")
        if i == 3:
            later_failed.set()
            raise KeyError("column 3")
        return i

    with pytest.raises(ValueError, match="column 1"):
        each_column(work, range(4))
    assert later_failed.is_set()


def test_one_cpu_runs_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(side_by_side, "_cpus", lambda: 1)
    assert each_column(lambda _: threading.current_thread(), "abc") == [threading.current_thread()] * 3


def test_columns_run_on_worker_threads_and_may_nest(two_cpus: None) -> None:
    names = each_column(lambda _: threading.current_thread().name, "ab")
    assert all(name.startswith("privdb-column") for name in names)
    assert each_column(lambda i: each_column(lambda j: 10 * i + j, range(3)), range(3)) == [
        [10 * i + j for j in range(3)] for i in range(3)
    ]


def test_mondrian_releases_the_same_table_on_one_thread_or_two(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    df = pd.DataFrame(
        {
            "age": rng.integers(17, 90, 3000),
            "zip": rng.choice([f"{z:05d}" for z in range(100)], 3000),
            "job": rng.choice(list("abcdefghij"), 3000),
        }
    )
    releases = []
    for cpus in (1, 2):
        monkeypatch.setattr(side_by_side, "_cpus", lambda cpus=cpus: cpus)
        got = anonymize(df, ["age", "zip", "job"], k=5)
        releases.append((got.table, got.ncp))
    pd.testing.assert_frame_equal(releases[0][0], releases[1][0])
    assert releases[0][1] == releases[1][1]
