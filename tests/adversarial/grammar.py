"""The closed expression language as hypothesis strategies, and a table of every edge value.

Shared by the fuzzers of tests/adversarial: test_grammar_fuzz (WHERE and keys) and test_aggregate_fuzz
(aggregate arguments, HAVING, ORDER BY, subqueries, joins, accuracy first, Gaussian noise).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st

__all__ = ["EDGE_META", "GRAMMAR", "HUGE", "Strategy", "edge_frame"]

Strategy = st.SearchStrategy[str]

EDGE_META: dict[str, Any] = {
    "columns": {
        "x": {"type": "float", "lower": -1e6, "upper": 1e6},
        "n": {"type": "int", "lower": -100, "upper": 100},
        "s": {"type": "text", "max_length": 64},
        "c": {"type": "category", "values": ["a", "b", ""]},
        "d": {"type": "date"},
        "f": {"type": "bool"},
    }
}
HUGE = "x" * 100_000


def edge_frame() -> pd.DataFrame:
    """Every edge value of every allowed type, each column cycling through its own."""
    xs = [None, math.nan, math.inf, -math.inf, -0.0, 0.0, 1e308, -1e308, 5e-324, 1.5, -2.5, 9.2e18]
    ns = [None, 0, -1, 1, 2**62, -(2**62), 2**63 - 1, -(2**63), 37, 100]
    ss = [
        None,
        "",
        HUGE,
        "ü漢字🙂",
        "a%b_c",
        "'quote",
        "\\",
        " padded ",
        "1e999",
        "2020-01-01",
        "NaN",
        "abc",
    ]
    cs = [None, "a", "b", "", "not in domain"]
    ds = [
        None,
        pd.Timestamp("1970-01-01"),
        pd.Timestamp("2262-04-11"),
        pd.Timestamp("1677-09-22"),
        pd.Timestamp("2020-02-29 23:59:59"),
    ]
    fs = [None, True, False]
    rows = 60
    return pd.DataFrame(
        {
            # Arrow keeps NaN and NULL apart (pandas' Float64 would merge them)
            "x": pd.Series(
                pa.array([xs[i % len(xs)] for i in range(rows)], type=pa.float64()),
                dtype=pd.ArrowDtype(pa.float64()),
            ),
            "n": pd.array([ns[i % len(ns)] for i in range(rows)], dtype="Int64"),
            "s": [ss[i % len(ss)] for i in range(rows)],
            "c": [cs[i % len(cs)] for i in range(rows)],
            "d": pd.array([ds[i % len(ds)] for i in range(rows)], dtype="datetime64[ns]"),
            "f": pd.array([fs[i % len(fs)] for i in range(rows)], dtype="boolean"),
        }
    )


def _grammar() -> dict[str, Strategy]:
    num_leaf = st.sampled_from(["x", "n", "0", "1", "-1", "2.5", "1e308", "-1e308", "1e-300", "NULL"])
    text_leaf = st.sampled_from(["s", "c", "''", "'a'", "'ü'", "'%'", "NULL"])
    date_leaf = st.sampled_from(["d", "DATE '2000-01-01'", "TIMESTAMP '1900-01-01 12:00:00'"])
    bool_leaf = st.sampled_from(["f", "TRUE", "FALSE"])

    def extend(leaf: Strategy, make: Any) -> Strategy:
        return st.recursive(leaf, make, max_leaves=6)

    g: dict[str, Strategy] = {}

    def num(inner: Strategy) -> Strategy:
        t, b, d = text(text_leaf), boolean(bool_leaf), date_leaf
        two = st.tuples(inner, inner)
        return st.one_of(
            two.flatmap(
                lambda p: st.sampled_from([f"({p[0]} {o} {p[1]})" for o in "+-*/%"] + [f"({p[0]} // {p[1]})"])
            ),
            inner.flatmap(
                lambda a: st.sampled_from(
                    [
                        f"{fn}({a})"
                        for fn in (
                            "ABS",
                            "SIGN",
                            "FLOOR",
                            "CEIL",
                            "TRUNC",
                            "SQRT",
                            "LN",
                            "LOG10",
                            "LOG2",
                            "EXP",
                        )
                    ]
                    + [
                        f"ROUND({a}, 2)",
                        f"ROUND({a})",
                        f"CAST({a} AS INT)",
                        f"CAST({a} AS BIGINT)",
                        f"-({a})",
                    ]
                )
            ),
            two.map(lambda p: f"POWER({p[0]}, {p[1]})"),
            two.map(lambda p: f"GREATEST({p[0]}, {p[1]})"),
            two.map(lambda p: f"COALESCE({p[0]}, {p[1]})"),
            two.map(lambda p: f"NULLIF({p[0]}, {p[1]})"),
            st.tuples(b, inner, inner).map(lambda p: f"CASE WHEN {p[0]} THEN {p[1]} ELSE {p[2]} END"),
            t.flatmap(
                lambda a: st.sampled_from(
                    [f"LENGTH({a})", f"STRPOS({a}, 'a')", f"CAST({a} AS DOUBLE)", f"TRY_CAST({a} AS INT)"]
                )
            ),
            d.flatmap(
                lambda a: st.sampled_from(
                    [
                        f"EXTRACT(year FROM {a})",
                        f"DATE_PART('dow', {a})",
                        f"MONTH({a})",
                        f"EXTRACT(epoch FROM {a})",
                    ]
                )
            ),
        )

    def text(inner: Strategy) -> Strategy:
        two = st.tuples(inner, inner)
        return st.one_of(
            inner.flatmap(
                lambda a: st.sampled_from(
                    [
                        f"LOWER({a})",
                        f"UPPER({a})",
                        f"TRIM({a})",
                        f"SUBSTRING({a}, -3, 2)",
                        f"LEFT({a}, -2)",
                        f"RIGHT({a}, 3)",
                        f"REPLACE({a}, 'a', 'aaaaaaaaaa')",
                        f"LPAD({a}, 4096, 'ab')",
                        f"MD5({a})",
                        f"RPAD({a}, 5, 'z')",
                    ]
                )
            ),
            two.map(lambda p: f"CONCAT({p[0]}, {p[1]})"),
            two.map(lambda p: f"({p[0]} || {p[1]})"),
            num_leaf.map(lambda a: f"CAST({a} AS VARCHAR)"),
            date_leaf.map(lambda a: f"CAST({a} AS VARCHAR)"),
        )

    def boolean(inner: Strategy) -> Strategy:
        n, t = st.deferred(lambda: g["num"]), st.deferred(lambda: g["text"])
        return st.one_of(
            st.tuples(n, st.sampled_from(["=", "<>", "<", ">=", "IS DISTINCT FROM"]), n).map(" ".join),
            st.tuples(t, st.sampled_from(["=", "<", ">"]), t).map(" ".join),
            st.tuples(date_leaf, st.sampled_from(["=", "<", ">="]), date_leaf).map(" ".join),
            st.tuples(inner, inner).flatmap(
                lambda p: st.sampled_from([f"({p[0]} AND {p[1]})", f"({p[0]} OR {p[1]})"])
            ),
            inner.map(lambda a: f"NOT ({a})"),
            n.map(lambda a: f"({a}) IS NULL"),
            n.map(lambda a: f"({a}) IN (1, 2.5, NULL)"),
            n.map(lambda a: f"({a}) BETWEEN -1 AND 1e300"),
            n.map(lambda a: f"ISNAN({a})"),
            t.flatmap(
                lambda a: st.sampled_from(
                    [
                        f"{a} LIKE '%a_%'",
                        f"{a} ILIKE 'Ü%'",
                        f"STARTS_WITH({a}, 'a')",
                        f"CONTAINS({a}, '')",
                        f"regexp_matches({a}, '(a|b)+c?')",
                        f"{a} IN ('a', '')",
                    ]
                )
            ),
            t.map(lambda a: f"STRPTIME({a}, '%Y-%m-%d') IS NULL"),
            t.map(lambda a: f"CAST({a} AS DATE) IS NULL"),
            date_leaf.map(lambda a: f"DATE_TRUNC('month', {a}) < DATE '2000-01-01'"),
        )

    g["num"] = extend(num_leaf, num)
    g["text"] = extend(text_leaf, text)
    g["bool"] = extend(bool_leaf, boolean)
    return g


GRAMMAR = _grammar()
