"""A fuzzer of aggregate arguments with extreme literals, on two neighbouring databases (issue 25).

Random expressions of the allowed language, and CASEs choosing between extreme literals (±1e308, 1e154,
5e-324, 2^63 − 1, and forms that make NaN or ±inf), inside every aggregate, HAVING, ORDER BY, a subquery, a
JOIN with a public table, accuracy-first and Gaussian queries. The table holds every edge value and the
added person holds more. Each query must end the same way on both neighbours (refused before reading, or
answered with the same columns and rows), never in an internal error or a charged failure: the sums the
engine computes are finite on every database the metadata allows (privdb.sql.front.expr.totality), so nothing
after reading can fail.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.grammar import EDGE_META, GRAMMAR, HUGE, edge_frame
from adversarial.neighbours import Neighbours, neighbours, same_outcome
from privdb.sql import engine

pytestmark = pytest.mark.slow

EXTREMES = ["1e308", "-1e308", "1e154", "-1e154", "2.4e288", "1.5e144", "5e-324", "9223372036854775807",
            "-9223372036854775808", "0", "1", "SQRT(-1)", "(1e308 * 10)", "(-1e308 * 10)",
            "x", "n"]  # fmt: skip

TEMPLATES = [
    "DP-SELECT 1 SUM({a}), AVG({a}) FROM people WHERE {p}",
    "DP-SELECT 1 VARIANCE({a}), STDDEV({a}) FROM people",
    "DP-SELECT 1 VAR_POP({a}), STDDEV_POP({a}) FROM people WHERE {p}",
    "DP-SELECT 1 CORR({a}, x), COVAR_POP({a}, n) FROM people",
    "DP-SELECT 1 REGR_SLOPE({a}, n), REGR_INTERCEPT(x, {a}) FROM people",
    "DP-SELECT 1 SUM({a}) / COUNT(*) FROM people",
    "DP-SELECT 1 c, COUNT(*) FROM people GROUP BY c HAVING SUM({a}) > 0 ORDER BY AVG({a})",
    "DP-SELECT 1 c, COUNT(*) AS k FROM people GROUP BY c ORDER BY VARIANCE({a}) DESC LIMIT 2",
    "DP-SELECT 1 SUM(v), AVG(v) FROM (SELECT {a} AS v FROM people WHERE {p}) AS q",
    "DP-SELECT 1 SUM({a}), COUNT(*) FROM people JOIN regions r ON people.c = r.c",
    "DP-SELECT 1 people.c, SUM({a} * r.w) FROM people JOIN regions r ON people.c = r.c GROUP BY people.c",
    "DP-SELECT ACCURACY 1000 MAX 5 AVG({a}) FROM people",
    "DP-SELECT ACCURACY 1000 SUM({a}) FROM people WHERE {p}",
    "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN SUM({a}), COUNT(*) FROM people WHERE {p}",
    "DP-SELECT 1 DELTA 1e-6 USING GAUSSIAN c, AVG({a}) FROM people GROUP BY c",
    "DP-SELECT 1 MEDIAN({a}), QUANTILE({a}, 0.9) FROM people",
    "DP-SELECT 1 MIN({a}), MAX({a}) FROM people WHERE {p}",
    "DP-SELECT 1 DELTA 1e-6 SUM({a}) FROM people GROUP BY s",
]


def _arguments() -> st.SearchStrategy[str]:
    extreme = st.sampled_from(EXTREMES)
    chosen = st.tuples(GRAMMAR["bool"], extreme, extreme).map(
        lambda p: f"CASE WHEN {p[0]} THEN {p[1]} ELSE {p[2]} END"
    )
    scaled = st.tuples(extreme, st.sampled_from(["*", "+", "-", "/"]), GRAMMAR["num"]).map(
        lambda p: f"({p[0]} {p[1]} {p[2]})"
    )
    return st.one_of(GRAMMAR["num"], chosen, scaled, extreme)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neighbours]:
    extra = {"x": 1e308, "n": 2**63 - 1, "s": HUGE, "c": "a", "d": pd.Timestamp("2262-04-11"), "f": True}
    made = neighbours(tmp_path_factory.mktemp("pair"), edge_frame(), extra, EDGE_META)
    regions = pd.DataFrame({"c": ["a", "b", ""], "w": [1.0, 2.0, 3.0]})
    for db in made.both():
        db.backend.load_frame("regions", regions)
        db.set_metadata(
            "regions",
            {
                "public": True,
                "columns": {"c": {"type": "text"}, "w": {"type": "float", "lower": 0, "upper": 1e6}},
            },
        )
        db.grant("eve", epsilon=1e6, delta=0.5)  # hundreds of answers: no outcome is a spent budget
        db.query_timeout = 60.0
    yield made
    made.close()


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.sampled_from(TEMPLATES), _arguments(), GRAMMAR["bool"])
def test_extreme_arguments_end_the_same_way_on_neighbours(
    pair: Neighbours, template: str, argument: str, predicate: str
) -> None:
    same_outcome(pair, template.format(a=argument, p=predicate))


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_answers_a_plain_argument(pair: Neighbours, template: str) -> None:
    """The templates are live: with an ordinary argument each one is answered (so the fuzzer's refusals
    come from the arguments, not from a template privdb never answers)."""
    found = same_outcome(pair, template.format(a="CASE WHEN f THEN 1 ELSE 0 END", p="n > 0"))
    assert found[0] == "answered", found


def test_an_argument_at_the_largest_summable_bound_answers_finite(pair: Neighbours) -> None:
    """Just inside the bound, two rows at the bound meet without overflow: the answer is a number."""
    for db in pair.both():
        res = engine.run(db, "eve", "DP-SELECT 100 SUM(CASE WHEN f THEN 2.4e288 ELSE 0 END) FROM people")
        assert math.isfinite(res.rows[0][0])
