"""Answers carry what they paid for into pandas, Arrow, CSV and the notebook (issue 15): the 95% intervals
beside the values, the privacy facts in Arrow's schema metadata. Real DuckDB answers, the real CLI."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from conftest import seeded
from privdb.cli import app
from privdb.database import Database
from privdb.result import Result
from privdb.sql import engine

META: dict[str, Any] = {
    "columns": {
        "age": {"type": "int", "lower": 0, "upper": 100},
        "income": {"type": "float", "lower": 0, "upper": 200_000},
        "city": {"type": "category", "values": ["Bern", "Basel", "Chur"]},
    }
}
QUERY = (
    "DP-SELECT 3 city, COUNT(*) AS n, AVG(income) AS mean, MEDIAN(age) AS mid, MODE(city) AS top, "
    "SUM(income) / COUNT(*) AS ratio FROM t GROUP BY city"
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    rng = np.random.default_rng(2)
    n = 3000
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "income": rng.lognormal(10.5, 0.6, n),
            "city": rng.choice(["Bern", "Basel", "Chur"], n),
        }
    )
    database = Database(tmp_path_factory.mktemp("frames") / "db")
    database.backend.load_frame("t", frame)
    database.set_metadata("t", META)
    database.grant("eve", epsilon=1000)
    database.noise_source = seeded(4)
    yield database
    database.close()


@pytest.fixture(scope="module")
def result(db: Database) -> Result:
    return engine.run(db, "eve", QUERY)


def _interval(result: Result, column: str, row: int) -> list[float] | None:
    entry = next(a for a in result.accuracy if a["column"] == column)
    rows: list[list[float] | None] = entry["ci95_rows"]
    return rows[row]


def test_to_pandas_puts_each_interval_beside_its_column(result: Result) -> None:
    frame = result.to_pandas()
    assert list(frame.columns) == [
        "city",
        "n", "n_ci95_low", "n_ci95_high",
        "mean", "mean_ci95_low", "mean_ci95_high",
        "mid", "mid_ci95_low", "mid_ci95_high",
        "top",  # a mode has no interval
        "ratio", "ratio_ci95_low", "ratio_ci95_high",
    ]  # fmt: skip
    for r in range(len(frame)):
        for col in ("n", "mean", "mid", "ratio"):
            interval = _interval(result, col, r)
            assert interval is not None
            assert [frame.at[r, f"{col}_ci95_low"], frame.at[r, f"{col}_ci95_high"]] == interval
            assert interval[0] <= frame.at[r, col] <= interval[1]
    assert frame["n"].tolist() == [row[1] for row in result.rows]  # integer counts stay integers
    assert pd.api.types.is_integer_dtype(frame["n"])


def test_intervals_false_gives_the_bare_answer(result: Result) -> None:
    bare = result.to_pandas(intervals=False)
    assert list(bare.columns) == result.columns
    assert bare.values.tolist() == pd.DataFrame(result.rows, columns=result.columns).values.tolist()
    assert result.to_csv(intervals=False).splitlines()[0] == ",".join(result.columns)


def test_a_row_without_an_interval_is_nan() -> None:
    res = Result(["x"], [[1.0], [2.0]], 1.0, 0.0, {}, [{"column": "x", "ci95_rows": [[0.5, 1.5], None]}])
    frame = res.to_pandas()
    assert frame["x_ci95_low"].tolist()[0] == 0.5 and math.isnan(frame["x_ci95_low"].tolist()[1])


def test_accuracy_frame_is_tidy(result: Result) -> None:
    acc = result.accuracy_frame()
    assert list(acc.columns) == ["row", "column", "mechanism", "epsilon", "scale", "ci95_low", "ci95_high"]
    rows = len(result.rows)
    assert (acc["column"] == "n").sum() == rows and (acc["column"] == "top").sum() == 1
    top = acc[acc["column"] == "top"].iloc[0]
    assert pd.isna(top["row"]) and top["mechanism"] == "exponential" and math.isnan(top["ci95_low"])
    mid = acc[acc["column"] == "mid"].reset_index(drop=True)
    assert mid["row"].tolist() == list(range(rows)) and set(mid["mechanism"]) == {"exponential"}
    assert [[a, b] for a, b in zip(mid["ci95_low"], mid["ci95_high"], strict=True)] == [
        _interval(result, "mid", r) for r in range(rows)
    ]
    n = acc[acc["column"] == "n"]
    assert (n["scale"] > 0).all() and set(n["mechanism"]) == {"geometric"}


def test_to_arrow_keeps_the_values_the_intervals_and_the_privacy_facts(result: Result) -> None:
    table = result.to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column_names == list(result.to_pandas().columns)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert float(meta["privdb.epsilon_spent"]) == result.epsilon_spent == 3
    assert float(meta["privdb.delta_spent"]) == 0.0
    assert json.loads(meta["privdb.budget"]) == result.budget
    # the per-row intervals travel once, in the interval columns; every other accuracy fact is in the JSON
    moved = json.loads(meta["privdb.ci95_columns"])
    assert moved == {"n": 0, "mean": 1, "mid": 2, "ratio": 4}
    assert [a["column"] for a in result.accuracy] == ["n", "mean", "mid", "top", "ratio"]
    assert json.loads(meta["privdb.accuracy"]) == [
        {k: v for k, v in a.items() if k != "ci95_rows" or i not in moved.values()}
        for i, a in enumerate(result.accuracy)
    ]
    assert table.column("n_ci95_high").to_pylist() == [_interval(result, "n", r)[1] for r in range(3)]  # type: ignore[index]
    assert Result.from_arrow(table).to_dict() == result.to_dict()  # rebuilt whole
    bare = result.to_arrow(intervals=False)
    assert bare.column_names == result.columns
    assert json.loads(bare.schema.metadata[b"privdb.accuracy"]) == result.accuracy
    assert Result.from_arrow(bare).to_dict() == result.to_dict()


def test_the_notebook_shows_value_plus_minus_half_width(result: Result) -> None:
    page = result._repr_html_()
    n, (low, high) = result.rows[0][1], _interval(result, "n", 0)  # type: ignore[misc]
    assert f"{n} ± {(high - low) / 2:.4g}" in page  # a count's interval is symmetric
    mid, (mid_low, mid_high) = result.rows[0][3], _interval(result, "mid", 0)  # type: ignore[misc]
    half = (mid_high - mid_low) / 2
    assert f"{mid:.4g} ± {half:.4g}" in page or f"{mid:.4g} [{mid_low:.4g}, {mid_high:.4g}]" in page
    assert "ε spent 3" in page and "95% interval" in page


def test_the_notebook_escapes_what_it_shows() -> None:
    res = Result(["k", "n"], [["<b>x</b>", 3.0]], 1.0, 0.0, {}, [{"column": "n", "ci95_rows": [[1.0, 5.0]]}])
    page = res._repr_html_()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page and "3 ± 2" in page


def test_the_json_round_trip_keeps_the_intervals(result: Result) -> None:
    again = Result.from_dict(json.loads(json.dumps(result.to_dict())))
    pd.testing.assert_frame_equal(again.to_pandas(), result.to_pandas())


def test_the_cli_csv_has_the_interval_columns(db: Database) -> None:
    out = CliRunner().invoke(
        app,
        [
            "query",
            "--db",
            str(db.path),
            "--analyst",
            "eve",
            "DP-SELECT 1 AVG(income) AS a FROM t",
            "--format",
            "csv",
        ],
    )
    assert out.exit_code == 0, out.output
    frame = pd.read_csv(io.StringIO(out.stdout))
    assert list(frame.columns) == ["a", "a_ci95_low", "a_ci95_high"]
    assert frame.at[0, "a_ci95_low"] <= frame.at[0, "a"] <= frame.at[0, "a_ci95_high"]
