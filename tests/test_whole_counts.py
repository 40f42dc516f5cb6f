"""Issue 26, item 5: counts are whole numbers everywhere — the value and its interval's ends — also on a
table with a privacy unit, where a unit's rows are scaled (min(1, m/R)) and the noise is continuous.

Decision (docs/answers.md): the released count is rounded (post-processing) and its interval's ends are
rounded outward; HAVING, ORDER BY and expressions read the released (rounded) count; the threshold that
selects keys compares the unrounded noisy count (it is part of the mechanism, whose δ is computed for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from joinfixtures import frames, people_visits
from privdb.cli import app
from privdb.sql import engine

runner = CliRunner(env={"COLUMNS": "200"})


def _whole(value: Any) -> bool:
    return type(value) is int


def _check(res: Any, count_columns: list[str]) -> None:
    columns = [c.lower() for c in res.columns]
    for name in count_columns:
        j = columns.index(name)
        assert res.rows and all(_whole(row[j]) for row in res.rows), (name, res.rows[:3])
        entry = next(e for e in res.accuracy if e["column"].lower() == name)
        for lo, hi in entry["ci95_rows"]:
            assert float(lo).is_integer() and float(hi).is_integer(), (lo, hi)
        for row, (lo, hi) in zip(res.rows, entry["ci95_rows"], strict=True):
            assert lo <= row[j] <= hi


@pytest.mark.parametrize(
    ("query", "counts"),
    [
        (
            "DP-SELECT 1 COUNT(*) AS n, COUNT(cost) AS c, COUNT(DISTINCT kind) AS d FROM visits",
            ["n", "c", "d"],
        ),
        ("DP-SELECT 1 kind, COUNT(*) AS n FROM visits GROUP BY kind", ["n"]),
        # keys without a public domain: selected by the noisy threshold
        ("DP-SELECT 1 DELTA 1e-4 FLOOR(cost / 100) AS b, COUNT(*) AS n FROM visits GROUP BY b", ["n"]),
        ("DP-SELECT 1 kind, COUNT(*) AS n FROM visits GROUP BY kind HAVING COUNT(*) > 10 ORDER BY n", ["n"]),
    ],
)
def test_counts_with_a_privacy_unit_are_whole_numbers(tmp_path: Path, query: str, counts: list[str]) -> None:
    db = people_visits(tmp_path / "db")
    try:
        res = engine.run(db, "alice", query)
        _check(res, counts)
        _check(type(res).from_dict(json.loads(json.dumps(res.to_dict()))), counts)
    finally:
        db.close()


def test_expressions_read_the_released_count(tmp_path: Path) -> None:
    """An expression over a count reads the released whole number (so n2 = n exactly, and 2·n is even)."""
    db = people_visits(tmp_path / "db")
    try:
        res = engine.run(
            db, "alice", "DP-SELECT 1 kind, COUNT(*) AS n, COUNT(*) + 0 AS n2, 2 * COUNT(*) AS d FROM visits "
            "GROUP BY kind ORDER BY n",
        )  # fmt: skip
        for _, n, n2, d in res.rows:
            assert _whole(n) and float(n2) == n and float(d) == 2 * n
        assert [row[1] for row in res.rows] == sorted(row[1] for row in res.rows)
    finally:
        db.close()


def test_cli_prints_whole_counts(tmp_path: Path) -> None:
    db = people_visits(tmp_path / "db", frames(people=800))
    db.close()
    for fmt in ("json", "table"):
        query = "DP-SELECT 1 COUNT(*) AS n FROM visits"
        args = ["query", "--db", str(tmp_path / "db"), "--analyst", "alice", query, "--format", fmt]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        if fmt == "json":
            data = json.loads(result.stdout)
            assert _whole(data["rows"][0][0])
            assert all(float(v).is_integer() for v in data["accuracy"][0]["ci95"])
        else:
            row = next(line for line in result.stdout.splitlines() if line.startswith("│"))
            assert "." not in row, result.stdout  # "│ 1604 │ [1587, 1621] │", not "│ 1603.73 │ …"


def test_an_integer_cast_is_a_whole_number(tmp_path: Path) -> None:
    """CAST(… AS INTEGER | BIGINT) over noisy aggregates is sent as an int, its interval's ends whole; a
    formula without the cast keeps its fractional value."""
    db = people_visits(tmp_path / "db")
    try:
        res = engine.run(
            db, "alice", "DP-SELECT 1 kind, CAST(SUM(cost) AS BIGINT) AS s, SUM(cost) / 3 AS t FROM visits "
            "GROUP BY kind",
        )  # fmt: skip
        assert res.rows and all(_whole(row[1]) for row in res.rows)
        assert not all(_whole(row[2]) for row in res.rows)
        entry = next(e for e in res.accuracy if e["column"].lower() == "s")
        for lo, hi in entry["ci95_rows"]:
            assert float(lo).is_integer() and float(hi).is_integer()
    finally:
        db.close()
