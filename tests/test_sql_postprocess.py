"""privdb.sql.front.formulas.compiler: expressions over noisy aggregates and HAVING, evaluated as
post-processing."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import numpy as np
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sqlglot import exp

from privdb.errors import UnsupportedQuery
from privdb.sql.front.formulas.compiler import ALLOWED, Formula, compile_formula, compile_predicate
from privdb.sql.front.formulas.vectors import Values

F = NDArray[np.float64]

AGGREGATES = ["SUM(a)", "COUNT(*)", "AVG(b)"]  # leaves 0-2: noisy numbers with intervals
KEYS = ["k", "s", "p", "q"]  # leaves 3-6: a number key, a text key, two boolean keys (exact)
NAMES = AGGREGATES + KEYS


def leaf(node: exp.Expression) -> int | None:
    """The caller's part: registered aggregates and GROUP BY keys are leaves, nothing else is."""
    if isinstance(node, exp.AggFunc | exp.Column):
        text = node.sql(dialect="duckdb")
        return NAMES.index(text) if text in NAMES else None
    return None


def parse(sql: str) -> exp.Expression:
    node: exp.Expression = sqlglot.parse_one(f"SELECT {sql}", read="duckdb").expressions[0]
    return node


def formula(sql: str) -> Formula:
    return compile_formula(parse(sql), leaf, "the select list")


def noisy(values: list[float], lo: list[float] | None = None, hi: list[float] | None = None) -> Values:
    x = np.array(values, dtype=np.float64)
    lo_, hi_ = (x - 1, x + 1) if lo is None or hi is None else (np.array(lo, float), np.array(hi, float))
    return Values(x, lo_, hi_)


def world(n: int, **given: Any) -> list[Values]:
    """Leaves for n groups: aggregates as ``noisy`` Values (given by name a, count, b), keys exact."""
    out = []
    for name in ("a", "count", "b"):
        out.append(given.get(name, noisy([float("nan")] * n)))
    k = np.array([np.nan if v is None else v for v in given.get("k", [None] * n)], dtype=np.float64)
    out.append(Values(k, k, k, exact=True))
    for name in ("s", "p", "q"):
        out.append(Values(list(given.get(name, [None] * n)), exact=True))
    return out


def ev(sql: str, n: int = 1, **given: Any) -> Values:
    return formula(sql).evaluate(world(n, **given), n)


def num(sql: str, n: int = 1, **given: Any) -> tuple[F, F, F]:
    """A numeric formula's values and interval ends."""
    r = ev(sql, n, **given)
    assert isinstance(r.values, np.ndarray) and r.lo is not None and r.hi is not None
    return r.values, r.lo, r.hi


def fetch(sql: str) -> list[Any]:
    relation = duckdb.sql(sql)
    assert relation is not None
    return [row[0] for row in relation.fetchall()]


def same(a: Any, b: Any) -> bool:
    fa, fb = (None if v is None or v != v else float(v) for v in (a, b))
    return fa == fb or (fa is not None and fb is not None and math.isclose(fa, fb, rel_tol=1e-12))


# ---- values: every form against DuckDB on an exact number key (DuckDB is privdb's reference engine)
KEY_VALUES = [-2.5, -1.0, 0.0, 0.5, 2.5, 3.0, 7.0, None]
FORMS = [
    "k * 5", "k + 1.5", "k - 2", "-k", "k % 2", "k % -3", "ABS(k)", "SIGN(k)", "ROUND(k)", "ROUND(k, 1)",
    "ROUND(k * 1.234, 2)", "ROUND(k * 123, -1)", "FLOOR(k)", "CEIL(k)", "CEILING(k)", "TRUNC(k)", "SQRT(k)",
    "LN(k)", "LOG(k + 3)", "LOG10(k + 3)", "LOG2(k + 3)", "LOG(2, k + 3)", "EXP(k)", "POWER(k, 2)",
    "POW(k, 3)", "POWER(k, 0.5)", "POWER(k, -1)", "k ^ 2", "POWER(2, k)", "LEAST(k, 1)",
    "GREATEST(k, 1, NULL)", "LEAST(k, NULL)", "PI() * k", "CASE WHEN k > 1 THEN k ELSE -k END",
    "CASE k WHEN 0 THEN 10 WHEN 3 THEN 30 END", "IF(k > 0, k, NULL)", "COALESCE(k, 42)",
    "COALESCE(NULL, k, 1)", "NULLIF(k, 0)", "CAST(k AS DOUBLE)", "CAST(k AS INTEGER)", "CAST(k AS BIGINT)",
    "k::INT", "TRY_CAST(k AS BIGINT)", "1 / NULLIF(k, 0)", "(k)",
    "k > 0", "k = 0.5", "k <> 3", "k != 3", "k >= 0 AND k < 3", "k < 0 OR k > 2", "NOT k > 0", "k IS NULL",
    "k IS NOT NULL", "k IN (0, 3, 7)", "k IN (1, NULL)", "k IN (-2.5, NULL)", "k NOT IN (1, 2)",
    "k BETWEEN 0 AND 3", "k NOT BETWEEN 0 AND 3", "(k > 0) = TRUE", "k > 0 AND NULL", "k > 0 OR NULL",
    "NOT (k > NULL)", "k > 0 AND k > 1 OR NOT k < 5", "CASE WHEN k > 0 THEN 'pos' ELSE 'neg' END",
    "IF(k IS NULL, 'none', 'some')", "COALESCE(NULL, 'x')", "'a' < 'b'", "NULLIF('a', 'a')", "NULL", "3",
    "TRUE",
]  # fmt: skip


@pytest.mark.parametrize("sql", FORMS)
def test_values_match_duckdb(sql: str) -> None:
    rows = ", ".join(f"({i}, {'NULL' if v is None else v}::DOUBLE)" for i, v in enumerate(KEY_VALUES))
    expected = fetch(f"SELECT {sql} FROM (VALUES {rows}) t(i, k) ORDER BY i")
    got = ev(sql, len(KEY_VALUES), k=KEY_VALUES).values
    got = got.tolist() if isinstance(got, np.ndarray) else got
    if any(isinstance(v, bool | str) for v in expected):
        assert got == expected
    else:
        assert all(same(g, e) for g, e in zip(got, expected, strict=True)), (got, expected)


def test_kinds_and_leaves() -> None:
    assert formula("SUM(a) + SUM(a) * COUNT(*)").leaves == (0, 1)
    assert formula("SUM(a) / 2").kind == "number"
    assert formula("SUM(a) > 2").kind == "boolean"
    assert formula("CASE WHEN SUM(a) > 2 THEN 'big' ELSE s END").kind == "text"
    assert formula("COALESCE(s, s)").kind == "other"
    assert formula("3").leaves == ()


def test_leaf_is_asked_first_about_every_node() -> None:
    seen: list[str] = []

    def recording(node: exp.Expression) -> int | None:
        seen.append(node.sql(dialect="duckdb"))
        return 0 if isinstance(node, exp.Paren) and node.this.sql() == "SUM(b)" else leaf(node)

    compile_formula(parse("ROUND((SUM(b)) * 2, 1) + (COUNT(*))"), recording, "here")
    order = ["ROUND((SUM(b)) * 2, 1) + (COUNT(*))", "ROUND((SUM(b)) * 2, 1)", "(SUM(b)) * 2", "(SUM(b))"]
    assert [seen.index(s) for s in order] == sorted(seen.index(s) for s in order)  # parents first
    assert seen.index("(COUNT(*))") < seen.index("COUNT(*)") and "1" in seen and "2" in seen
    assert "SUM(b)" not in seen  # (SUM(b)) was a leaf


def test_division_by_zero_and_domains_are_null() -> None:
    assert np.isnan(num("SUM(a) / COUNT(*)", 3, a=noisy([1, 1, 0]), count=noisy([0, -0.0, 0]))).all()
    assert np.isnan(num("SQRT(SUM(a))", a=noisy([-4]))[0]).all()
    assert np.isnan(num("LN(SUM(a))", a=noisy([-4]))[0]).all()
    assert np.isnan(num("SUM(a) % 0", a=noisy([3]))[0]).all()
    assert np.isnan(num("CAST(SUM(a) AS INTEGER)", a=noisy([3e9]))[0]).all()  # out of range: NULL
    assert num("CAST(SUM(a) AS BIGINT)", a=noisy([3e9]))[0].tolist() == [3e9]
    assert num("EXP(SUM(a))", a=noisy([1e6]))[0].tolist() == [math.inf]


def test_round_is_half_away_from_zero() -> None:
    xs = [2.5, -2.5, 0.5, -0.5, 1.5, 0.49999999999999994, 1.25, -1.25, 12345.0, 1e308]
    assert num("ROUND(k)", len(xs), k=xs)[0].tolist() == [3, -3, 1, -1, 2, 0, 1, -1, 12345, 1e308]
    assert num("ROUND(k, 1)", len(xs), k=xs)[0].tolist()[6:8] == [1.3, -1.3]
    assert num("ROUND(k, -1)", len(xs), k=xs)[0].tolist()[8] == 12350
    assert num("ROUND(k, 400)", 1, k=[1.5])[0].tolist() == [1.5]
    assert num("ROUND(k, -400)", 1, k=[1.5])[0].tolist() == [0.0]
    # CAST to an integer type is DuckDB's: to nearest, ties to even
    assert num("CAST(k AS INTEGER)", 3, k=[2.5, 3.5, -2.5])[0].tolist() == [2, 4, -2]


# ---- SQL's three-valued logic
P = [True, True, True, False, False, False, None, None, None]
Q = [True, False, None] * 3


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("p AND q", [True, False, None, False, False, False, None, False, None]),
        ("p OR q", [True, True, True, True, False, None, True, None, None]),
        ("NOT p", [False, False, False, True, True, True, None, None, None]),
        ("p = q", [True, False, None, False, True, None, None, None, None]),
        ("p IS NULL", [False] * 6 + [True] * 3),
        ("NOT (p AND q) = (NOT p OR NOT q)", [True, True, None, True, True, True, None, True, None]),
    ],
)
def test_three_valued_logic(sql: str, expected: list[bool | None]) -> None:
    assert compile_predicate(parse(sql), leaf).evaluate(world(9, p=P, q=Q), 9).values == expected
    sql_of = {True: "TRUE", False: "FALSE", None: "NULL"}
    rows = ", ".join(
        f"({i}, {sql_of[p]}::BOOLEAN, {sql_of[q]}::BOOLEAN)"
        for i, (p, q) in enumerate(zip(P, Q, strict=True))
    )
    assert fetch(f"SELECT {sql} FROM (VALUES {rows}) t(i, p, q) ORDER BY i") == expected


def test_comparisons_with_null_and_mismatched_values_are_null() -> None:
    n = 4
    w = world(n, a=noisy([1, float("nan"), 3, 4]), s=["M", "F", None, 5], p=[True, False, True, None])
    assert compile_predicate(parse("SUM(a) > 2"), leaf).evaluate(w, n).values == [False, None, True, True]
    assert compile_predicate(parse("s = 'M'"), leaf).evaluate(w, n).values == [True, False, None, None]
    assert compile_predicate(parse("s = 1"), leaf).evaluate(w, n).values == [None, None, None, False]
    assert compile_predicate(parse("p = SUM(a)"), leaf).evaluate(w, n).values == [None] * 4
    assert compile_predicate(parse("p"), leaf).evaluate(w, n).values == [True, False, True, None]
    assert compile_predicate(parse("SUM(a)"), leaf).evaluate(w, n).values == [None] * 4  # not a boolean
    verdict = compile_predicate(parse("COUNT(*) > 100 AND s <> 'M'"), leaf).evaluate(
        world(2, count=noisy([150, 150]), s=["F", "M"]), 2
    )
    assert verdict.values == [True, False] and verdict.values[0] is True


def test_empty_groups() -> None:
    assert num("SUM(a) * 2 + k", 0, a=noisy([]), k=[])[0].shape == (0,)
    assert compile_predicate(parse("p AND SUM(a) > 1"), leaf).evaluate(world(0, a=noisy([])), 0).values == []


# ---- intervals
def test_intervals_by_interval_arithmetic() -> None:
    a, c = noisy([10], [8], [12]), noisy([4], [-1], [5])

    def iv(sql: str, **given: Any) -> list[float]:
        _, lo, hi = num(sql, 1, **given)
        return [float(lo[0]), float(hi[0])]

    assert iv("SUM(a) * 5 - 1", a=a) == [39, 59]
    assert iv("-SUM(a) + COUNT(*)", a=a, count=c) == [-13, -3]
    assert iv("SUM(a) * COUNT(*)", a=a, count=c) == [-12, 60]
    assert iv("SUM(a) / COUNT(*)", a=a, count=noisy([4], [2], [5])) == [1.6, 6]
    assert all(map(math.isnan, iv("SUM(a) / COUNT(*)", a=a, count=c)))  # the divisor may be 0
    assert iv("ABS(COUNT(*))", count=c) == [0, 5]
    assert iv("POWER(COUNT(*), 2)", count=c) == [0, 25]
    assert iv("POWER(COUNT(*), 3)", count=c) == [-1, 125]
    assert all(map(math.isnan, iv("POWER(COUNT(*), 0.5)", count=c)))  # base may be negative
    assert all(map(math.isnan, iv("POWER(COUNT(*), -1)", count=c)))  # may be 1/0
    assert iv("POWER(SUM(a), -1)", a=noisy([2], [1], [4])) == [0.25, 1]
    assert all(map(math.isnan, iv("SQRT(COUNT(*))", count=c)))
    assert iv("SQRT(SUM(a))", a=noisy([9], [4], [16])) == [2, 4]
    assert iv("LOG10(SUM(a))", a=noisy([10], [1], [100])) == [0, 2]
    assert iv("LOG(0.5, SUM(a))", a=noisy([2], [1], [4])) == [-2, 0]
    assert iv("ROUND(SUM(a) / 3, 1)", a=a) == [2.7, 4.0]
    assert iv("CAST(SUM(a) AS INTEGER)", a=noisy([3], [2.5], [3.5])) == [2, 4]
    assert iv("LEAST(SUM(a), COUNT(*))", a=a, count=c) == [-1, 5]
    assert iv("GREATEST(SUM(a), COUNT(*), NULL)", a=a, count=c) == [8, 12]
    assert iv("CASE WHEN SUM(a) > 9 THEN COUNT(*) ELSE 100 END", a=a, count=c) == [-1, 100]  # either branch
    assert iv("CASE WHEN k > 9 THEN COUNT(*) ELSE 100 END", count=c, k=[10]) == [-1, 5]  # exact condition
    assert iv("COALESCE(COUNT(*), SUM(a))", a=a, count=c) == [-1, 5]  # COUNT(*) is never NULL
    assert iv("COALESCE(k, SUM(a))", a=a, k=[None]) == [8, 12]
    assert iv("PI() + 0 * k", k=[1]) == [math.pi, math.pi]


def test_intervals_not_available() -> None:
    x, lo, hi = num("SUM(a) % 3 + EXP(SUM(a) * SUM(a)) + POWER(SUM(a), SUM(a))", 1, a=noisy([2]))
    assert np.isnan(lo).all() and np.isnan(hi).all() and not np.isnan(x).any()
    x, lo, hi = num(
        "SUM(a) + 1", 2, a=Values(np.array([1.0, np.nan]), np.array([np.nan, 0.0]), np.array([2.0, 1.0]))
    )
    assert x[0] == 2 and np.isnan(lo).all() and np.isnan(hi).all()


def test_exact_results_are_points() -> None:
    assert ev("k * 2 + 1", 2, k=[1.0, None]).exact
    _, lo, hi = num("k * 2 + 1", 2, k=[1.0, None])
    assert lo[0] == hi[0] == 3 and np.isnan(lo[1])
    assert not ev("k + SUM(a)", 1, k=[1], a=noisy([1])).exact
    assert ev("s", 1, s=["M"]).exact


# ---- refusals
@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("income", "income is neither an aggregate nor a GROUP BY key"),
        ("SUM(a) + income", "income is neither an aggregate nor a GROUP BY key"),
        ("SUM(a) OVER ()", "SUM(a) OVER () is neither an aggregate nor a GROUP BY key"),
        ("MAX(a) / 2", "MAX(a) is neither an aggregate nor a GROUP BY key"),
        ("MEDIAN(a)", "MEDIAN(a) is neither an aggregate nor a GROUP BY key"),
        ("UPPER(s)", "UPPER(s) is not supported"),
        ("SUM(a) // 2", "SUM(a) // 2 is not supported"),
        ("SUM(a) + 'x'", "needs a number where 'x' is text"),
        ("TRUE * 2", "needs a number where TRUE is boolean"),
        ("'x' > 1", "mixes number and text"),
        ("1 AND TRUE", "needs a boolean where 1 is number"),
        ("CASE WHEN p THEN 1 ELSE 'x' END", "mixes number and text"),
        ("CASE WHEN 1 THEN 1 END", "needs a boolean"),
        ("ROUND(SUM(a), COUNT(*))", "whole-number literal"),
        ("ROUND(SUM(a), 1.5)", "whole-number literal"),
        ("LOG(COUNT(*), SUM(a))", "as its base"),
        ("LOG(1, SUM(a))", "as its base"),
        ("CAST(SUM(a) AS VARCHAR)", "DOUBLE, INTEGER or BIGINT"),
        ("CAST(s AS DATE)", "DOUBLE, INTEGER or BIGINT"),
        ("SUM(a) IN (1, COUNT(*))", "list of literals"),
        ("SUM(a) IN ()", "list of literals"),
        ("SUM(a) IS TRUE", "IS [NOT] NULL"),
        ("FLOOR(SUM(a), 1)", "one argument"),
        ("SUM(a) BETWEEN SYMMETRIC 1 AND 2", "SYMMETRIC"),
        ("(SELECT 1)", "is neither an aggregate nor a GROUP BY key"),
    ],
)
def test_refusals_name_the_node_and_the_allowed_forms(sql: str, why: str) -> None:
    with pytest.raises(UnsupportedQuery) as raised:
        formula(sql)
    assert raised.value.message.startswith("the select list: ") and why in raised.value.message
    assert ALLOWED in raised.value.message and raised.value.code == "unsupported_query"


def test_having_must_be_a_condition() -> None:
    with pytest.raises(UnsupportedQuery, match=r"^HAVING: SUM\(a\) \+ 1 is not a condition"):
        compile_predicate(parse("SUM(a) + 1"), leaf)
    with pytest.raises(UnsupportedQuery, match=r"^HAVING: income is neither an aggregate nor a GROUP BY key"):
        compile_predicate(parse("income > 1"), leaf)
    assert compile_predicate(parse("p"), leaf).kind == "boolean"


# ---- properties: evaluation is total; intervals are ordered and sound
ATOMS = ["SUM(a)", "COUNT(*)", "AVG(b)", "k", "0", "1", "2.5", "-3", "1e308", "NULL", "PI()"]
UNARY = ["ABS", "SIGN", "FLOOR", "CEIL", "TRUNC", "SQRT", "LN", "LOG10", "LOG2", "EXP", "ROUND", "-"]
EXPONENTS = ["0", "1", "2", "3", "-1", "-2", "0.5", "-0.5", "1.5"]


def _numbers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two, conditions = st.tuples(inner, inner), _comparisons(inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from("+-*/%"), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(UNARY), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, st.sampled_from(EXPONENTS)).map(lambda t: f"POWER({t[0]}, {t[1]})"),
        two.map(lambda t: f"POWER({t[0]}, {t[1]})"),
        st.tuples(inner, st.integers(-3, 3)).map(lambda t: f"ROUND({t[0]}, {t[1]})"),
        st.tuples(st.sampled_from(["LEAST", "GREATEST", "COALESCE", "NULLIF"]), two).map(
            lambda t: f"{t[0]}({t[1][0]}, {t[1][1]})"
        ),
        st.tuples(conditions, two).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1][0]} ELSE {t[1][1]} END"),
        st.tuples(conditions, inner).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} END"),
        st.tuples(conditions, two).map(lambda t: f"IF({t[0]}, {t[1][0]}, {t[1][1]})"),
        st.tuples(inner, st.sampled_from(["DOUBLE", "INTEGER", "BIGINT"])).map(
            lambda t: f"CAST({t[0]} AS {t[1]})"
        ),
        inner.map(lambda x: f"LOG({x})"),
    )


def _comparisons(numbers: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(numbers, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), numbers).map(" ".join),
        numbers.map(lambda x: f"{x} IS NULL"),
        numbers.map(lambda x: f"{x} IN (0, 1, NULL, -3)"),
        st.tuples(numbers, numbers, numbers).map(lambda t: f"{t[0]} BETWEEN {t[1]} AND {t[2]}"),
        st.sampled_from(["p", "s = 'M'", "s <> 'F'", "NULL", "TRUE", "p = q", "s = 1", "p > 0"]),
    )


NUMBERS = st.recursive(st.sampled_from(ATOMS), _numbers, max_leaves=6)
CONDITIONS = st.recursive(
    _comparisons(NUMBERS),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda c: f"NOT ({c})"),
    ),
    max_leaves=3,
)
WILD = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, 0.5, -1.0, 2.0]),
)


@st.composite
def wild_world(draw: st.DrawFn) -> tuple[int, list[Values]]:
    n = draw(st.integers(0, 4))
    floats = st.lists(WILD, min_size=n, max_size=n)

    def aggregate() -> Values:
        x, lo, hi = (np.array(draw(floats), dtype=np.float64) for _ in range(3))
        return Values(x, lo, hi) if draw(st.booleans()) else Values(x)

    texts = st.lists(st.sampled_from(["M", "F", None, 1, 2.5, True]), min_size=n, max_size=n)
    bools = st.lists(st.sampled_from([True, False, None, "x", 0]), min_size=n, max_size=n)
    k = np.array(draw(floats), dtype=np.float64)
    leaves = [aggregate(), aggregate(), Values(draw(texts))]  # AVG(b): a released mode, say (no interval)
    leaves += [Values(k, k, k, exact=True), Values(draw(texts), exact=True)]
    return n, [*leaves, Values(draw(bools), exact=True), Values(draw(bools), exact=True)]


def _ordered(r: Values) -> None:
    assert isinstance(r.values, np.ndarray) and r.lo is not None and r.hi is not None
    lo, hi, x = r.lo, r.hi, r.values
    assert ((lo <= hi) | (np.isnan(lo) & np.isnan(hi))).all()
    assert (np.isnan(lo[np.isnan(x)])).all() and (np.isnan(hi[np.isnan(x)])).all()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NUMBERS, CONDITIONS, wild_world())
def test_evaluation_is_total(number: str, condition: str, data: tuple[int, list[Values]]) -> None:
    n, leaves = data
    with np.errstate(all="raise"):  # the module must not depend on the caller's error state
        r = formula(number).evaluate(leaves, n)
    assert len(r.values) == n
    if isinstance(r.values, np.ndarray):  # a formula over a leaf that is not a number may give a list
        _ordered(r)
    verdict = compile_predicate(parse(condition), leaf).evaluate(leaves, n).values
    assert len(verdict) == n and all(v is None or type(v) is bool for v in verdict)


@st.composite
def truth_and_noise(draw: st.DrawFn) -> tuple[int, list[Values], list[Values]]:
    """Leaf intervals, true values inside them and noisy values (the released ones) inside them too."""
    n = draw(st.integers(1, 4))
    unit = st.floats(0, 1)
    noisy_leaves, true_leaves = [], []
    for _ in range(2):
        lo = np.array(draw(st.lists(st.floats(-50, 50), min_size=n, max_size=n)))
        width = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 3.0, 40.0]), min_size=n, max_size=n)))
        hi = lo + width
        t = lo + width * np.array(draw(st.lists(unit, min_size=n, max_size=n)))
        v = lo + width * np.array(draw(st.lists(unit, min_size=n, max_size=n)))
        noisy_leaves.append(Values(np.clip(v, lo, hi), lo, hi))
        true_leaves.append(Values(np.clip(t, lo, hi), exact=True))

    def column(*choices: Any) -> list[Any]:
        return draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n))

    k = np.array(column(-2.0, 0.0, 1.0, 3.5, np.nan))
    keys = [Values(k, k, k, exact=True), Values(column("M", "F"), exact=True)]
    keys += [Values(column(True, False, None), exact=True) for _ in "pq"]
    mode = Values(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    return n, [*noisy_leaves, mode, *keys], [*true_leaves, mode, *keys]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NUMBERS, truth_and_noise())
def test_intervals_are_sound(number: str, data: tuple[int, list[Values], list[Values]]) -> None:
    n, noisy_leaves, true_leaves = data
    f = formula(number)
    released, truth = f.evaluate(noisy_leaves, n), f.evaluate(true_leaves, n).values
    _ordered(released)
    assert released.lo is not None and released.hi is not None and isinstance(truth, np.ndarray)
    for lo, hi, t in zip(released.lo.tolist(), released.hi.tolist(), truth.tolist(), strict=True):
        if not (math.isnan(lo) or math.isnan(t)):  # available, and the truth is not NULL
            slack = 1e-9 * max(1.0, abs(t)) if math.isfinite(t) else 0.0
            assert lo - slack <= t <= hi + slack, (number, lo, t, hi)
