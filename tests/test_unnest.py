"""``UNNEST([…]) AS x`` of literals (issue 39): a public relation in DP-SELECT's FROM
(privdb.sql.front.relation.literal), ZetaSQL's ``CROSS JOIN UNNEST`` in BigQuery's spelling
(privdb.sql.front.bigquery.unnest) and ``max_rows_contributed``. Answers at ε = 1000 over
tests/zetasql_corpus.py's ``units`` (ten units of one row; ``m`` = ``G`` = 10); every refusal comes from the
text and the metadata, before any read, and spends nothing."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from privdb.database import Database
from privdb.errors import InvalidParameter, PrivdbError, UnsupportedQuery
from privdb.sql import engine
from privdb.sql.front.relation.literal import literal_relation
from test_bigquery_anon import db

__all__ = ["db"]  # the ZetaSQL tables' database of the older spelling's tests (ε 1e9, δ 0.5)
DP = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=0.5{}) "


def _unnest(text: str) -> exp.Unnest:
    node = sqlglot.parse_one(f"SELECT * FROM t CROSS JOIN {text}", read="duckdb").args["joins"][0].this
    assert isinstance(node, exp.Unnest)
    return node


def _rows(db: Database, text: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in engine.run(db, "a", text).rows]


def test_a_literal_array_is_a_public_relation_with_its_values_as_domain() -> None:
    rel = literal_relation(_unnest("UNNEST([3, -1, 3]) AS x"))
    column = rel.meta.columns["x"]
    assert rel.public and rel.tables == ()
    assert (column.type, column.lower, column.upper, column.values) == ("int", -1.0, 3.0, (3, -1))
    assert (
        rel.sql is not None
        and rel.sql({}) == 'SELECT 3 AS "x" UNION ALL SELECT -1 AS "x" UNION ALL SELECT 3 AS "x"'
    )
    text = literal_relation(_unnest("UNNEST(['a', 'it''s']) AS t(k)"))
    assert text.meta.columns["k"].type == "text" and text.meta.columns["k"].values == ("a", "it's")


@pytest.mark.parametrize(
    ("written", "needle"),
    [
        ("UNNEST([ival]) AS x", "ival is not a literal"),
        ("UNNEST(GENERATE_SERIES(1, 3)) AS x", "UNNEST(GENERATE_SERIES(1, 3))"),
        ("UNNEST([1, 'a']) AS x", "mixes strings and numbers"),
        ("UNNEST([1, 2])", "needs one name"),
        ("UNNEST([1, 2]) AS x WITH OFFSET", "WITH OFFSET"),
    ],
)
def test_what_is_not_an_array_of_literals_is_refused(written: str, needle: str) -> None:
    with pytest.raises(UnsupportedQuery, match="join a public table of its values instead") as err:
        literal_relation(_unnest(written))
    assert needle in err.value.message


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("DP-SELECT 1000 DELTA 0.5 COUNT(*) AS n FROM units CROSS JOIN UNNEST([1, 2, 3]) AS x", [(30,)]),
        (DP.format("") + "COUNT(*) FROM units CROSS JOIN UNNEST([1, 2, 3]) AS x", [(30,)]),
        (DP.format("") + "COUNT(*) FROM units, UNNEST([1, 2]) AS x", [(20,)]),
        (
            DP.format(", max_rows_contributed=1") + "SUM(dval) FROM units CROSS JOIN UNNEST([1, 2, 3]) AS x",
            [(11,)],
        ),
        (
            DP.format(", max_rows_contributed=2")
            + "COUNT(ival) FROM units CROSS JOIN UNNEST([1, 2, 3]) AS x",
            [(16,)],
        ),
        (
            DP.format(", max_groups_contributed=1")
            + "x, COUNT(*) FROM units CROSS JOIN UNNEST(['a', 'b']) AS x "
            "GROUP BY x",
            None,  # each unit in one of the two groups: 10 in all
        ),
    ],
)
def test_the_answers_bound_each_unit_after_the_join(
    db: Database, text: str, want: list[tuple[int]] | None
) -> None:
    rows = _rows(db, text)
    if want is None:
        assert sorted(k for k, _ in rows) == ["a", "b"]
        assert sum(float(n) for _, n in rows) == pytest.approx(10, abs=1)
        return
    assert [tuple(round(float(v)) for v in row) for row in rows] == want


@pytest.mark.parametrize(
    ("text", "error", "needle"),
    [
        ("DP-SELECT 1000 COUNT(*) FROM UNNEST([1, 2]) AS x", UnsupportedQuery, "reads no table"),
        (
            DP.format("") + "COUNT(*) FROM units CROSS JOIN UNNEST([ival]) AS x",
            UnsupportedQuery,
            "not a literal",
        ),
        (
            DP.format("") + "COUNT(*) FROM units JOIN UNNEST([1]) AS x ON x = ival",
            UnsupportedQuery,
            "CROSS JOIN",
        ),
        (DP.format(", max_rows_contributed=11") + "COUNT(*) FROM units", InvalidParameter, "never widen"),
        (DP.format(", max_rows_contributed=0") + "COUNT(*) FROM units", InvalidParameter, "whole number ≥ 1"),
        (
            DP.format(", max_rows_contributed=1, max_groups_contributed=1") + "COUNT(*) FROM units",
            InvalidParameter,
            "exclusive",
        ),
        (DP.format(", max_rows_contributed=1") + "AVG(dval) FROM units", UnsupportedQuery, "per-unit AVG"),
    ],
)
def test_refusals_spend_nothing(db: Database, text: str, error: type[PrivdbError], needle: str) -> None:
    before = db.budget("a")
    with pytest.raises(error) as err:
        engine.run(db, "a", text)
    assert needle in err.value.message
    assert db.budget("a") == before


def test_max_rows_narrows_the_plan_to_r_rows_and_groups(db: Database) -> None:
    """``max_rows_contributed=2``: m = 2 in the plan (the owner's is 10), after the join, as explain shows."""
    text = (
        DP.format(", max_rows_contributed=2") + "COUNT(*) AS n FROM units CROSS JOIN UNNEST([1, 2, 3]) AS x"
    )
    answer = engine.explain(db, text, analyst="a")
    # the count's, then its noisy count of units (a BigQuery total with δ is thresholded on it)
    assert [s["sensitivity"] for s in answer["statistics"]] == [2.0, 1.0]  # type: ignore[index]
    assert "at most 2 rows per uid" in str(answer["covers"])
