"""Bounds of aggregate arguments by interval arithmetic (privdb.sql.front.expr.bounds).

Each rule is checked on its own, each refusal by its message, and a property test evaluates random
arguments in DuckDB over tables whose values break the declared bounds (NULL, NaN, ±inf, out of range):
every value of the rewritten argument must lie inside the computed bounds, and be whole when promised.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Bounded, Expr, Type, bound
from privdb.sql.front.expr.render import column_expr, render_num
from privdb.sql.front.expr.types import DEFAULT_MAX_LENGTH, MAX_RESULT_LENGTH

COLUMNS = {
    "a": ColumnMeta("a", "int", -10, 10, storage="int"),
    "n": ColumnMeta("n", "int", 0, 100, storage="int"),
    "x": ColumnMeta("x", "float", -2.5, 7.5, storage="float"),
    "y": ColumnMeta("y", "float", 0.5, 3, storage="float"),
    "f": ColumnMeta("f", "int", 0, 10, storage="float"),  # declared int, stored as DOUBLE: not whole
    "h": ColumnMeta("h", "int", 0.5, 10.5, storage="int"),  # whole values: clamped to [1, 10]
    "c": ColumnMeta("c", "category", values=(1, 2, 5), storage="text"),  # numeric category read from text
    "big": ColumnMeta("big", "float", -1e300, 1e300, storage="float"),
    "u": ColumnMeta("u", "float", storage="float"),  # no bounds
    "flag": ColumnMeta("flag", "bool", storage="bool"),
    "s": ColumnMeta("s", "text", max_length=20, storage="text"),
    "cat": ColumnMeta("cat", "category", values=("p", "q"), storage="text"),
    "d": ColumnMeta("d", "date", storage="date"),
}
META = TableMeta("t", COLUMNS)
ARROW_TYPES = {
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us"),
}
SQL_TYPES = {
    "a": "BIGINT", "n": "BIGINT", "x": "DOUBLE", "y": "DOUBLE", "f": "DOUBLE", "h": "BIGINT", "c": "VARCHAR",
    "big": "DOUBLE", "u": "DOUBLE", "flag": "BOOLEAN", "s": "VARCHAR", "cat": "VARCHAR", "d": "TIMESTAMP",
}  # fmt: skip
NAMES = list(SQL_TYPES)
INF, NAN = math.inf, math.nan
# rows every table holds: NULL, NaN, ±inf, just and far outside the bounds
EXTREME_ROWS: list[dict[str, Any]] = [
    {},
    {"a": -11, "n": 101, "x": NAN, "y": INF, "f": 10.5, "h": 11, "c": "nan", "big": INF, "u": NAN},
    {"a": 2**62, "n": -(2**62), "x": -INF, "y": -INF, "f": 2.5, "h": 0, "c": "-inf", "big": -INF, "u": -1.0},
    {"a": -(2**62), "n": 2**62, "x": INF, "y": NAN, "f": -INF, "h": -5, "c": "abc", "big": NAN, "u": 1e308},
    {"a": 0, "n": 0, "x": -0.0, "y": 0.0, "f": NAN, "h": 1, "c": "2.5", "big": -1e308, "u": 0.0},
    {"a": 10, "n": 100, "x": 7.5, "y": 3.0, "f": 10.0, "h": 10, "c": "7", "big": 1e300, "flag": True},
    {"a": -10, "n": 50, "x": -2.5, "y": 0.5, "f": 0.0, "h": 3, "c": "1", "big": -1e300, "flag": False},
]


def parsed(sql: str) -> Any:
    return sqlglot.parse_one(sql, read="duckdb")


def checked(sql: str) -> Expr:
    return expr.check(parsed(sql), META, "test")


def bounded(sql: str) -> Bounded:
    return bound(checked(sql), f"SUM({sql})")


def refusal(sql: str) -> str:
    with pytest.raises(UnsupportedQuery) as info:
        bounded(sql)
    return info.value.message


SPECIAL = [NAN, INF, -INF, -0.0, 0.0, 1e300, -1e300, 1e-320, -1e-320, 2.0**53 + 2]
TEXTS = ["", "a", "ab", "aAbB", "é漢😀", "x" * 25, "a" * 40, "ba" * 9, "1", "5"]


def _dense(rows: int = 4000) -> pa.Table:
    """A seeded table that breaks every declared bound: NULL, NaN, ±inf, far and just outside the bounds,
    ties for rounding (quarters), and dividends large enough for fmod's rounding error to show."""
    rng = random.Random(20240611)

    def doubles(lo: float, hi: float, extra: Callable[[], float] | None = None) -> list[float | None]:
        out: list[float | None] = []
        for _ in range(rows):
            k = rng.random()
            if k < 0.06:
                out.append(None)
            elif k < 0.14:
                out.append(rng.choice(SPECIAL))
            elif k < 0.2:
                out.append(rng.uniform(-1e6, 1e6))
            elif k < 0.28:
                out.append(rng.choice([lo, hi]) + rng.uniform(-1.5, 1.5))
            elif k < 0.36 and extra is not None:
                out.append(extra())
            elif k < 0.5:
                out.append(round(rng.uniform(lo, hi) * 4) / 4)
            else:
                out.append(rng.uniform(lo, hi))
        return out

    def integers(lo: int, hi: int) -> list[int | None]:
        out: list[int | None] = []
        for _ in range(rows):
            k = rng.random()
            if k < 0.06:
                out.append(None)
            elif k < 0.14:
                out.append(rng.choice([2**62, -(2**62), 2**53 + 1, 10**6, -(10**6)]))
            elif k < 0.3:
                out.append(rng.randint(lo - 3, hi + 3))
            else:
                out.append(rng.randint(lo, hi))
        return out

    def pick(options: list[Any]) -> list[Any]:
        return [rng.choice(options) for _ in range(rows)]

    def large() -> float:
        return rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(12, 20)

    start = dt.datetime(1, 1, 1)
    dates = [start + dt.timedelta(seconds=rng.uniform(0, 3.15e11)) for _ in range(rows)]
    columns: dict[str, list[Any]] = {
        "a": integers(-10, 10), "n": integers(0, 100), "x": doubles(-2.5, 7.5), "y": doubles(0.5, 3),
        "f": doubles(0, 10), "h": integers(0, 11),
        "c": pick(["1", "2", "5", "7", "-3", "nan", "inf", "2.5", "x", None]),
        "big": doubles(-1e20, 1e20, large), "u": doubles(-1e9, 1e9, large), "flag": pick([None, True, False]),
        "s": pick([*TEXTS, None]), "cat": pick(["p", "q", "r", None]), "d": pick([*dates[:50], None]),
    }  # fmt: skip
    return pa.table({n: pa.array(columns[n], type=ARROW_TYPES[t]) for n, t in SQL_TYPES.items()})


_CONNECTION: list[duckdb.DuckDBPyConnection] = []


def connection(rows: list[dict[str, Any]]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose table ``t`` holds ``rows`` (missing values NULL) and whose table
    ``dense`` holds the seeded table of _dense."""
    if not _CONNECTION:
        con = duckdb.connect(":memory:")
        dense = _dense()
        con.register("dense_source", dense)
        con.execute("CREATE TABLE dense AS SELECT * FROM dense_source")
        con.unregister("dense_source")
        _CONNECTION.append(con)
    con = _CONNECTION[0]
    con.execute(f"CREATE OR REPLACE TABLE t ({', '.join(f'{n} {t}' for n, t in SQL_TYPES.items())})")
    marks = ", ".join("?" for _ in NAMES)
    con.executemany(f"INSERT INTO t VALUES ({marks})", [[row.get(n) for n in NAMES] for row in rows])
    return con


def values(b: Bounded, rows: list[dict[str, Any]]) -> list[Any]:
    """The argument's values over ``rows``, and its extremes over the dense table (evaluating and
    aggregating never raise)."""
    con = connection(rows)
    sql = expr.render(b.expr)
    out = [r[0] for r in con.execute(f"SELECT {sql} FROM t").fetchall()]
    con.execute(f"SELECT SUM({render_num(b.expr)}), AVG({render_num(b.expr)}) FROM t").fetchall()
    low, high, nans, fractions = con.execute(
        "SELECT min(v), max(v), count(*) FILTER (WHERE isnan(v)), count(*) FILTER (WHERE v <> floor(v)) "
        f"FROM (SELECT {render_num(b.expr)} AS v FROM dense)"
    ).fetchone() or (None, None, 0, 0)
    assert nans == 0, f"{b.expr.source}: NaN over the dense table"
    assert not (b.integer and fractions), f"{b.expr.source}: {fractions} values are not whole"
    return [*out, low, high]


def assert_inside(b: Bounded, results: list[Any], sql: str) -> None:
    assert math.isfinite(b.lower) and math.isfinite(b.upper) and b.lower <= b.upper, sql
    tiny = 1e-9 * max(1.0, abs(b.lower), abs(b.upper))
    for v in results:
        if v is None:
            continue
        number = float(v)
        assert not math.isnan(number), f"{sql}: NaN"
        assert b.lower - tiny <= number <= b.upper + tiny, f"{sql}: {number} outside [{b.lower}, {b.upper}]"
        if b.integer:
            assert number.is_integer(), f"{sql}: {number} is not whole"


# ---- each rule


@pytest.mark.parametrize(
    ("sql", "lower", "upper", "integer"),
    [
        ("3", 3, 3, True),
        ("2.5", 2.5, 2.5, False),
        ("a", -10, 10, True),
        ("x", -2.5, 7.5, False),
        ("f", 0, 10, False),
        ("h", 1, 10, True),
        ("c", 1, 5, False),
        ("flag", 0, 1, True),
        ("a > 5", 0, 1, True),
        ("ISNAN(x)", 0, 1, True),
        ("-a", -10, 10, True),
        ("-x", -7.5, 2.5, False),
        ("a + x", -12.5, 17.5, False),
        ("n - a", -10, 110, True),
        ("a * x", -75, 75, False),
        ("a * n", -1000, 1000, True),
        ("n / y", 0, 200, False),
        ("n // y", 0, 200, True),
        ("n // 7", 0, 14, True),
        ("n % 7", 0, 6, True),
        ("a % 7", -6, 6, True),
        ("a % -3", -2, 2, True),
        ("POWER(a, 2)", 0, 100, True),
        ("POWER(a, 3)", -1000, 1000, True),
        ("POWER(a, 0)", 1, 1, True),
        ("POWER(y, -1)", 1 / 3, 2, False),
        ("POWER(y, 0.5)", math.sqrt(0.5), math.sqrt(3), False),
        ("ABS(a)", 0, 10, True),
        ("ABS(x - 10)", 2.5, 12.5, False),
        ("ABS(y)", 0.5, 3, False),
        ("SIGN(x)", -1, 1, True),
        ("SIGN(y)", 1, 1, True),
        ("FLOOR(x)", -3, 7, True),
        ("CEIL(x)", -2, 8, True),
        ("TRUNC(x)", -2, 7, True),
        ("ROUND(x)", -3, 8, True),
        ("ROUND(x, 0)", -3, 8, True),
        ("ROUND(x, 1)", -2.5, 7.5, False),
        ("ROUND(n, -1)", 0, 100, True),
        ("ROUND(y * 3, -1)", 0, 10, True),
        ("SQRT(n)", 0, 10, False),
        ("LN(y)", math.log(0.5), math.log(3), False),
        ("LOG10(n + 1)", 0, math.log10(101), False),
        ("LOG(n + 1)", 0, math.log10(101), False),
        ("LOG2(y)", -1, math.log2(3), False),
        ("EXP(a)", math.exp(-10), math.exp(10), False),
        ("LEAST(n, 50)", 0, 50, True),
        ("GREATEST(a, 0)", 0, 10, True),
        ("LEAST(a, n)", -10, 100, True),  # LEAST skips NULL: either argument can be the result
        ("GREATEST(a, n)", -10, 100, True),
        ("(x + 0.3) // y", -5, 15, True),
        ("STRPOS('', '')", 0, 1, True),
        ("GREATEST(x, NULL)", -2.5, 7.5, False),
        ("CASE WHEN x > 0 THEN n ELSE a END", -10, 100, True),
        ("CASE WHEN flag THEN 1 END", 1, 1, True),
        ("CASE WHEN u > 0 THEN 1 ELSE 0 END", 0, 1, True),  # u is only compared: no bound needed
        ("CASE n WHEN 3 THEN x END", -2.5, 7.5, False),
        ("IF(u IS NULL, 2, 3.5)", 2, 3.5, False),
        ("COALESCE(a, 100)", -10, 100, True),
        ("COALESCE(NULL, a)", -10, 10, True),
        ("COALESCE(7, a)", 7, 7, True),  # never NULL: later arguments are never the result
        ("NULLIF(n, u)", 0, 100, True),  # the second argument is only compared
        ("CAST(x AS INT)", -3, 8, True),
        ("CAST(x AS DOUBLE)", -2.5, 7.5, False),
        ("CAST(n AS DOUBLE)", 0, 100, True),
        ("CAST(flag AS INT)", 0, 1, True),
        ("CAST(a > 0 AS DOUBLE) * 3", 0, 3, True),
        ("LENGTH(s)", 0, 20, True),
        ("LENGTH(cat)", 0, DEFAULT_MAX_LENGTH, True),
        ("LENGTH(UPPER(s))", 0, 20, True),
        ("LENGTH(CONCAT(s, s))", 0, 40, True),
        ("LENGTH(s || 'abc')", 0, 23, True),
        ("LENGTH(SUBSTRING(s, 2, 5))", 0, 5, True),
        ("LENGTH(LPAD(s, 30, '*'))", 0, 30, True),
        ("LENGTH(MD5(s))", 0, 32, True),
        ("LENGTH(REPLACE(s, 'a', 'bb'))", 0, MAX_RESULT_LENGTH, True),
        ("LENGTH(CAST(x AS VARCHAR))", 0, MAX_RESULT_LENGTH, True),
        ("LENGTH(COALESCE(s, 'none'))", 0, 20, True),
        ("STRPOS(s, 'a')", 0, 20, True),
        ("EXTRACT(month FROM d)", 1, 12, True),
        ("DAY(d)", 1, 31, True),
        ("HOUR(d)", 0, 23, True),
        ("MINUTE(d)", 0, 59, True),
        ("SECOND(d)", 0, 60, True),
        ("QUARTER(d)", 1, 4, True),
        ("DAYOFWEEK(d)", 0, 6, True),
        ("DATE_PART('isodow', d)", 1, 7, True),
        ("DAYOFYEAR(d)", 1, 366, True),
        ("WEEK(d)", 1, 53, True),
        ("NULL", 0, 0, True),
        ("CAST(NULL AS DOUBLE)", 0, 0, True),
        ("a + NULL", 0, 0, True),
    ],
)
def test_rule(sql: str, lower: float, upper: float, integer: bool) -> None:
    b = bounded(sql)
    assert b.lower == pytest.approx(lower, rel=1e-12, abs=1e-300)
    assert b.upper == pytest.approx(upper, rel=1e-12, abs=1e-300)
    assert b.lower <= lower or math.isclose(b.lower, lower, rel_tol=1e-12)  # never narrower than exact
    assert b.upper >= upper or math.isclose(b.upper, upper, rel_tol=1e-12)
    assert b.integer is integer
    assert_inside(b, values(b, EXTREME_ROWS), sql)


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("u * 2", "SUM(u * 2): u has no declared bounds; declare lower and upper in its metadata"),
        ("n / a", "SUM(n / a): a can be 0, so n / a has no bound; write e.g. n / GREATEST(a, 1)"),
        ("n % a", "a can be 0, so n % a has no bound; write e.g. n % GREATEST(a, 1)"),
        ("n // a", "a can be 0"),
        ("n / (y - 1)", "y - 1 can be 0"),
        ("LN(a)", "a can be ≤ 0, so LN(a) has no bound; write e.g. LN(GREATEST(a, 1))"),
        ("LOG10(n)", "n can be ≤ 0"),
        ("LOG2(x)", "x can be ≤ 0"),
        ("SQRT(a)", "a can be < 0, so SQRT(a) has no bound; write e.g. SQRT(GREATEST(a, 0))"),
        ("EXP(n * 10)", "n * 10 can exceed 700, so EXP(n * 10) has no finite bound"),
        ("POWER(a, n)", "POWER(a, n) has a computed exponent"),
        ("POWER(a, 0.5)", "a can be < 0 and the exponent is not whole"),
        ("POWER(a, -1)", "a can be 0 and the exponent is negative"),
        ("big * big", "big * big has no finite bound"),
        ("POWER(big, 2)", "has no finite bound"),
        ("YEAR(d)", "has no public bound (a year can be any number)"),
        ("EXTRACT(epoch FROM d)", "a epoch can be any number"),
        ("DATE_PART('decade', d)", "decade"),
        ("DATE_PART('century', d)", "century"),
        ("DATE_PART('isoyear', d)", "isoyear"),
        ("CAST(s AS DOUBLE)", "reads a number from text, which has no public bound"),
        ("CAST(s AS INT) + 1", "reads a number from text"),
        ("s", "s is text, where a number is needed; aggregate a number, e.g. LENGTH(x)"),
        ("d", "d is date, where a number is needed"),
        ("GREATEST(u, 0)", "u has no declared bounds"),
        ("CASE WHEN x > 0 THEN u ELSE 0 END", "u has no declared bounds"),
    ],
)
def test_refusal(sql: str, message: str) -> None:
    assert message in refusal(sql)


SOUNDNESS_PROBES = [
    "big % y", "big % 3", "big % -2.5", "big % (y - 5)", "-big % y", "big % (x + 3.5)", "x % y",
    "(a * 7) % y", "big // y", "big / y", "big * 0.5 + y", "(x + 0.3) // y", "GREATEST(a, n)", "LEAST(a, n)",
    "LEAST(x, 1)", "GREATEST(y, NULL, a)", "COALESCE(a, n, 5)", "COALESCE(NULL, x)",
    "CASE WHEN flag THEN a WHEN u > 0 THEN x END", "NULLIF(a, 0) * 2", "ROUND(x, 1)", "ROUND(big, -3)",
    "ROUND(big, 2)", "ROUND(y / 3, 15)", "ROUND(x, -20)", "ROUND(big, 20)", "CAST(x * 1.5 AS INT)",
    "CAST(big AS INT)", "CAST(y AS DOUBLE) * 2", "POWER(x, 2)", "POWER(x, 3)", "POWER(y, -3)",
    "POWER(y, 0.3)", "POWER(x + 2.5, 0.5)", "POWER(a, 4)", "EXP(x)", "EXP(x * 90)", "LN(y)", "LOG10(y)",
    "LOG2(y)", "SQRT(y)", "SIGN(x)", "ABS(x)", "TRUNC(x)", "CEIL(x * y)", "FLOOR(-x)", "LENGTH(s)",
    "STRPOS(s, 'a')", "STRPOS(s, '')", "MONTH(d)", "DAYOFYEAR(d)", "WEEK(d)", "SECOND(d)", "HOUR(d)", "h",
    "f", "c", "CAST(c AS INT)", "c * a", "x > 1", "flag", "CAST(flag AS INT) * x",
]  # fmt: skip


@pytest.mark.parametrize("sql", SOUNDNESS_PROBES)
def test_sound_on_the_dense_table(sql: str) -> None:
    b = bounded(sql)
    assert_inside(b, values(b, EXTREME_ROWS), sql)


# ---- the rewrite


def test_clamp_renders_total_and_pins_every_value() -> None:
    column = column_expr(COLUMNS["x"])
    clamp = Expr("clamp", Type.NUM, (column,), value=(-2.5, 7.5), double=True, portable=column.portable)
    sql = expr.render(clamp)
    v, x = 'CAST("x" AS DOUBLE)', '"x"'  # the bounds meet the stored value; the cast runs inside them only
    t = repr(7.5 * 2.0**-200)  # magnitudes below 2^-200 of the bound count as 0 (no underflow elsewhere)
    assert sql == (
        f"CASE WHEN {x} < -2.5 THEN -2.5 WHEN {x} > 7.5 THEN 7.5 WHEN {x} > -{t} AND {x} < {t} THEN 0.0 "
        f"ELSE {v} END"
    )
    got = values(
        Bounded(clamp, -2.5, 7.5, False),
        [{"x": v} for v in (None, NAN, INF, -INF, -100.0, 0.3, 100.0, -0.0, 5e-324, -1e-70, 1e-50)],
    )[:-2]
    assert got[0] is None
    assert got[1:] == [7.5, 7.5, -2.5, -2.5, 0.3, 7.5, 0.0, 0.0, 0.0, 1e-50]
    con = connection([{"x": 1.0}])
    assert con.execute(f"SELECT typeof({sql}) FROM t").fetchone() == ("DOUBLE",)


def test_clamp_of_an_integer_column_and_of_text_read_as_numbers() -> None:
    b = bounded("a")
    assert b.expr.op == "clamp" and b.expr.value == (-10.0, 10.0) and b.expr.portable
    assert expr.render(b.expr) == (
        'CASE WHEN "a" < -10.0 THEN -10.0 WHEN "a" > 10.0 THEN 10.0 ELSE CAST("a" AS DOUBLE) END'
    )
    c = bounded("c")  # TRY_CAST from text: DuckDB only, so the clamp is not portable either
    assert c.expr.op == "clamp" and not c.expr.portable and "TRY_CAST" in expr.render(c.expr)
    got = values(c, [{"c": v} for v in ("2", "abc", "nan", "-inf", "9", "")])[:-2]
    assert got == [2.0, None, 5.0, 1.0, 5.0, None]


def test_whole_bounds_of_an_integer_column() -> None:
    b = bounded("h")
    assert b.expr.value == (1.0, 10.0) and b.integer


def test_conditions_are_left_as_written() -> None:
    b = bounded("CASE WHEN income_like > 50000 THEN 1 ELSE 0 END".replace("income_like", "u"))
    assert not any(node.op == "clamp" for node in b.expr.walk())
    assert (b.lower, b.upper, b.integer) == (0.0, 1.0, True)
    b = bounded("CASE WHEN x > 0 THEN x END")
    clamps = [node for node in b.expr.walk() if node.op == "clamp"]
    assert len(clamps) == 1  # the value, not the condition
    assert b.expr.args[0] == checked("x > 0")


def test_boolean_argument_counts_as_0_or_1() -> None:
    b = bounded("x > 1")
    assert b.expr.op == "cast" and b.expr.type is Type.NUM and b.expr.value == "double"
    con = connection([{"x": 2.0}, {"x": 0.0}, {}])
    sql = expr.render(b.expr)
    assert con.execute(f"SELECT {sql}, typeof({sql}) FROM t").fetchall() == [
        (1.0, "DOUBLE"),
        (0.0, "DOUBLE"),
        (None, "DOUBLE"),
    ]


def test_bound_twice_is_the_same() -> None:
    for sql in ("a * x + 1", "CASE WHEN flag THEN n END", "x > 1", "LENGTH(s)", "h"):
        once = bounded(sql)
        twice = bound(once.expr, "again")
        assert (twice.lower, twice.upper, twice.integer) == (once.lower, once.upper, once.integer)
        assert expr.render(twice.expr) == expr.render(once.expr)


def test_portability_is_kept() -> None:
    # a column compared as written is portable; the clamp of a portable column is too
    b = bounded("CASE WHEN x > 1 THEN 1 ELSE 0 END")
    original = checked("CASE WHEN x > 1 THEN 1 ELSE 0 END")
    assert b.expr.portable == original.portable
    assert bounded("x").expr.portable


def test_round_matches_duckdb_at_the_ends() -> None:
    """The ends of ROUND(x, d) are DuckDB's own rounding of the ends (widened by at most one ulp)."""
    con = duckdb.connect(":memory:")
    for lo, hi in [(-2.345, 7.125), (0.005, 0.015), (-1234.5, 98765.4321), (-0.05, 0.05)]:
        for digits in (-3, -1, 0, 1, 2, 5):
            meta = TableMeta("t", {"v": ColumnMeta("v", "float", lo, hi, storage="float")})
            e = expr.check(parsed(f"ROUND(v, {digits})"), meta, "test")
            b = bound(e, "test")
            ends = con.execute(f"SELECT round({lo!r}::DOUBLE, {digits}), round({hi!r}::DOUBLE, {digits})")
            low, high = ends.fetchone() or (None, None)
            assert b.lower <= low <= b.upper and b.lower <= high <= b.upper
            assert low - b.lower <= math.ulp(low) and b.upper - high <= math.ulp(high)  # widened by ≤ 1 ulp


def test_only_unsupported_query_is_raised_on_text_functions() -> None:
    b = bounded("LENGTH(CASE WHEN flag THEN s ELSE LEFT(s, 3) END)")
    assert (b.lower, b.upper) == (0.0, 20.0)
    b = bounded("LENGTH(NULLIF(RTRIM(s), ''))")
    assert b.upper == 20.0


# ---- the property: no row can leave the bounds

NUM_COLUMNS = ["a", "n", "x", "y", "f", "h", "c", "big"]
LITERALS = ["0", "1", "2", "-3", "0.5", "7.25", "100", "-0.1", "NULL"]
UNARY = [
    "-({})", "ABS({})", "SIGN({})", "FLOOR({})", "CEIL({})", "TRUNC({})", "ROUND({})", "ROUND({}, 1)",
    "ROUND({}, -1)", "ROUND({}, 3)", "SQRT(ABS({}))", "SQRT({})", "LN(ABS({}) + 1)", "LN({})",
    "LOG10(ABS({}) + 0.5)", "LOG2(GREATEST({}, 1))", "EXP(LEAST({}, 5))", "EXP({})", "POWER({}, 2)",
    "POWER({}, 3)", "POWER(ABS({}), 0.5)", "POWER(GREATEST({}, 1), -2)", "CAST({} AS INT)",
    "CAST({} AS DOUBLE)", "NULLIF({}, 1)", "COALESCE({}, 0)", "({}) / y", "({}) % y", "({}) % 3",
    "({}) // (ABS(y) + 1)", "({}) % -2.5", "NULLIF({}, a)", "NULLIF({}, x * 2)",
]  # fmt: skip
# a boolean cast to a number in a value position (the rewrite marks its operand for a cast to DOUBLE)
BOOL_CAST = "CAST({} > 1 AS DOUBLE)"
BINARY = [
    "({}) + ({})", "({}) - ({})", "({}) * ({})", "({}) / ({})", "({}) % ({})", "({}) // ({})",
    "LEAST({}, {})", "GREATEST({}, {})", "COALESCE({}, {})", "({}) / GREATEST(ABS({}), 0.5)",
    "({}) % (ABS({}) + 1)", "CASE WHEN x > 0 THEN {} ELSE {} END", "CASE WHEN u IS NULL THEN {} END + {}",
    "CASE WHEN flag THEN {} WHEN ISNAN(x) THEN {} END",
]  # fmt: skip
TEXT_LEAVES = [
    "LENGTH(s)", "STRPOS(s, 'a')", "LENGTH(UPPER(s) || s)", "LENGTH(LPAD(s, 25, 'xy'))",
    "EXTRACT(month FROM d)", "HOUR(d)", "DAYOFYEAR(d)", "WEEK(d)", "DATE_PART('isodow', d)",
]  # fmt: skip


def _numbers(bool_casts: bool) -> st.SearchStrategy[str]:
    """Numeric argument texts; ``bool_casts`` only where they are values, never under a condition (see
    test_cast_of_a_comparison_under_a_condition)."""
    leaf = st.sampled_from(NUM_COLUMNS + LITERALS + TEXT_LEAVES)
    forms = [*UNARY, BOOL_CAST] if bool_casts else UNARY

    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        unary = st.tuples(st.sampled_from(forms), children).map(lambda t: t[0].format(t[1]))
        binary = st.tuples(st.sampled_from(BINARY), children, children).map(lambda t: t[0].format(t[1], t[2]))
        return unary | binary

    return st.recursive(leaf, extend, max_leaves=6)


ARGUMENTS = (
    _numbers(True)
    | _numbers(False).map(lambda s: f"({s}) > 1")
    | st.sampled_from(["flag", "x > 1", "ISNAN(x)"])
)
DOUBLES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([NAN, INF, -INF, -0.0, 0.0, 0.49, 2.5, -2.5, 3.5, 7.5, 1e300, -1e308, 1e-320]),
)
INTEGERS = st.one_of(
    st.none(), st.integers(-300, 300), st.sampled_from([2**62, -(2**62), 2**53 + 1, -11, 101])
)
ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "a": INTEGERS,
            "n": INTEGERS,
            "h": INTEGERS,
            "x": DOUBLES,
            "y": DOUBLES,
            "f": DOUBLES,
            "big": DOUBLES,
            "u": DOUBLES,
            "c": st.one_of(
                st.none(), st.sampled_from(["1", "2", "5", "7", "-3", "nan", "inf", "-inf", "x", ""])
            ),
            "flag": st.one_of(st.none(), st.booleans()),
            "s": st.one_of(
                st.none(), st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
            ),
            "d": st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1, 1, 1))),
        }
    ),
    max_size=8,
)


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sql=ARGUMENTS, rows=ROWS)
def test_no_row_leaves_the_bounds(sql: str, rows: list[dict[str, Any]]) -> None:
    try:
        b = bounded(sql)
    except UnsupportedQuery:
        assume(False)  # refused for free; too many refusals fails the health check (filter_too_much)
        return
    results = values(b, rows + EXTREME_ROWS)  # evaluating never raises
    assert_inside(b, results, sql)


def test_cast_of_a_comparison_under_a_condition() -> None:
    b = bounded("CASE WHEN CAST(a > 1 AS DOUBLE) > 0.5 THEN 1 ELSE 0 END")
    values(b, EXTREME_ROWS)
