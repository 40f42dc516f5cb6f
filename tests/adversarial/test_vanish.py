"""Issue 26, item 6: groups that vanish are said, from public information only.

A grouped answer over a declared domain carries ``outside_domain`` (keys outside the domain, NULL included,
are in no row) and ``noise_only_rows`` (rows whose key the WHERE excludes by construction). Both must be
the same on neighbouring databases (the outcome rule): here the added person has a key outside the domain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adversarial.neighbours import ALICE, PEOPLE_META, neighbours
from privdb.cli import app
from privdb.sql import engine

META: dict[str, Any] = {
    "columns": PEOPLE_META["columns"] | {"disease": {"type": "category", "values": ["flu", "cold", "none"]}}
}
KEYS = ["flu", "cold", "none"]  # the domain's order: the rows' order without ORDER BY

CASES = [
    ("disease = 'flu'", ["cold", "none"]),
    ("'flu' = disease AND age > 30", ["cold", "none"]),
    ("disease IN ('flu', 'cold') AND age > 30", ["none"]),
    ("NOT disease <> 'cold' OR disease IS NULL", ["flu", "none"]),
    ("disease NOT IN ('flu')", ["flu"]),
    ("age > 30", []),  # a column that is not a key: nothing is decided
    ("disease = 'flu' OR age > 30", []),
    ("disease = 'HIV'", KEYS),  # a value outside the domain: every row is noise only
]


@pytest.mark.parametrize(("where", "noise_only"), CASES)
def test_fields_are_public_and_equal_on_neighbours(tmp_path: Path, where: str, noise_only: list[str]) -> None:
    """Alice (HIV, outside the domain) in or out: the same fields; the marked rows are those the WHERE
    excludes."""
    pair = neighbours(tmp_path, extra=[ALICE, ALICE | {"name": "Bob", "disease": None}], meta=META)
    try:
        query = f"DP-SELECT 1 disease, COUNT(*) AS n, AVG(age) FROM people WHERE {where} GROUP BY disease"
        answers = [engine.run(db, "eve", query) for db in pair.both()]
        fields = [(a.extra.get("outside_domain"), a.extra.get("noise_only_rows")) for a in answers]
        assert fields[0] == fields[1]
        for res in answers:
            assert [row[0] for row in res.rows] == KEYS
            marked = [res.rows[i][0] for i in res.extra.get("noise_only_rows", [])]
            assert marked == noise_only
            outside = res.extra["outside_domain"]
            assert outside["released"] is False and outside["keys"] == ["disease"]
            assert "including NULL" in outside["note"] and "HIV" not in outside["note"]
    finally:
        pair.close()


def test_noise_only_rows_follow_the_order(tmp_path: Path) -> None:
    """With ORDER BY the indices name the rows as shown."""
    pair = neighbours(tmp_path, meta=META)
    try:
        query = (
            "DP-SELECT 1 disease, COUNT(*) AS n FROM people WHERE disease = 'none' GROUP BY disease "
            "ORDER BY disease DESC"
        )
        res = engine.run(pair.without, "eve", query)
        assert [row[0] for row in res.rows] == ["none", "flu", "cold"]
        assert res.extra["noise_only_rows"] == [1, 2]
    finally:
        pair.close()


def test_ungrouped_and_thresholded_answers_have_no_domain_fields(tmp_path: Path) -> None:
    pair = neighbours(tmp_path, meta=META)
    try:
        res = engine.run(pair.without, "eve", "DP-SELECT 1 COUNT(*) FROM people WHERE disease = 'flu'")
        assert "outside_domain" not in res.extra and "noise_only_rows" not in res.extra
        res = engine.run(
            pair.without, "eve", "DP-SELECT 1 DELTA 1e-4 visits, COUNT(*) FROM people GROUP BY visits"
        )
        assert "outside_domain" not in res.extra or res.extra["outside_domain"]["keys"] == ["visits"]
    finally:
        pair.close()


def test_cli_marks_noise_only_rows(tmp_path: Path) -> None:
    pair = neighbours(tmp_path, meta=META)
    pair.close()
    query = "DP-SELECT 1 disease, COUNT(*) AS n FROM people WHERE disease = 'flu' GROUP BY disease"
    args = ["query", "--db", str(tmp_path / "with"), "--analyst", "eve", query, "--format", "table"]
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert any("cold *" in line for line in lines) and any("none *" in line for line in lines)
    assert not any("flu *" in line for line in lines)
    assert "*: noise only" in result.stdout and "outside its declared domain" in result.stdout
