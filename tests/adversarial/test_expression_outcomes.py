"""Issue 13, findings 1, 2, 3 and 5: a query's outcome never depends on whether one person is present.

Each query is run on two neighbouring databases — without and with Alice (HIV, income 55,555, born
1985-03-02) — and must end the same way on both: the same columns and row count, or the same error code and
message, and never ``query_failed`` or ``internal_error`` (a failure after the data was read)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adversarial.neighbours import Neighbours, cli_outcome, neighbours, same_outcome

# 1. non-scalar GROUP BY keys: refused before reading, whatever WHERE selects
NON_SCALAR_KEYS = [
    "GROUP BY [income]",
    "GROUP BY {'x': income}",
    "GROUP BY MAP([1], [income])",
    "GROUP BY LIST_VALUE(income)",
    "GROUP BY STRING_SPLIT(disease, 'l')",
    "GROUP BY CASE WHEN age > 1 THEN [income] ELSE [0] END",
    "GROUP BY ROW(income, age)",
    "GROUP BY [income][1:1]",
    "GROUP BY UNNEST([income])",
]
# 2. functions whose cost the data would control: refused, or bounded by literal arguments
COSTLY = [
    "LENGTH(REPEAT(disease, CAST(income AS INT))) > 0",
    "LENGTH(LPAD(disease, CAST(income AS INT) * 1000, 'x')) > 0",
    "LENGTH(RPAD(disease, age * 100000, 'x')) > 0",
    "LEN(RANGE(CAST(income AS BIGINT))) > 0",
    "LEVENSHTEIN(disease || disease, name) > 0",
    "LENGTH(LPAD(disease, 4096, 'ab')) > 0",
    "LENGTH(REPLACE(REPLACE(name, 'e', 'eeeeeeeeee'), 'e', 'eeeeeeeeee')) > 1000",
]
# 3. predicates that fail on some rows in engines without per-row totality, or with bad literals
FAILING = [
    "name LIKE 'Alic\\'",
    "name LIKE 'Alic\\' AND disease = 'HIV'",
    "disease = 'HIV' AND STRPTIME('not a date', '%Y-%m-%d') IS NOT NULL",
    "disease = 'HIV' AND STRPTIME(name, '%Q') IS NOT NULL",
    "disease = 'HIV' AND regexp_matches(name, '(')",
    "disease = 'HIV' AND regexp_matches(name, CASE WHEN age = 40 THEN '(' ELSE 'a' END)",
    "disease = 'HIV' AND CAST(name AS INT) > 0",
    "disease = 'HIV' AND CAST(income * 1e300 AS BIGINT) > 0",
    "disease = 'HIV' AND age % 0 = 1",
    "disease = 'HIV' AND age // 0 = 1",
    "disease = 'HIV' AND 9223372036854775807 + visits > 0",
    "disease = 'HIV' AND income * 1e308 * 1e308 > 0",
    "disease = 'HIV' AND LN(income - 55555) > 0",
    "disease = 'HIV' AND SQRT(-income) > 0",
    "disease = 'HIV' AND EXP(income) > 0",
    "disease = 'HIV' AND POWER(income, income) > 0",
    "disease = 'HIV' AND born = 'not a date'",
    "disease = 'HIV' AND income = 'abc'",
    "disease = 'HIV' AND DATE_TRUNC('fortnight', born) IS NOT NULL",
    "disease = 'HIV' AND SUBSTRING(name, age - 100, 2) = 'x'",
    "disease = 'HIV' AND LEFT(name, -5) = ''",
    "disease = 'HIV' AND CAST(CAST(income AS VARCHAR) AS DOUBLE) > 0",
    "disease = 'HIV' AND TRY_CAST(name AS DATE) IS NULL",
    "disease = 'HIV' AND ROUND(income, 400) > 0",
    "disease = 'HIV' AND ABS(CAST(-9223372036854775808 AS BIGINT)) > 0",
    "disease = 'HIV' AND CHR(age * 100000) = 'a'",
    "disease = 'HIV' AND FACTORIAL(age) > 0",
    "disease = 'HIV' AND EXTRACT(year FROM born) = 1985",
    "disease = 'HIV' AND isnan(income / 0) ",
]
# 5. star-like expressions that would bypass the column checks
STARS = [
    "DP-SELECT 1 DELTA 1e-6 COLUMNS('na.*'), COUNT(*) FROM people GROUP BY ALL",
    "DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM people GROUP BY COLUMNS('na.*')",
    "DP-SELECT 1 DELTA 1e-6 COLUMNS(c -> c LIKE 'n%'), COUNT(*) FROM people "
    "GROUP BY COLUMNS(c -> c LIKE 'n%')",
    "DP-SELECT 1 DELTA 1e-6 * EXCLUDE (age), COUNT(*) FROM people GROUP BY ALL",
    "DP-SELECT 1 DELTA 1e-6 people.*, COUNT(*) FROM people GROUP BY ALL",
    "DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM people GROUP BY *",
    "DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM people GROUP BY CUBE (name)",
    "DP-SELECT 1 DELTA 1e-6 COUNT(*) FROM people GROUP BY #1",
    "DP-SELECT 1 COLUMNS('na.*') FROM people",
    "DP-SELECT 1 * REPLACE (name AS disease) FROM people",
    "DP-SELECT 1 COUNT(*) FROM people USING SAMPLE 10",
    "DP-SELECT 1 COUNT(*) FROM people QUALIFY 1 = 1",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    made = neighbours(tmp_path_factory.mktemp("neighbours"))
    yield made
    made.close()


@pytest.mark.parametrize("key", NON_SCALAR_KEYS)
def test_non_scalar_keys_are_refused_before_reading(pair: Neighbours, key: str) -> None:
    query = f"DP-SELECT 0.001 DELTA 1e-9 COUNT(*) FROM people WHERE name = 'Alice' AND disease = 'HIV' {key}"
    result = same_outcome(pair, query)
    assert result[:2] == ("error", "unsupported_query") or result[0] == "error", result


@pytest.mark.parametrize("predicate", COSTLY)
def test_costly_functions_are_refused_or_bounded(pair: Neighbours, predicate: str) -> None:
    same_outcome(pair, f"DP-SELECT 0.001 COUNT(*) FROM people WHERE name = 'Alice' AND {predicate}")


@pytest.mark.parametrize("predicate", FAILING)
def test_no_row_can_make_a_query_fail(pair: Neighbours, predicate: str) -> None:
    same_outcome(pair, f"DP-SELECT 0.001 COUNT(*) FROM people WHERE {predicate}")
    same_outcome(
        pair, f"DP-SELECT 0.001 DELTA 1e-9 disease, COUNT(*) FROM people WHERE {predicate} GROUP BY disease"
    )


@pytest.mark.parametrize("query", STARS)
def test_star_like_expressions_never_release_identifiers(pair: Neighbours, query: str) -> None:
    result = same_outcome(pair, query)
    assert result[0] == "error", result  # every one is refused: none names its columns


def test_the_issues_attack_gets_one_answer_whatever_alice_has(pair: Neighbours) -> None:
    """The binary search of issue 13: `AND income > X GROUP BY [income]` failed only when Alice's row
    passed WHERE. Now every threshold gives the same refusal on both neighbours."""
    outcomes = set()
    for threshold in (0, 30_000, 55_000, 55_556, 90_000):
        query = (
            "DP-SELECT 0.0001 DELTA 1e-9 COUNT(*) FROM people WHERE name = 'Alice' "
            f"AND income > {threshold} GROUP BY [income]"
        )
        outcomes.add(same_outcome(pair, query))
    assert len(outcomes) == 1


@pytest.mark.parametrize(
    "query",
    [
        "DP-SELECT 0.001 DELTA 1e-9 COUNT(*) FROM people WHERE name='Alice' AND disease='HIV' "
        "GROUP BY [income]",
        "DP-SELECT 0.001 COUNT(*) FROM people WHERE disease = 'HIV' AND CAST(name AS INT) > 0",
        "DP-SELECT 0.001 COUNT(*) FROM people WHERE name LIKE 'Alic\\'",
    ],
)
def test_the_command_line_exits_the_same_way(pair: Neighbours, query: str) -> None:
    first, second = (cli_outcome(db, query) for db in pair.both())
    assert first == second
    assert first[0] in (0, 2)  # an answer or a user error; never 1 (an internal fault)


def test_allowed_forms_keep_working(tmp_path: Path) -> None:
    """The language is generous within its rules: these answer on both neighbours."""
    made = neighbours(tmp_path)
    try:
        for query in [
            "DP-SELECT 1 COUNT(*) FROM people WHERE LOWER(disease) LIKE 'fl%' AND YEAR(born) > 1960",
            "DP-SELECT 1 DELTA 1e-6 FLOOR(age / 10) AS decade, AVG(income) FROM people "
            "GROUP BY FLOOR(age / 10)",
            "DP-SELECT 1 COUNT(*) FROM people WHERE CASE WHEN age > 30 THEN income ELSE 0 END > 1000",
            "DP-SELECT 1 COUNT(*) FROM people WHERE COALESCE(NULLIF(disease, 'none'), 'x') IN ('flu', 'x')",
            "DP-SELECT 1 COUNT(*) FROM people WHERE ROUND(income / 1000, 1) BETWEEN 10 AND 20.5",
            "DP-SELECT 1 COUNT(*) FROM people WHERE CONCAT(disease, '-', CAST(age AS VARCHAR)) LIKE 'flu-%'",
            "DP-SELECT 1 COUNT(*) FROM people WHERE born >= DATE '1970-01-01' AND born < '1990-01-01'",
            "DP-SELECT 1 DELTA 1e-6 DATE_TRUNC('decade', born) AS d, COUNT(*) FROM people GROUP BY 1",
            "DP-SELECT 1 COUNT(*) FROM people WHERE STRPOS(UPPER(name), 'ON') > 0 AND LENGTH(TRIM(name)) > 3",
        ]:
            result = same_outcome(made, query)
            assert result[0] == "answered", (query, result)
    finally:
        made.close()
