"""BigQuery's spelling on two neighbouring databases (one professor in, one out): every documented example
and every refusal of tests/test_bigquery_syntax.py has one outcome on both (answered with the same columns
and rows, or the same error code and message), as DP-SELECT has (the outcome rule, DESIGN.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adversarial.neighbours import neighbours, same_outcome
from bigquery_examples import EXAMPLE_META, EXAMPLES, example_frame

PROFESSOR = [  # a professor with requests in two items (beyond max_groups 1) and a quantity above 100
    {"id": 999_999, "item": "pencil", "edu": "master", "year": 2022, "dept": "math", "age": 40,
     "quantity": 250, "price": 3.5},
    {"id": 999_999, "item": "pen", "edu": "master", "year": 2022, "dept": "math", "age": 40,
     "quantity": 7, "price": None},
]  # fmt: skip
EXTRA = [
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, privacy_unit_column=item) COUNT(*) AS n "
    "FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6) item, "
    "SUM(quantity, contribution_bounds_per_group => (500, 900)) AS s FROM people GROUP BY item",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6) "
    "AVG(price, contribution_bounds_per_group => (1, 10)) AS a, COUNT(price) AS n FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, min_privacy_units_per_group=3) item, "
    "COUNT(*, contribution_bounds_per_group => (0, 1), report_format => 'PROTO').value.int_value AS n "
    "FROM people GROUP BY item",
    "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, k_threshold=1) "
    "ANON_SUM(quantity CLAMPED BETWEEN 0 AND 100 WITH REPORT(FORMAT=PROTO)) FROM people",
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=0) COUNT(*) FROM people UNION ALL "
    "DP-SELECT 1 SUM(quantity) FROM people",
]


@pytest.mark.parametrize("i", range(len(EXAMPLES) + len(EXTRA)))
def test_one_outcome_on_both_neighbours(tmp_path: Path, i: int) -> None:
    pair = neighbours(tmp_path, example_frame(), PROFESSOR, EXAMPLE_META)
    try:
        if i < len(EXAMPLES):
            text = EXAMPLES[i].text.replace("view_on_professors", "people").replace("professors", "people")
        else:
            text = EXTRA[i - len(EXAMPLES)]
        same_outcome(pair, text)
    finally:
        pair.close()


def test_the_professor_is_outside_the_bounds() -> None:
    """The added professor is one the bounds must hold back: two groups, a quantity above the bound."""
    frame = pd.DataFrame(PROFESSOR)
    assert frame["item"].nunique() > EXAMPLE_META["max_groups"] and frame["quantity"].max() > 100
