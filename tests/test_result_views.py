"""An answer as Arrow and back, in polars, and in a notebook (issue 29): the Arrow table rebuilds the Result
whole whatever its values, polars gets the columns of to_pandas(), and the notebook's table and chart
escape every name and value. Real DuckDB answers."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import seeded
from privdb.database import Database
from privdb.result import Result
from privdb.result_arrow import read_stream, write_stream
from privdb.sql import engine

HOSTILE = ["<script>alert(1)</script>", '$\\frac{x$ & "q"', "plain"]
HOSTILE_COLUMNS = ('"<img src=x onerror=alert(1)>"', '"a</td>$x$"')


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"k": rng.choice(HOSTILE, 900), "x": rng.integers(0, 300, 900)})
    database = Database(tmp_path_factory.mktemp("views") / "db")
    database.backend.load_frame("t", frame)
    database.set_metadata(
        "t",
        {
            "columns": {
                "k": {"type": "category", "values": HOSTILE},
                "x": {"type": "int", "lower": 0, "upper": 300},
            }
        },
    )
    database.grant("eve", epsilon=1000)
    database.noise_source = seeded(6)
    yield database
    database.close()


def _through_arrow(result: Result, intervals: bool = True) -> Result:
    return Result.from_arrow(read_stream(write_stream(result.to_arrow(intervals))))


def test_a_real_answer_comes_back_whole_from_an_arrow_stream(db: Database) -> None:
    res = engine.run(
        db,
        "eve",
        "DP-SELECT 2 k, COUNT(*) AS n, AVG(x) AS a, MEDIAN(x) AS m, MODE(k) AS top FROM t GROUP BY k",
    )
    assert res.extra  # covers, outside_domain: the other facts travel too
    for intervals in (True, False):
        again = _through_arrow(res, intervals)
        assert again.to_dict() == res.to_dict()
        assert again.to_pandas().equals(res.to_pandas())


@pytest.mark.parametrize(
    ("columns", "rows", "accuracy"),
    [
        # text and numbers in one column: written as JSON text, read back as they were
        (
            ["k", "x"],
            [["a", 1], [2, "b"], [None, 3.5]],
            [{"column": "x", "ci95_rows": [[0, 2], None, [1.5, None]]}],
        ),
        # an answer column named like an interval column, after a column that has intervals
        (["x", "x_ci95_low"], [[1.0, 7], [2.0, 8]], [{"column": "x", "ci95_rows": [[0.5, 1.5], [1.5, 2.5]]}]),
        # no rows at all; an integer past int64; NaN; a list-valued cell; an interval in no column's name
        (["n"], [], [{"column": "n", "ci95_rows": []}]),
        (["big", "f"], [[2**70, math.inf], [1, -0.0]], [{"column": "gone", "ci95_rows": [[1, 2], [3, 4]]}]),
        (["v", "l"], [[float("nan"), [1, 2]], [1.0, [3]]], [{"column": "v", "ci95_rows": [None, [0, 2]]}]),
    ],
)
def test_any_answer_comes_back_whole(columns: list[str], rows: list[list[Any]], accuracy: list[Any]) -> None:
    res = Result(
        columns, rows, 0.5, 1e-6, {"epsilon_remaining": 1.5}, accuracy, cached=True, extra={"z": [1]}
    )
    again = _through_arrow(res)
    assert again.columns == res.columns and again.accuracy == res.accuracy
    assert again.cached and again.extra == {"z": [1]} and again.delta_spent == 1e-6
    assert len(again.rows) == len(res.rows)
    for got, want in zip(again.rows, res.rows, strict=True):
        for g, w in zip(got, want, strict=True):
            assert g == w or (isinstance(w, float) and math.isnan(w) and math.isnan(g))


def test_an_arrow_table_without_privdb_facts_is_refused() -> None:
    plain = pd.DataFrame({"a": [1]})
    import pyarrow as pa

    with pytest.raises(ValueError, match="no privdb answer"):
        Result.from_arrow(pa.Table.from_pandas(plain))


def test_to_polars_has_the_columns_and_values_of_to_pandas(db: Database) -> None:
    pl = pytest.importorskip("polars", reason="polars is the optional extra privdb[polars]")
    res = engine.run(db, "eve", "DP-SELECT 1 k, COUNT(*) AS n, AVG(x) AS a, MODE(k) AS top FROM t GROUP BY k")
    for intervals in (True, False):
        frame = res.to_polars(intervals)
        assert isinstance(frame, pl.DataFrame)
        pd.testing.assert_frame_equal(frame.to_pandas(), res.to_pandas(intervals))


def test_the_notebook_view_escapes_hostile_names_and_values_and_charts_the_intervals(db: Database) -> None:
    alias_n, alias_a = HOSTILE_COLUMNS
    res = engine.run(
        db, "eve", f"DP-SELECT 1 k, COUNT(*) AS {alias_n}, AVG(x) AS {alias_a} FROM t GROUP BY k"
    )
    assert res.columns == ["k", "<img src=x onerror=alert(1)>", "a</td>$x$"]
    page = res._repr_html_()
    for raw in ("<script>", "<img", "</td>$x$", "onerror=alert(1)>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the table's cell, escaped
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "&lt;img src=x onerror=aler" in svg and "a&lt;/td&gt;$x$" in svg  # the panels' titles
    assert '$\\frac{x$ &amp; "q"' in svg  # a label with $…$ is text, not math
    # one dot per row and statistic, one bar (its interval) each
    assert "<?xml" not in page and len(re.findall(r"<text\b", svg)) > 6
    assert "ε spent 1" in page


def test_no_chart_without_numeric_intervals() -> None:
    res = Result(["k", "top"], [["a", "b"]], 1.0, 0.0, {}, [{"column": "top", "mechanism": "exponential"}])
    assert "<svg" not in res._repr_html_()
    many = Result(
        ["n"],
        [[i] for i in range(40)],
        1.0,
        0.0,
        {},
        [{"column": "n", "ci95_rows": [[i - 1, i + 1] for i in range(40)]}],
    )
    page = many._repr_html_()
    assert "<svg" in page and "first 25 rows" in page
