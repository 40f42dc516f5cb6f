"""ZetaSQL's differential-privacy compliance tests as privdb's own cases (issue 39).

The facts of google/zetasql's ``zetasql/compliance/testdata/`` ``differential_privacy.test``,
``differential_privacy_errors.test``, ``anonymization.test`` and ``anonymization_errors.test`` (267 queries,
225 with an answer, 42 refused): their five tables, each query's form and ZetaSQL's expected outcome. Written
for privdb: the tables are renamed (``units`` … ``rows_only``, columns ``ival`` and ``dval``) and given
privdb metadata (``uid`` the privacy unit, bounds the owner declares), each query is asked at ε = 1000 where
theirs is higher (1e20, 1e308: "without noise"; privdb refuses ε above 1000), and the expected value is the
fact: an answer matches when each value lies within its interval (tests/zetasql_check.py).

``outcome`` is privdb's, as tests/test_zetasql_corpus.py checks it: ``match`` (answered, equal to ZetaSQL's
rows), ``refused`` (``needle`` in the message), ``differs`` (answered, not ZetaSQL's rows). A case that is not
a match where ZetaSQL answers, or is answered where ZetaSQL refuses, names its ``why`` in ``DIFFERENCES``;
docs/answers.md lists them. The cases are rebuilt by tests/zetasql_build.py from a clone of google/zetasql
(after a change that moves one); the header up to ``CASES`` is kept as written.

Source: https://github.com/google/zetasql (Apache License 2.0); the query forms and expected values are
its facts, the tables' names, the metadata and the checks privdb's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

N = None
_IVAL = (N, 2, 1, N, 1, 2, 1, 4, 2, 3)
_DVAL = (N, 1.5, 1.5, 2.5, 3.5, N, -0.5, -1.5, 1.5, 2.5)

# name → (columns, rows): ten rows of one privacy unit each, the same values shared by three units, by
# mostly one unit, seven rows all NULL, and a table without a privacy unit
TABLES: dict[str, tuple[tuple[str, ...], list[tuple[Any, ...]]]] = {
    "units": (("uid", "ival", "dval"), list(zip(range(1, 11), _IVAL, _DVAL, strict=True))),
    "units_shared": (
        ("id", "uid", "ival", "dval"),
        list(zip(range(1, 11), (1, 2, 3, 1, 2, 2, 1, 2, 3, 2), _IVAL, _DVAL, strict=True)),
    ),
    "units_skewed": (
        ("id", "uid", "ival", "dval"),
        list(zip(range(1, 11), (1, 2, 1, 1, 1, 2, 1, 1, 3, 1), _IVAL, _DVAL, strict=True)),
    ),
    "units_null": (
        ("id", "uid", "ival", "dval"),
        [(i, u, N, N) for i, u in enumerate((1, 2, 1, 1, 1, 2, 1), 1)],
    ),
    "rows_only": (("ival", "dval"), [(0, 0.0), (1, 1.1), (3, 3.1), (4, 4.1), (1234, 12.34)]),
}


def meta(name: str) -> dict[str, Any]:
    """The owner's metadata: ``uid`` the privacy unit (up to 10 rows and 10 groups a unit), values in
    [-10, 10]; ``rows_only`` (ZetaSQL's table without a user id column, which it treats as not private)
    public. The columns are typed float so that a GROUP BY on them releases groups past the noisy
    threshold, as ZetaSQL's do, rather than the whole range of integers the bounds would declare."""
    if name == "rows_only":
        return {"public": True, "columns": {"ival": {"type": "int"}, "dval": {"type": "float"}}}
    columns = {
        "uid": {"type": "int", "private_id": True},
        "ival": {"type": "float", "lower": -10, "upper": 10},
        "dval": {"type": "float", "lower": -10, "upper": 10},
    }
    if "id" in TABLES[name][0]:
        columns["id"] = {"type": "int"}
    return {"privacy_unit": "uid", "max_contributions": 10, "max_groups": 10, "columns": columns}


@dataclass(frozen=True)
class Case:
    name: str  # the compliance test's name
    query: str
    rows: tuple[tuple[Any, ...], ...] | None = (
        None  # ZetaSQL's answer (any order); None: a refusal or a report
    )
    error: str = ""  # ZetaSQL's refusal, in short
    parameters: tuple[tuple[str, Any], ...] = ()  # the values of the query's @name parameters
    outcome: str = "refused"
    why: str = ""  # a key of DIFFERENCES
    needle: str = ""  # "code: words" privdb's refusal holds
    sqlite_refused: bool = False  # refused on SQLite: a per-unit clamp it cannot run safely (docs/engines.md)


DIFFERENCES = {
    "report": "a report of ANON_QUANTILES / APPROX_QUANTILES read element by element in SQL: privdb's "
    "elements are PERCENTILE_CONT's, each with the interval its share of ε gives (ZetaSQL's, at ε = 1e20, "
    "are points of its own quantile tree); over no rows an element's interval is the mechanism's choice, "
    "not always the bounds",
    "union": "a UNION ALL of a DP query and plain SQL over the private table: refused, always (raw "
    "access); a UNION ALL of DP queries alone answers",
    "empty_group": "a public group no unit reached: ZetaSQL finds bounds in each group, so its aggregate "
    "over no units is NULL; privdb finds them over all groups (NULL only where none are found at all)",
    "min_units": "min_privacy_units_per_group=1 at delta=1: τ = 1 lets a lone unit's group through with "
    "probability ≈ 1, so the threshold spends δ ≈ 1, more than any budget holds: the ledger refuses it, "
    "free (M ≥ 2 charges the δ its τ needs and answers: tests/test_bigquery_selection.py)",
    "options": "per-aggregate ε (COUNT(*, epsilon => …)) and group_selection_epsilon: not read (ε is the "
    "query's, split evenly)",
    "plain_over_private": "plain SQL reading the private table beside the DP query: refused (raw access)",
    "public_groups_join": "public groups as a join with a public table of keys: not read yet",
    "nested_cte": "public groups released by a DP query in a CTE of the DP query itself: not read yet",
    "params": "query parameters (@lower, @upper): privdb's doors take the query's text only; write the "
    "numbers",
    "default_delta": "delta left out: privdb's documented default δ = 0 (DIFFERENTIAL_PRIVACY), where "
    "ZetaSQL asks for delta",
    "bounding_report": "a report of an aggregate without bounds whose bounding_report differs from "
    "ZetaSQL's (privdb finds the bounds as ZetaSQL does: privdb.mechanisms.approx_bounds)",
    "approx_bounds": "no rows and no bounds: ZetaSQL fails to find bounds from the data, privdb too (and "
    "refuses, the bounds' ε spent)",
    "owner_bounds": "the query's bounds reach past the owner's (values in [-10, 10]): privdb meets them with "
    "the owner's, so the clamped values differ (an all-NULL column clamped to [10, 100] is [10, 10] here)",
    "answered_error": "answered where ZetaSQL refuses",
    "other": "not classified",
}


CASES: list[Case] = [
    Case(
        "anonymization_basic_k_threshold_only",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(k_threshold=0)\n"
            "  IF(ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10) >= 0, true, true)\n"
            "FROM units;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "anonymization_basic_epsilon_only",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        error="Anonymization option DELTA or K_THRESHOLD must be set",
        outcome="refused",
        needle="parse_error: WITH ANONYMIZATION needs delta or k_thre",
    ),
    Case(
        "anonymization_basic_epsilon_only_anon_avg",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        error="Anonymization option DELTA or K_THRESHOLD must be set",
        outcome="refused",
        needle="parse_error: WITH ANONYMIZATION needs delta or k_thre",
    ),
    Case(
        "anonymization_basic_anon_sum_double_implicit_bounds",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n  ANON_SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_double_implicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_double_implicit_bounds",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n  ANON_AVG(dval)\nFROM units;"),
        rows=((1.375,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_double_implicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(dval)\n"
            "FROM units_shared;"
        ),
        rows=((1.3333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n  ANON_SUM(ival)\nFROM units;"),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(ival)\n"
            "FROM units_shared;"
        ),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_int64_implicit_bounds",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n  ANON_AVG(ival)\nFROM units;"),
        rows=((2,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((13,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_double_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((1.625,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_double_explicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units_shared;"
        ),
        rows=((1.3333333333333335,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units;"
        ),
        rows=((18,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units;"
        ),
        rows=((18,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds_multi_user_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds_multi_user_larger_k",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=3)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_int64_explicit_bounds_multi_user_smaller_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=0.7)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units;"
        ),
        rows=((2.25,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds_multi_user",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds_multi_user_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds_multi_user_larger_k",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=3)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds_multi_user_smaller_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=0.7)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_k_threshold_eliminates_row",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=100)\n  ANON_SUM(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_k_threshold_eliminates_row_for_anon_avg",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=100)\n  ANON_AVG(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_explicit_bounds_sum_and_count",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((18, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_explicit_bounds_avg_and_count",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((2.25, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_kappa_scalar_aggregation",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_scalar_aggregation_explicit",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1, kappa=1)\n"
            "  ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_3",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1, kappa=3)\n"
            "  x, ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x\n"
            "GROUP BY x\n"
            "ORDER BY x ASC;"
        ),
        rows=((1, 10), (2, 10), (3, 10)),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_2",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1, kappa=2)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((20,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_1",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1, kappa=1)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((10,),),
        outcome="match",
    ),
    Case(
        "anonymization_max_groups_contributed_group_by_1",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1,"
            " max_groups_contributed=1)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((10,),),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_var_pop_implicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "    ANON_VAR_POP(dval), ANON_VAR_POP(ival),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(dval), VAR_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((2.359375, 1), (2.359375, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_var_pop_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "    ANON_VAR_POP(dval CLAMPED BETWEEN 2 AND 3),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "    ANON_VAR_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.125,), (0.1875,), (0.125,), (0.1875,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_var_pop_explicit_bounds_all_nulls",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "    ANON_VAR_POP(dval CLAMPED BETWEEN 10 AND 100),\n"
            "  FROM units_null UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "    ANON_VAR_POP(ival CLAMPED BETWEEN 10 AND 100),\n"
            "  FROM units_null"
        ),
        rows=((2025,), (2025,)),
        outcome="differs",
        why="owner_bounds",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_var_pop_implicit_bounds",
        (
            "SELECT ABS(\n"
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_VAR_POP(dval) FROM units_shared) -\n"
            "(SELECT VAR_POP(dval) FROM units_shared)) < 0.000001;"
        ),
        rows=((True,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_verify_randomness_of_anon_var_pop_implicit_bounds",
        (
            "SELECT ABS(\n"
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_VAR_POP(dval) FROM units_skewed) -\n"
            "(SELECT VAR_POP(dval) FROM units_skewed)) < 0.000001;"
        ),
        rows=((False,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_skewed' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_implicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_STDDEV_POP(dval), ANON_STDDEV_POP(ival)\n"
            "FROM units_shared UNION ALL\n"
            "SELECT STDDEV_POP(dval), STDDEV_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((1.5360257159305635, 1), (1.5360257159305635, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_STDDEV_POP(dval CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_STDDEV_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.3535533905932738,), (0.4330127018922193,), (0.3535533905932738,), (0.4330127018922193,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_explicit_bounds_all_nulls",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_STDDEV_POP(dval CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_null  UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ANON_STDDEV_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "FROM units_null"
        ),
        rows=((0.5,), (0.5,)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_with_null_epsilon",
        (
            "SELECT WITH ANONYMIZATION OPTIONS()\n"
            "  ANON_PERCENTILE_CONT(dval, 0.4), ANON_PERCENTILE_CONT(ival, 0.6)\n"
            "FROM units_shared;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_implicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval, 0.4) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival, 0.6) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_implicit_bounds_with_params",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval,\n"
            "                           0.4 CLAMPED BETWEEN @lower AND @upper) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival,\n"
            "                           0.6 CLAMPED BETWEEN @lower AND @upper) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        parameters=(("lower", 1), ("upper", 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval,\n"
            "                           0.4 CLAMPED BETWEEN 1 AND 3) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival,\n"
            "                           0.6 CLAMPED BETWEEN 1 AND 3) - 2) < 0.01,\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_percentile_cont_implicit_bounds",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "   ABS(ANON_PERCENTILE_CONT(dval, 0.1) + 1.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.1) OVER() + 0.8) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.1) OVER() + 1.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.1",
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_percentile_cont_implicit_bounds_2",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "   ABS(ANON_PERCENTILE_CONT(dval, 0.7) - 2.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.7) OVER() - 2.4) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.7) OVER() - 2.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.7",
    ),
    Case(
        "anonymization_basic_anon_sum_double_implicit_bounds_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_double_implicit_bounds_multi_user_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_SUM(dval)\nFROM units_shared;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_double_implicit_bounds_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_AVG(dval)\nFROM units;"),
        rows=((1.375,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_double_implicit_bounds_multi_user_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_AVG(dval)\nFROM units_shared;"),
        rows=((1.3333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_SUM(ival)\nFROM units;"),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_SUM(ival)\nFROM units_shared;"),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_avg_int64_implicit_bounds_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n  ANON_AVG(ival)\nFROM units;"),
        rows=((2,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((13,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_double_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((1.625,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_double_explicit_bounds_multi_user_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units_shared;"
        ),
        rows=((1.3333333333333335,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_int64_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units;"
        ),
        rows=((2.25,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_delta_eliminates_row",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=100, delta=1e-220)\n  ANON_SUM(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_delta_eliminates_row_for_anon_avg",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=100, delta=1e-220)\n  ANON_AVG(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_explicit_bounds_sum_and_count_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((18, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_explicit_bounds_avg_and_count_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10)\n"
            "FROM units;"
        ),
        rows=((2.25, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_kappa_scalar_aggregation_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_scalar_aggregation_explicit_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, kappa=1)\n"
            "  ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_3_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, kappa=3)\n"
            "  x, ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x\n"
            "GROUP BY x\n"
            "ORDER BY x ASC;"
        ),
        rows=((1, 10), (2, 10), (3, 10)),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_2_with_delta",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, kappa=2)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((20,),),
        outcome="match",
    ),
    Case(
        "anonymization_kappa_group_by_1_with_delta",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, kappa=1)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((10,),),
        outcome="match",
    ),
    Case(
        "anonymization_max_groups_contributed_group_by_1_with_delta",
        (
            "SELECT SUM(anon_count_star)\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, max_groups_contributed=1)\n"
            "    x, ANON_COUNT(*) as anon_count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((10,),),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_var_pop_implicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_VAR_POP(dval), ANON_VAR_POP(ival),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(dval), VAR_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((2.359375, 1), (2.359375, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_var_pop_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_VAR_POP(dval CLAMPED BETWEEN 2 AND 3),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_VAR_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.125,), (0.1875,), (0.125,), (0.1875,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_var_pop_explicit_bounds_all_nulls_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_VAR_POP(dval CLAMPED BETWEEN 10 AND 100),\n"
            "  FROM units_null UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_VAR_POP(ival CLAMPED BETWEEN 10 AND 100),\n"
            "  FROM units_null"
        ),
        rows=((2025,), (2025,)),
        outcome="differs",
        why="owner_bounds",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_var_pop_implicit_bounds_with_delta",
        (
            "SELECT ABS(\n"
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_VAR_POP(dval) FROM units_shared) -\n"
            "(SELECT VAR_POP(dval) FROM units_shared)) < 0.000001;"
        ),
        rows=((True,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_verify_randomness_of_anon_var_pop_implicit_bounds_with_delta",
        (
            "SELECT ABS(\n"
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_VAR_POP(dval) FROM units_skewed) -\n"
            "(SELECT VAR_POP(dval) FROM units_skewed)) < 0.000001;"
        ),
        rows=((False,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_skewed' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_implicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_STDDEV_POP(dval), ANON_STDDEV_POP(ival)\n"
            "FROM units_shared UNION ALL\n"
            "SELECT STDDEV_POP(dval), STDDEV_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((1.5360257159305635, 1), (1.5360257159305635, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_STDDEV_POP(dval CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_STDDEV_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.3535533905932738,), (0.4330127018922193,), (0.3535533905932738,), (0.4330127018922193,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "anonymization_basic_anon_stddev_pop_explicit_bounds_all_nulls_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_STDDEV_POP(dval CLAMPED BETWEEN 2 AND 3)\n"
            "FROM units_null  UNION ALL\n"
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_STDDEV_POP(ival CLAMPED BETWEEN 2 AND 3),\n"
            "FROM units_null"
        ),
        rows=((0.5,), (0.5,)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_with_null_epsilon_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS()\n"
            "  ANON_PERCENTILE_CONT(dval, 0.4), ANON_PERCENTILE_CONT(ival, 0.6)\n"
            "FROM units_shared;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_implicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval, 0.4) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival, 0.6) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_implicit_bounds_with_params_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval,\n"
            "                           0.4 CLAMPED BETWEEN @lower AND @upper) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival,\n"
            "                           0.6 CLAMPED BETWEEN @lower AND @upper) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        parameters=(("lower", 1), ("upper", 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_percentile_cont_explicit_bounds_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(ANON_PERCENTILE_CONT(dval,\n"
            "                           0.4 CLAMPED BETWEEN 1 AND 3) - 1.5) < 0.01,\n"
            "  ABS(ANON_PERCENTILE_CONT(ival,\n"
            "                           0.6 CLAMPED BETWEEN 1 AND 3) - 2) < 0.01,\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_percentile_cont_implicit_bounds_with_delta",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(ANON_PERCENTILE_CONT(dval, 0.1) + 1.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.1) OVER() + 0.8) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.1) OVER() + 1.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.1",
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_percentile_cont_implicit_bounds_2_with_delta",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(ANON_PERCENTILE_CONT(dval, 0.7) - 2.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.7) OVER() - 2.4) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.7) OVER() - 2.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.7",
    ),
    Case(
        "anonymization_basic_anon_quantiles_with_null_epsilon",
        (
            "SELECT WITH ANONYMIZATION OPTIONS()\n"
            "  ANON_QUANTILES(dval, 5 CLAMPED BETWEEN @lower AND @upper),\n"
            "  ANON_QUANTILES(ival, 5 CLAMPED BETWEEN @lower AND @upper)\n"
            "FROM units_shared;"
        ),
        parameters=(("lower", 1), ("upper", 3)),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "anonymization_basic_anon_quantiles_with_null_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000)\n"
            "  ANON_QUANTILES(dval, 5 CLAMPED BETWEEN @lower AND @upper),\n"
            "  ANON_QUANTILES(ival, 5 CLAMPED BETWEEN @lower AND @upper)\n"
            "FROM units_shared;"
        ),
        parameters=(("lower", 1), ("upper", 3)),
        error="Anonymization option DELTA or K_THRESHOLD must be set",
        outcome="refused",
        needle="parse_error: WITH ANONYMIZATION needs delta or k_thre",
    ),
    Case(
        "anonymization_basic_anon_quantiles_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(ANON_QUANTILES(dval,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3)[OFFSET(2)] - 1.5) < 0.01,\n"
            "  ABS(ANON_QUANTILES(ival,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3)[OFFSET(3)] - 2) < 0.01,\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_quantiles_explicit_bounds_result_length",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ARRAY_LENGTH(ANON_QUANTILES(dval,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3)),\n"
            "  ARRAY_LENGTH(ANON_QUANTILES(ival,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3)),\n"
            "FROM units_shared;"
        ),
        rows=((6, 6),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_quantiles_explicit_bounds",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(ANON_QUANTILES(dval, 10 CLAMPED BETWEEN -2 AND 10)[OFFSET(1)] + 1.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(APPROX_QUANTILES(dval, 10)[OFFSET(1)] + 1.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: APPROX_QUANTILE(dval, [",
    ),
    Case(
        "anonymization_verify_non_randomness_of_anon_quantiles_explicit_bounds_2",
        (
            "(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(ANON_QUANTILES(dval, 10 CLAMPED BETWEEN -2 AND 10)[OFFSET(7)] - 2.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(APPROX_QUANTILES(dval, 10)[OFFSET(7)] - 2.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: APPROX_QUANTILE(dval, [",
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 11,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_explicit_bounds_multi_user_with_report_proto_1",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.3333333333333335,
                        "noise_confidence_interval": {
                            "lower_bound": 1.3333333333333335,
                            "upper_bound": 1.3333333333333335,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_explicit_bounds_multi_user_with_report_proto_2",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 0 AND 10 WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.6333333333333333,
                        "noise_confidence_interval": {
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_implicit_bounds_multi_user_with_report_proto_1",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.3333333333333333,
                        "noise_confidence_interval": {
                            "lower_bound": 1.3333333333333333,
                            "upper_bound": 1.3333333333333333,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"float_value": 0.5},
                        "upper_bound": {"float_value": 2},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_implicit_bounds_multi_user_with_report_proto_2",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.6333333333333333,
                        "noise_confidence_interval": {
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"float_value": 0.5},
                        "upper_bound": {"float_value": 4},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_explicit_bounds_multi_user_with_report_json_1",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.3333333333333335,
                            "upper_bound": 1.3333333333333335,
                        },
                        "value": 1.3333333333333335,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_explicit_bounds_multi_user_with_report_json_2",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival CLAMPED BETWEEN 0 AND 10 WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                        },
                        "value": 1.6333333333333333,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_implicit_bounds_multi_user_with_report_json_1",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(dval WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": 0.5,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 2.0,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.3333333333333333,
                            "upper_bound": 1.3333333333333333,
                        },
                        "value": 1.3333333333333333,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_avg_implicit_bounds_multi_user_with_report_json_2",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_AVG(ival WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": 0.5,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 4.0,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                        },
                        "value": 1.6333333333333333,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 16,
                        "noise_confidence_interval": {
                            "lower_bound": -1.9172686550745535e-18,
                            "upper_bound": 1.9172686550745535e-18,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"int_value": -16},
                        "upper_bound": {"int_value": 16},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival WITH Report(format=Proto))\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for S",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH"
            " Report(format=Proto)).value.noise_confidence_interval\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                    "confidence_level": 0.95,
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_count_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 8,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_count_int64_implicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(ival WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 8,
                        "noise_confidence_interval": {
                            "lower_bound": -9.586343275372767e-19,
                            "upper_bound": 9.586343275372767e-19,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"int_value": -8},
                        "upper_bound": {"int_value": 8},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_count_int64_implicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(ival WITH Report(format=Proto))\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for C",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_count_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10 WITH"
            " Report(format=Proto)).value.noise_confidence_interval\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                    "confidence_level": 0.95,
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_anon_count_star_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 10 WITH Report(format=Proto))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 10,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 11.0,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival WITH Report(format=Json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": -16,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 16,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -1.9172686550745535e-18,
                            "upper_bound": 1.9172686550745535e-18,
                        },
                        "value": 16,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_sum_int64_implicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(ival WITH Report(format=Proto))\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for S",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_sum_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 10 WITH"
            " Report(format=Json)).result.noise_confidence_interval\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "confidence_level": 0.95,
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_count_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10 WITH Report(format=json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 8,
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_basic_anon_count_int64_implicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(ival WITH Report(format=json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": -8,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 8,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -9.586343275372767e-19,
                            "upper_bound": 9.586343275372767e-19,
                        },
                        "value": 8,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_basic_anon_count_int64_implicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(ival WITH Report(format=json))\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for C",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_count_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(dval CLAMPED BETWEEN 0 AND 10 WITH"
            " Report(format=json)).result.noise_confidence_interval\n"
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "confidence_level": 0.95,
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_anon_count_star_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 10 WITH Report(format=json))\n"
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 10,
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "anonymization_anon_quantiles_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT\n"
            "  ABS(anon_result[OFFSET(0)].float_value - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  anon_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(1)].float_value - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  anon_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(2)].float_value - 1.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound - 1.5) < 0.01,\n"
            "  anon_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(3)].float_value - 1.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(3)].noise_confidence_interval.lower_bound - 1.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(3)].noise_confidence_interval.upper_bound - 1.5) < 0.01,\n"
            "  anon_result[OFFSET(3)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(4)].float_value - 2.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(4)].noise_confidence_interval.lower_bound - 2.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(4)].noise_confidence_interval.upper_bound - 2.5) < 0.01,\n"
            "  anon_result[OFFSET(4)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(5)].float_value - 2.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(5)].noise_confidence_interval.lower_bound - 2.5) < 0.01,\n"
            "  ABS(anon_result[OFFSET(5)].noise_confidence_interval.upper_bound - 2.5) < 0.01,\n"
            "  anon_result[OFFSET(5)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_QUANTILES(dval,\n"
            "                       5 CLAMPED BETWEEN 1 AND 3 WITH REPORT(FORMAT=PROTO)).values.values"
            " AS anon_result\n"
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_int64_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT\n"
            "  ABS(anon_result[OFFSET(0)].float_value - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  anon_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(1)].float_value - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  anon_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(2)].float_value - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  anon_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(3)].float_value - 2) < 0.01,\n"
            "  ABS(anon_result[OFFSET(3)].noise_confidence_interval.lower_bound - 2) < 0.01,\n"
            "  ABS(anon_result[OFFSET(3)].noise_confidence_interval.upper_bound - 2) < 0.01,\n"
            "  anon_result[OFFSET(3)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(4)].float_value - 2) < 0.01,\n"
            "  ABS(anon_result[OFFSET(4)].noise_confidence_interval.lower_bound - 2) < 0.01,\n"
            "  ABS(anon_result[OFFSET(4)].noise_confidence_interval.upper_bound - 2) < 0.01,\n"
            "  anon_result[OFFSET(4)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(5)].float_value - 3) < 0.01,\n"
            "  ABS(anon_result[OFFSET(5)].noise_confidence_interval.lower_bound - 3) < 0.01,\n"
            "  ABS(anon_result[OFFSET(5)].noise_confidence_interval.upper_bound - 3) < 0.01,\n"
            "  anon_result[OFFSET(5)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_QUANTILES(ival,\n"
            "                       5 CLAMPED BETWEEN 1 AND 3 WITH REPORT(FORMAT=PROTO)).values.values"
            " AS anon_result\n"
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_QUANTILES(dval,\n"
            "                   3 CLAMPED BETWEEN 1 AND 10 WITH REPORT(FORMAT=PROTO)).values.values AS"
            " anon_result\n"
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_int64_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  anon_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    ANON_QUANTILES(ival,\n"
            "                   3 CLAMPED BETWEEN 1 AND 10 WITH REPORT(FORMAT=PROTO)).values.values AS"
            " anon_result\n"
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].value) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 1.5) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].value) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.lower_bound) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.upper_bound) - 1.5) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].value) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.lower_bound) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.upper_bound) - 2.5) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].value) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.lower_bound) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.upper_bound) - 2.5) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(ANON_QUANTILES(dval,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3 WITH REPORT(FORMAT=JSON)).result) AS"
            " anon_result\n"
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_int64_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].value) - 2) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.lower_bound) - 2) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.upper_bound) - 2) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(3)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].value) - 2) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.lower_bound) - 2) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.upper_bound) - 2) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(4)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].value) - 3) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.lower_bound) - 3) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.upper_bound) - 3) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(5)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(ANON_QUANTILES(ival,\n"
            "                     5 CLAMPED BETWEEN 1 AND 3 WITH REPORT(FORMAT=JSON)).result) AS"
            " anon_result\n"
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(ANON_QUANTILES(dval,\n"
            "                   3 CLAMPED BETWEEN 1 AND 10 WITH REPORT(FORMAT=JSON)).result) AS"
            " anon_result\n"
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_anon_quantiles_int64_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(anon_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(ANON_QUANTILES(ival,\n"
            "                   3 CLAMPED BETWEEN 1 AND 10 WITH REPORT(FORMAT=JSON)).result) AS"
            " anon_result\n"
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_count_unique_users_with_report_json_with_thresholding",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=JSON))\n"
            "FROM units;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -2.99573227355399e-20,
                            "upper_bound": 2.99573227355399e-20,
                        },
                        "value": 10,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_count_unique_users_with_report_json_without_thresholding",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=JSON))\n"
            "FROM units;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 10,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_count_unique_users_with_report_proto_with_thresholding",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=PROTO))\n"
            "FROM units;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 10,
                        "noise_confidence_interval": {
                            "lower_bound": -2.99573227355399e-20,
                            "upper_bound": 2.99573227355399e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_count_unique_users_with_report_proto_without_thresholding",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=PROTO))\n"
            "FROM units;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 10,
                        "noise_confidence_interval": {
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_max_rows_contributed_sum",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, max_rows_contributed=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "    UNNEST([1,2,3]) AS x;"
        ),
        rows=((11,),),
        outcome="match",
    ),
    Case(
        "anonymization_max_rows_contributed_count_star",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, max_rows_contributed=2)\n"
            "  ANON_COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "    UNNEST([1,2,3]) AS x;"
        ),
        rows=((20,),),
        outcome="match",
    ),
    Case(
        "anonymization_max_rows_contributed_count",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, max_rows_contributed=2)\n"
            "  ANON_COUNT(ival)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "    UNNEST([1,2,3]) AS x;"
        ),
        rows=((16,),),
        outcome="match",
    ),
    Case(
        "aggregate_in_if",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n"
            "  IF(ANON_COUNT(*) > 0, ANON_COUNT(*), ANON_COUNT(1/(ival-1)))\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_group_selection_laplace_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0,"
            " group_selection_strategy=LAPLACE_THRESHOLD)\n"
            "  ANON_SUM(dval)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_public_groups_without_group_by",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0,"
            " group_selection_strategy=PUBLIC_GROUPS)\n"
            "  ANON_COUNT(ival)\n"
            "FROM units;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_public_groups_with_group_by",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0,"
            " group_selection_strategy=PUBLIC_GROUPS)\n"
            "  ival, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM rows_only\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((0, 0), (1, 3), (3, 1), (4, 1), (1234, 0)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_public_groups_with_group_by_and_max_groups_contributed",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0,"
            " group_selection_strategy=PUBLIC_GROUPS, max_groups_contributed=3)\n"
            "  ival, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM rows_only\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((0, 0), (1, 3), (3, 1), (4, 1), (1234, 0)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_is_one",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=1)\n"
            "  ival, ANON_SUM(dval CLAMPED BETWEEN -4 AND 4)\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 4.5), (3, 2.5), (None, 2.5), (2, 3), (4, -1.5)),
        outcome="refused",
        why="min_units",
        needle="budget_exhausted: this answer spends δ = 1 (a release thre",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_is_2",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=2)\n"
            "  ival, ANON_COUNT(uid CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (None, 2), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_is_3",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=3)\n"
            "  ival, ANON_COUNT(uid CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_and_explicit_laplace_thresholding",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta = 1.0,"
            " min_privacy_units_per_group=3, group_selection_strategy=LAPLACE_THRESHOLD)\n"
            "  ival, ANON_COUNT(uid CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_is_4",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=4)\n"
            "  ival, ANON_COUNT(uid CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_k_threshold_and_min_privacy_units_per_group_set",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=5,"
            " min_privacy_units_per_group=2)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 2)\n"
            "FROM units"
        ),
        error="The options min_privacy_units_per_group and k_threshold cannot be spec",
        outcome="refused",
        needle="parse_error: min_privacy_units_per_group and k_thresh",
    ),
    Case(
        "anonymization_public_groups_and_min_privacy_units_per_group_set",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta = 1.0,"
            " min_privacy_units_per_group=2, group_selection_strategy = PUBLIC_GROUPS)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 2)\n"
            "FROM units"
        ),
        error="The MIN_PRIVACY_UNITS_PER_GROUP option must not be specified if GROUP_",
        outcome="refused",
        needle="parse_error: min_privacy_units_per_group goes with gr",
    ),
    Case(
        "anonymization_min_privacy_units_per_group_works_with_json_report",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=3)\n"
            "  ival, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=JSON))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(
            (
                1,
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 3,
                    }
                },
            ),
            (
                2,
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 3,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_min_privacy_units_per_group_works_with_proto_report",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=1.0, min_privacy_units_per_group=3)\n"
            "  ival, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 with REPORT(format=PROTO))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(
            (
                1,
                {
                    "value": {
                        "int_value": 3,
                        "noise_confidence_interval": {
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
            (
                2,
                {
                    "value": {
                        "int_value": 3,
                        "noise_confidence_interval": {
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "anonymization_approx_bounds_on_no_data_returns_null",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=0,"
            " group_selection_strategy=PUBLIC_GROUPS, max_groups_contributed=3)\n"
            "  ival, ANON_COUNT(*)\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM UNNEST([9999]) AS ival\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((9999, None),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "epsilon_too_large",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, k_threshold=1)\n  ANON_SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "epsilon_too_large_with_delta",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1000, delta=0.0001)\n  ANON_SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "epsilon_is_negative",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=-1, k_threshold=1)\n  ANON_SUM(dval)\nFROM units;"),
        error="Epsilon must be finite and positive, but is -0.5.",
        outcome="refused",
        needle="invalid_parameter: epsilon must be > 0 and finite, got -1",
    ),
    Case(
        "epsilon_is_zero",
        ("SELECT WITH ANONYMIZATION OPTIONS(epsilon=0, k_threshold=1)\n  ANON_SUM(dval)\nFROM units;"),
        error="Epsilon must be finite and positive, but is 0.",
        outcome="refused",
        needle="invalid_parameter: epsilon must be > 0 and finite, got 0",
    ),
    Case(
        "epsilon_is_pos_inf",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast('+inf' as double), k_threshold=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon must be finite and positive, but is inf.",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got inf",
    ),
    Case(
        "epsilon_is_neg_inf",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast('-inf' as double), k_threshold=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon must be finite and positive, but is -inf.",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got -inf",
    ),
    Case(
        "epsilon_is_nan",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast('nan' as double), k_threshold=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon cannot be NaN",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got nan",
    ),
    Case(
        "epsilon_is_null_with_implicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast(NULL as double), k_threshold=1)\n"
            "  ANON_SUM(dval)\n"
            "FROM units;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "epsilon_is_null_with_explicit_bounds",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast(NULL as double), k_threshold=1)\n"
            "  ANON_SUM(dval CLAMPED BETWEEN 0 AND 1)\n"
            "FROM units;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "epsilon_is_null_with_delta",
        (
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=cast(NULL as double), delta=0.01)\n"
            "  ANON_SUM(dval)\n"
            "FROM units;"
        ),
        error="Anonymization option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "differential_privacy_basic_delta_not_set",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        error="Differential privacy option DELTA must be set",
        outcome="differs",
        why="default_delta",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_delta_too_large",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.01)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        error="Delta must be in the inclusive interval [0,1], but is 1.01",
        outcome="refused",
        needle="invalid_parameter: delta must be in [0, 1], got 1.01",
    ),
    Case(
        "differential_privacy_sum_int64_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units;"
        ),
        rows=((18,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_int64_explicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1)\n"
            "  SUM(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_int64_explicit_bounds_multi_user_smaller_delta",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=0.7)\n"
            "  SUM(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units_shared;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_explicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1)\n"
            "  AVG(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_explicit_bounds_multi_user_smaller_delta",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=0.7)\n"
            "  AVG(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units_shared;"
        ),
        rows=((2.1333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_epsilon_not_set",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS()\n  PERCENTILE_CONT(dval, 0.4)\nFROM units_shared;"),
        error="Differential privacy option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "differential_privacy_basic_sum_double_implicit_bounds",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n  SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_double_implicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(dval)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_avg_double_implicit_bounds",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n  AVG(dval)\nFROM units;"),
        rows=((1.375,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_avg_double_implicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(dval)\n"
            "FROM units_shared;"
        ),
        rows=((1.3333333333333333,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n  SUM(ival)\nFROM units;"),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(ival)\n"
            "FROM units_shared;"
        ),
        rows=((16,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_avg_int64_implicit_bounds",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n  AVG(ival)\nFROM units;"),
        rows=((2,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        rows=((13,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        rows=((1.625,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds_multi_user",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units_shared;"
        ),
        rows=((1.3333333333333335,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(ival, contribution_bounds_per_group => (2, 3))\n"
            "FROM units;"
        ),
        rows=((2.25,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_delta_eliminates_row",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=100, delta=1e-220)\n  SUM(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_delta_eliminates_row_for_avg",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=100, delta=1e-220)\n  AVG(dval)\nFROM units;"),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_explicit_bounds_sum_and_count",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(ival, contribution_bounds_per_group => (2, 3)),\n"
            "  COUNT(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        rows=((18, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_explicit_bounds_avg_and_count",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(ival, contribution_bounds_per_group => (2, 3)),\n"
            "  COUNT(dval, contribution_bounds_per_group => (0, 10))\n"
            "FROM units;"
        ),
        rows=((2.25, 8),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_max_groups_contributed_scalar_aggregation",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "differential_privacy_max_groups_contributed_scalar_aggregation_explicit",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " max_groups_contributed=1)\n"
            "  COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x;"
        ),
        rows=((30,),),
        outcome="match",
    ),
    Case(
        "differential_privacy_max_groups_contributed_group_by_3",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " max_groups_contributed=3)\n"
            "  x, COUNT(*)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "     UNNEST([1,2,3]) as x\n"
            "GROUP BY x\n"
            "ORDER BY x ASC;"
        ),
        rows=((1, 10), (2, 10), (3, 10)),
        outcome="match",
    ),
    Case(
        "differential_privacy_max_groups_contributed_group_by_2",
        (
            "SELECT SUM(count_star)\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " max_groups_contributed=2)\n"
            "    x, COUNT(*) as count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((20,),),
        outcome="match",
    ),
    Case(
        "differential_privacy_max_groups_contributed_group_by_1",
        (
            "SELECT SUM(count_star)\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " max_groups_contributed=1)\n"
            "    x, COUNT(*) as count_star\n"
            "  FROM units\n"
            "    CROSS JOIN\n"
            "       UNNEST([1,2,3]) as x\n"
            "  GROUP BY x);"
        ),
        rows=((10,),),
        outcome="match",
    ),
    Case(
        "differential_privacy_max_rows_contributed_sum",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0, max_rows_contributed=2)\n"
            "  SUM(dval)\n"
            "FROM units\n"
            "  CROSS JOIN\n"
            "    UNNEST([1,2,3]) AS x;"
        ),
        rows=((22,),),
        outcome="match",
    ),
    Case(
        "differential_privacy_basic_var_pop_implicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    VAR_POP(dval), VAR_POP(ival),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(dval), VAR_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((2.359375, 1), (2.359375, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "differential_privacy_basic_var_pop_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    VAR_POP(dval, contribution_bounds_per_row => (2.0, 3.0)),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    VAR_POP(ival, contribution_bounds_per_row => (2.0, 3.0)),\n"
            "  FROM units_shared UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT VAR_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.125,), (0.1875,), (0.125,), (0.1875,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "differential_privacy_basic_var_pop_explicit_bounds_all_nulls",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    VAR_POP(dval, contribution_bounds_per_row => (10.0, 100.0)),\n"
            "  FROM units_null UNION ALL\n"
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    VAR_POP(ival, contribution_bounds_per_row => (10.0, 100.0)),\n"
            "  FROM units_null"
        ),
        rows=((2025,), (2025,)),
        outcome="differs",
        why="owner_bounds",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_verify_non_randomness_of_var_pop_implicit_bounds",
        (
            "SELECT ABS(\n"
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  VAR_POP(dval) FROM units_shared) -\n"
            "(SELECT VAR_POP(dval) FROM units_shared)) < 0.000001;"
        ),
        rows=((True,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "differential_privacy_verify_randomness_of_var_pop_implicit_bounds",
        (
            "SELECT ABS(\n"
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  VAR_POP(dval) FROM units_skewed) -\n"
            "(SELECT VAR_POP(dval) FROM units_skewed)) < 0.000001;"
        ),
        rows=((False,),),
        outcome="refused",
        why="plain_over_private",
        needle="raw_access_denied: table 'units_skewed' is not public: the ",
    ),
    Case(
        "differential_privacy_basic_stddev_pop_implicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  STDDEV_POP(dval), STDDEV_POP(ival)\n"
            "FROM units_shared UNION ALL\n"
            "SELECT STDDEV_POP(dval), STDDEV_POP(ival)\n"
            "  FROM units_shared;"
        ),
        rows=((1.5360257159305635, 1), (1.5360257159305635, 1)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "differential_privacy_basic_stddev_pop_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  STDDEV_POP(dval, contribution_bounds_per_row => (2, 3))\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  STDDEV_POP(ival, contribution_bounds_per_row => (2, 3)),\n"
            "FROM units_shared  UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN dval < 2 THEN 2\n"
            "        WHEN dval > 3 THEN 3\n"
            "        ELSE dval\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared) UNION ALL\n"
            "SELECT STDDEV_POP(ClampedValue) FROM (SELECT\n"
            "      CASE\n"
            "        WHEN ival < 2 THEN 2\n"
            "        WHEN ival > 3 THEN 3\n"
            "        ELSE ival\n"
            "      END\n"
            "    AS ClampedValue\n"
            "  FROM units_shared)"
        ),
        rows=((0.3535533905932738,), (0.4330127018922193,), (0.3535533905932738,), (0.4330127018922193,)),
        outcome="refused",
        why="union",
        needle="raw_access_denied: table 'units_shared' is not public: the ",
    ),
    Case(
        "differential_privacy_basic_stddev_pop_explicit_bounds_all_nulls",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  STDDEV_POP(dval, contribution_bounds_per_row => (2, 3))\n"
            "FROM units_null  UNION ALL\n"
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  STDDEV_POP(ival, contribution_bounds_per_row => (2, 3)),\n"
            "FROM units_null"
        ),
        rows=((0.5,), (0.5,)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_percentile_cont_implicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(PERCENTILE_CONT(dval, 0.4) - 1.5) < 0.01,\n"
            "  ABS(PERCENTILE_CONT(ival, 0.6) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
    ),
    Case(
        "differential_privacy_basic_percentile_cont_implicit_bounds_with_params",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(PERCENTILE_CONT(dval,\n"
            "                           0.4 , contribution_bounds_per_row => (1, 3)) - 1.5) < 0.01,\n"
            "  ABS(PERCENTILE_CONT(ival,\n"
            "                           0.6 , contribution_bounds_per_row => (1, 3)) - 2) < 0.01\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_percentile_cont_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(PERCENTILE_CONT(dval,\n"
            "                           0.4, contribution_bounds_per_row => (1, 3)) - 1.5) < 0.01,\n"
            "  ABS(PERCENTILE_CONT(ival,\n"
            "                           0.6, contribution_bounds_per_row => (1, 3)) - 2) < 0.01,\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_verify_non_randomness_of_percentile_cont_implicit_bounds",
        (
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(PERCENTILE_CONT(dval, 0.1) + 1.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.1) OVER() + 0.8) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.1) OVER() + 1.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.1",
    ),
    Case(
        "differential_privacy_verify_non_randomness_of_percentile_cont_implicit_bounds_2",
        (
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(PERCENTILE_CONT(dval, 0.7) - 2.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_CONT(dval, 0.7) OVER() - 2.4) < 0.01\n"
            " FROM units_shared LIMIT 1)\n"
            "  UNION ALL\n"
            "(SELECT ABS(PERCENTILE_DISC(dval, 0.7) OVER() - 2.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: QUANTILE_CONT(dval, 0.7",
    ),
    Case(
        "differential_privacy_basic_approx_quantiles_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ABS(APPROX_QUANTILES(dval,\n"
            "                     5, contribution_bounds_per_row => (1, 3))[OFFSET(2)] - 1.5) < 0.01,\n"
            "  ABS(APPROX_QUANTILES(ival,\n"
            "                     5, contribution_bounds_per_row => (1, 3))[OFFSET(3)] - 2) < 0.01,\n"
            "FROM units_shared;"
        ),
        rows=((True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_approx_quantiles_explicit_bounds_result_length",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  ARRAY_LENGTH(APPROX_QUANTILES(dval,\n"
            "                     5, contribution_bounds_per_row => (1, 3))),\n"
            "  ARRAY_LENGTH(APPROX_QUANTILES(ival,\n"
            "                     5, contribution_bounds_per_row => (1, 3))),\n"
            "FROM units_shared;"
        ),
        rows=((6, 6),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_verify_non_randomness_of_approx_quantiles_explicit_bounds",
        (
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(APPROX_QUANTILES(dval, 10, contribution_bounds_per_row => (-2, 10))[OFFSET(1)] +"
            " 1.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(APPROX_QUANTILES(dval, 10)[OFFSET(1)] + 1.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: APPROX_QUANTILE(dval, [",
    ),
    Case(
        "differential_privacy_verify_non_randomness_of_approx_quantiles_explicit_bounds_2",
        (
            "(SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "   ABS(APPROX_QUANTILES(dval, 10, contribution_bounds_per_row => (-2, 10))[OFFSET(7)] -"
            " 2.5) < 0.01\n"
            " FROM units_shared)\n"
            "  UNION ALL\n"
            "(SELECT ABS(APPROX_QUANTILES(dval, 10)[OFFSET(7)] - 2.5) < 0.01\n"
            " FROM units_shared LIMIT 1);"
        ),
        rows=((True,), (True,)),
        outcome="refused",
        why="union",
        needle="unsupported_query: the select list: APPROX_QUANTILE(dval, [",
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(dval, contribution_bounds_per_group => (0, 10), report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 11,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(ival, report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 16,
                        "noise_confidence_interval": {
                            "lower_bound": -1.9172686550745535e-18,
                            "upper_bound": 1.9172686550745535e-18,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"int_value": -16},
                        "upper_bound": {"int_value": 16},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(ival, report_format => "PROTO")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for S",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "PROTO").value.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                    "confidence_level": 0.95,
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(dval, contribution_bounds_per_group => (0, 10), report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.3333333333333335,
                        "noise_confidence_interval": {
                            "lower_bound": 1.3333333333333335,
                            "upper_bound": 1.3333333333333335,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_implicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(ival, report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "float_value": 1.6333333333333333,
                        "noise_confidence_interval": {
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"float_value": 0.5},
                        "upper_bound": {"float_value": 4},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_implicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(ival, report_format => "PROTO")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for A",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "PROTO").value.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(({"lower_bound": 5, "upper_bound": 5, "confidence_level": 0.95},),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_count_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(dval, contribution_bounds_per_group => (0, 10), report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 8,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_basic_count_int64_implicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(ival, report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 8,
                        "noise_confidence_interval": {
                            "lower_bound": -9.586343275372767e-19,
                            "upper_bound": 9.586343275372767e-19,
                            "confidence_level": 0.95,
                        },
                    },
                    "bounding_report": {
                        "lower_bound": {"int_value": -8},
                        "upper_bound": {"int_value": 8},
                        "num_inputs": 3,
                        "num_outside": 0,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_count_int64_implicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(ival, report_format => "PROTO")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for C",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_count_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  COUNT(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "PROTO").value.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                    "confidence_level": 0.95,
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_count_star_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(*, contribution_bounds_per_group => (0, 10), report_format => "PROTO")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "value": {
                        "int_value": 10,
                        "noise_confidence_interval": {
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(dval, contribution_bounds_per_group => (0, 10), report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 11.0,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(ival, report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": -16,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 16,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -1.9172686550745535e-18,
                            "upper_bound": 1.9172686550745535e-18,
                        },
                        "value": 16,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_sum_int64_implicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  SUM(ival, report_format => "JSON")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for S",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_sum_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "JSON").result.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "confidence_level": 0.95,
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(dval, contribution_bounds_per_group => (0, 10), report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.3333333333333335,
                            "upper_bound": 1.3333333333333335,
                        },
                        "value": 1.3333333333333335,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_implicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(ival, report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": 0.5,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 4.0,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": 1.6333333333333333,
                            "upper_bound": 1.6333333333333333,
                        },
                        "value": 1.6333333333333333,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_int64_implicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  AVG(ival, report_format => "JSON")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for A",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_avg_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  AVG(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "JSON").result.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(({"confidence_level": 0.95, "lower_bound": 5.0, "upper_bound": 5.0},),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_count_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(dval, contribution_bounds_per_group => (0, 10), report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 8,
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_basic_count_int64_implicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(ival, report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "bounding_report": {
                        "lower_bound": -8,
                        "num_inputs": 3.0,
                        "num_outside": 0.0,
                        "upper_bound": 8,
                    },
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -9.586343275372767e-19,
                            "upper_bound": 9.586343275372767e-19,
                        },
                        "value": 8,
                    },
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_basic_count_int64_implicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(ival, report_format => "JSON")\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        error="Bin count threshold was too large to find approximate bounds. Either r",
        outcome="refused",
        needle="invalid_parameter: no bounds were found from the data for C",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_count_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "  COUNT(dval, contribution_bounds_per_group => (0, 10), report_format =>"
            ' "JSON").result.noise_confidence_interval\n'
            "FROM units_shared WHERE id > 1000;"
        ),
        rows=(
            (
                {
                    "confidence_level": 0.95,
                    "lower_bound": -5.991464547107979e-19,
                    "upper_bound": 5.991464547107979e-19,
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_count_star_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(*, contribution_bounds_per_group => (0, 10), report_format => "JSON")\n'
            "FROM units_shared;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.991464547107979e-19,
                            "upper_bound": 5.991464547107979e-19,
                        },
                        "value": 10,
                    }
                },
            ),
        ),
        outcome="match",
    ),
    Case(
        "differential_privacy_approx_quantiles_double_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT\n"
            "  ABS(dp_result[OFFSET(0)].float_value - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  dp_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(1)].float_value - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  dp_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(2)].float_value - 1.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound - 1.5) < 0.01,\n"
            "  dp_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(3)].float_value - 1.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(3)].noise_confidence_interval.lower_bound - 1.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(3)].noise_confidence_interval.upper_bound - 1.5) < 0.01,\n"
            "  dp_result[OFFSET(3)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(4)].float_value - 2.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(4)].noise_confidence_interval.lower_bound - 2.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(4)].noise_confidence_interval.upper_bound - 2.5) < 0.01,\n"
            "  dp_result[OFFSET(4)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(5)].float_value - 2.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(5)].noise_confidence_interval.lower_bound - 2.5) < 0.01,\n"
            "  ABS(dp_result[OFFSET(5)].noise_confidence_interval.upper_bound - 2.5) < 0.01,\n"
            "  dp_result[OFFSET(5)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    APPROX_QUANTILES(dval,\n"
            "                       5, contribution_bounds_per_row => (1, 3), report_format =>"
            ' "PROTO").values.values AS dp_result\n'
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_int64_explicit_bounds_multi_user_with_report_proto",
        (
            "SELECT\n"
            "  ABS(dp_result[OFFSET(0)].float_value - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  dp_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(1)].float_value - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  dp_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(2)].float_value - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound - 1) < 0.01,\n"
            "  dp_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(3)].float_value - 2) < 0.01,\n"
            "  ABS(dp_result[OFFSET(3)].noise_confidence_interval.lower_bound - 2) < 0.01,\n"
            "  ABS(dp_result[OFFSET(3)].noise_confidence_interval.upper_bound - 2) < 0.01,\n"
            "  dp_result[OFFSET(3)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(4)].float_value - 2) < 0.01,\n"
            "  ABS(dp_result[OFFSET(4)].noise_confidence_interval.lower_bound - 2) < 0.01,\n"
            "  ABS(dp_result[OFFSET(4)].noise_confidence_interval.upper_bound - 2) < 0.01,\n"
            "  dp_result[OFFSET(4)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(5)].float_value - 3) < 0.01,\n"
            "  ABS(dp_result[OFFSET(5)].noise_confidence_interval.lower_bound - 3) < 0.01,\n"
            "  ABS(dp_result[OFFSET(5)].noise_confidence_interval.upper_bound - 3) < 0.01,\n"
            "  dp_result[OFFSET(5)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    APPROX_QUANTILES(ival,\n"
            "                       5, contribution_bounds_per_row => (1, 3), report_format =>"
            ' "PROTO").values.values AS dp_result\n'
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_double_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    APPROX_QUANTILES(dval,\n"
            "                   3, contribution_bounds_per_row => (1, 10), report_format =>"
            ' "PROTO").values.values AS dp_result\n'
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_int64_explicit_bounds_multi_user_with_report_proto_zero_rows",
        (
            "SELECT\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(0)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(1)].noise_confidence_interval.confidence_level = 0.95,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound - 1) < 0.01,\n"
            "  ABS(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound - 10) < 0.01,\n"
            "  dp_result[OFFSET(2)].noise_confidence_interval.confidence_level = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    APPROX_QUANTILES(ival,\n"
            "                   3, contribution_bounds_per_row => (1, 10), report_format =>"
            ' "PROTO").values.values AS dp_result\n'
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_double_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].value) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 1.5) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].value) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.lower_bound) - 1.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.upper_bound) - 1.5) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].value) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.lower_bound) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.upper_bound) - 2.5) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].value) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.lower_bound) - 2.5) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.upper_bound) - 2.5) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(APPROX_QUANTILES(dval,\n"
            "                     5, contribution_bounds_per_row => (1, 3), report_format =>"
            ' "JSON").result) AS dp_result\n'
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_int64_explicit_bounds_multi_user_with_report_json",
        (
            "SELECT\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].value) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 1) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].value) - 2) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.lower_bound) - 2) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.upper_bound) - 2) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(3)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].value) - 2) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.lower_bound) - 2) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.upper_bound) - 2) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(4)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].value) - 3) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.lower_bound) - 3) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.upper_bound) - 3) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(5)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(APPROX_QUANTILES(ival,\n"
            "                     5, contribution_bounds_per_row => (1, 3), report_format =>"
            ' "JSON").result) AS dp_result\n'
            "  FROM units_shared\n"
            ");"
        ),
        rows=(
            (
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
                True,
            ),
        ),
        outcome="differs",
        why="report",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_double_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(APPROX_QUANTILES(dval,\n"
            "                   3, contribution_bounds_per_row => (1, 10), report_format =>"
            ' "JSON").result) AS dp_result\n'
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_quantiles_int64_explicit_bounds_multi_user_with_report_json_zero_rows",
        (
            "SELECT\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(0)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(1)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.lower_bound) - 1) < 0.01,\n"
            "  ABS(DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.upper_bound) - 10) < 0.01,\n"
            "  DOUBLE(dp_result[OFFSET(2)].noise_confidence_interval.confidence_level) = 0.95,\n"
            "FROM (\n"
            "  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            "    JSON_QUERY_ARRAY(APPROX_QUANTILES(ival,\n"
            "                   3, contribution_bounds_per_row => (1, 10), report_format =>"
            ' "JSON").result) AS dp_result\n'
            "  FROM units_shared WHERE id > 1000\n"
            ");"
        ),
        rows=((True, True, True, True, True, True, True, True, True),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_count_unique_users_with_report_json_thresholding",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0)\n"
            '  COUNT(*, contribution_bounds_per_group => (0,1), report_format => "JSON")\n'
            "FROM units;"
        ),
        rows=(
            (
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 10,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_group_selection_laplace_with_delta",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(\n"
            "    epsilon=1000,\n"
            "    delta=1.0,\n"
            "    max_groups_contributed=NULL,\n"
            "    group_selection_strategy=LAPLACE_THRESHOLD\n"
            "  ) SUM(dval)\n"
            "FROM units_shared;"
        ),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_public_groups_without_group_by",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(\n"
            "    epsilon=1000,\n"
            "    delta=1.0,\n"
            "    max_groups_contributed=NULL,\n"
            "    group_selection_strategy=PUBLIC_GROUPS)\n"
            "  COUNT(ival)\n"
            "FROM units;"
        ),
        rows=((8,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_public_groups_with_group_by",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(\n"
            "    epsilon=1000,\n"
            "    delta=1.0,\n"
            "    max_groups_contributed=NULL,\n"
            "    group_selection_strategy=PUBLIC_GROUPS)\n"
            "  ival, COUNT(*, contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM rows_only\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((0, 0), (1, 3), (3, 1), (4, 1), (1234, 0)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_public_groups_with_group_by_and_max_groups_contributed",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(\n"
            "    epsilon=1000,\n"
            "    delta=1.0,\n"
            "    group_selection_strategy=PUBLIC_GROUPS,\n"
            "    max_groups_contributed=3\n"
            "  ) ival, COUNT(*, contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM rows_only\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((0, 0), (1, 3), (3, 1), (4, 1), (1234, 0)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_is_one",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=1, max_groups_contributed=NULL)\n"
            "  ival, SUM(dval, contribution_bounds_per_group => (-4.0, 4.0))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 4.5), (3, 2.5), (None, 2.5), (2, 3), (4, -1.5)),
        outcome="refused",
        why="min_units",
        needle="budget_exhausted: this answer spends δ = 1 (a release thre",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_is_2",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=2, max_groups_contributed=NULL)\n"
            "  ival, COUNT(uid,  contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (None, 2), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_is_3",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=3, max_groups_contributed=NULL)\n"
            "  ival, COUNT(uid, contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_and_explicit_laplace_thresholding",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta = 1.0,"
            " min_privacy_units_per_group=3, group_selection_strategy=LAPLACE_THRESHOLD,"
            " max_groups_contributed=NULL)\n"
            "  ival, COUNT(uid, contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=((1, 3), (2, 3)),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_is_4",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=4, max_groups_contributed=NULL)\n"
            "  ival, COUNT(uid, contribution_bounds_per_group => (0, 1))\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_public_groups_and_min_privacy_units_per_group_set",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta = 1.0,"
            " min_privacy_units_per_group=2, group_selection_strategy = PUBLIC_GROUPS,"
            " max_groups_contributed=NULL)\n"
            "  SUM(dval, contribution_bounds_per_group => (0.0, 2.0))\n"
            "FROM units"
        ),
        error="The MIN_PRIVACY_UNITS_PER_GROUP option must not be specified if GROUP_",
        outcome="refused",
        needle="parse_error: min_privacy_units_per_group goes with gr",
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_works_with_json_report",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=3, max_groups_contributed=NULL)\n"
            '  ival, COUNT(*, contribution_bounds_per_group => (0, 1), report_format => "JSON")\n'
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(
            (
                1,
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 3,
                    }
                },
            ),
            (
                2,
                {
                    "result": {
                        "noise_confidence_interval": {
                            "confidence_level": 0.95,
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                        },
                        "value": 3,
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_min_privacy_units_per_group_works_with_proto_report",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0,"
            " min_privacy_units_per_group=3, max_groups_contributed=NULL)\n"
            '  ival, COUNT(*,  contribution_bounds_per_group => (0, 1), report_format => "PROTO")\n'
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(
            (
                1,
                {
                    "value": {
                        "int_value": 3,
                        "noise_confidence_interval": {
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
            (
                2,
                {
                    "value": {
                        "int_value": 3,
                        "noise_confidence_interval": {
                            "lower_bound": -5.99146454710798e-20,
                            "upper_bound": 5.99146454710798e-20,
                            "confidence_level": 0.95,
                        },
                    }
                },
            ),
        ),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_approx_bounds_on_no_data_returns_null",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=0,"
            " group_selection_strategy=PUBLIC_GROUPS, max_groups_contributed=3)\n"
            "  ival, COUNT(*)\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM UNNEST([9999]) AS ival\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        rows=((9999, None),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "differential_privacy_per_aggregation_epsilon",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1.0, group_selection_epsilon"
            " = 1000)\n"
            "  ival,\n"
            "  COUNT(*, epsilon => 1e20),\n"
            "  ROUND(SUM(dval, epsilon => 1e20), 3),\n"
            "  ROUND(AVG(dval, epsilon => 1e20), 3),\n"
            "  ROUND(VAR_POP(dval, epsilon => 1e20), 3),\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        rows=(
            (3, 1, 2.5, 2.5, 1),
            (2, 3, 3, 1.5, 0),
            (1, 3, 4.5, 1.5, 2.667),
            (None, 2, 2.5, 2.5, 1),
            (4, 1, -1.5, -1.5, 0.25),
        ),
        outcome="refused",
        why="options",
        needle="parse_error: unknown option 'group_selection_epsilon'",
    ),
    Case(
        "differential_privacy_nested_public_groups",
        (
            "WITH\n"
            "  SelectedGroups AS (\n"
            "    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (\n"
            "      epsilon = 1000,\n"
            "      delta = 1.0,\n"
            "      max_groups_contributed = 1)\n"
            "    ival\n"
            "    FROM units\n"
            "    GROUP BY ival)\n"
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (\n"
            "  epsilon = 1000,\n"
            "  delta = 1.0,\n"
            "  max_groups_contributed = NULL,\n"
            "  group_selection_strategy = PUBLIC_GROUPS)\n"
            " ival, COUNT(*) AS anon_count\n"
            "FROM units\n"
            "  RIGHT OUTER JOIN SelectedGroups\n"
            "  USING (ival)\n"
            "GROUP BY ival;"
        ),
        rows=((None, None), (1, 3), (2, 3), (3, 1), (4, 1)),
        outcome="refused",
        why="nested_cte",
        needle="parse_error: the plain query around the DP query cann",
    ),
    Case(
        "epsilon_too_large",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=1)\n  SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "epsilon_too_large_with_delta",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1000, delta=0.0001)\n  SUM(dval)\nFROM units;"),
        rows=((11,),),
        outcome="match",
        sqlite_refused=True,
    ),
    Case(
        "epsilon_is_negative",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=-1, delta=1)\n  SUM(dval)\nFROM units;"),
        error="Epsilon must be finite and positive, but is -1",
        outcome="refused",
        needle="invalid_parameter: epsilon must be > 0 and finite, got -1",
    ),
    Case(
        "epsilon_is_zero",
        ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=0, delta=1)\n  SUM(dval)\nFROM units;"),
        error="Epsilon must be finite and positive, but is 0",
        outcome="refused",
        needle="invalid_parameter: epsilon must be > 0 and finite, got 0",
    ),
    Case(
        "epsilon_is_pos_inf",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast('+inf' as double), delta=1)\n"
            "  SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon must be finite and positive, but is inf",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got inf",
    ),
    Case(
        "epsilon_is_neg_inf",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast('-inf' as double), delta=1)\n"
            "  SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon must be finite and positive, but is -inf",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got -inf",
    ),
    Case(
        "epsilon_is_nan",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast('nan' as double), delta=1)\n"
            "  SUM(dval)\n"
            "FROM units;"
        ),
        error="Epsilon must be finite and positive, but is nan",
        outcome="refused",
        needle="invalid_parameter: epsilon must be finite, got nan",
    ),
    Case(
        "epsilon_is_null_with_implicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast(NULL as double), delta=1)\n"
            "  SUM(dval)\n"
            "FROM units;"
        ),
        error="Differential privacy option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "epsilon_is_null_with_explicit_bounds",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast(NULL as double), delta=1)\n"
            "  SUM(dval, contribution_bounds_per_group => (0, 1))\n"
            "FROM units;"
        ),
        error="Differential privacy option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "epsilon_is_null_with_delta",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=cast(NULL as double), delta=0.01)\n"
            "  SUM(dval)\n"
            "FROM units;"
        ),
        error="Differential privacy option EPSILON must be set and non-NULL",
        outcome="refused",
        needle="invalid_parameter: OPTIONS needs epsilon (set, not NULL), t",
    ),
    Case(
        "differential_privacy_lower_bound_higher_upper_bound",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=0,"
            " group_selection_strategy=PUBLIC_GROUPS, max_groups_contributed=3)\n"
            "  ival, COUNT(*, contribution_bounds_per_group => (1, 0))\n"
            "FROM units\n"
            "RIGHT OUTER JOIN (\n"
            "    SELECT DISTINCT ival FROM UNNEST([9999]) AS ival\n"
            "  ) using(ival)\n"
            "GROUP BY ival;"
        ),
        error="Lower bound cannot be greater than upper bound.",
        outcome="refused",
        needle="invalid_parameter: contribution_bounds_per_group => (1, 0):",
    ),
    Case(
        "differential_privacy_per_aggregation_epsilon_overconsumption_all_epsilon",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1.1, delta=1.0, group_selection_epsilon"
            " = 1.2)\n"
            "  ival,\n"
            "  COUNT(*, epsilon => 1.3),\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        error="Epsilon overconsumption: the sum of all `epsilon` arguments cannot exc",
        outcome="refused",
        needle="parse_error: unknown option 'group_selection_epsilon'",
    ),
    Case(
        "differential_privacy_per_aggregation_epsilon_overconsumption_some_epsilon",
        (
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1.1, delta=1.0, group_selection_epsilon"
            " = 1.2)\n"
            "  ival,\n"
            "  COUNT(*, epsilon => 1.3),\n"
            "  SUM(dval),\n"
            "FROM units\n"
            "GROUP BY ival;"
        ),
        error="Epsilon overconsumption: the sum of all `epsilon` arguments cannot exc",
        outcome="refused",
        needle="parse_error: unknown option 'group_selection_epsilon'",
    ),
]
