"""BigQuery's and ZetaSQL's documented differential-privacy examples, as privdb reads them (issue 29).

Every example is the documentation's query (facts carried over: tables, columns, options, bounds), with two
changes a privdb user would make: ``{{USERNAME}}.view_on_professors`` is the table ``view_on_professors``
(their view declares ``id`` as its privacy unit; privdb's metadata does), and ``;`` stays as written. The
tables (``EXAMPLE_META``, ``example_frame``) are shaped like theirs: professors (``id``, the privacy unit)
asking for items (pencil, pen, scissors, …) in quantities, 1–3 requests each, each professor one item, so
that bounding changes nothing and an answer at ε = 1000 is the plain SQL ``plain`` (``{t}`` the table).

Outcomes: ``"answers"`` with ``columns``, or the error ``code`` whose message holds ``reason``. An example
refused only for its ε (``1e20``: theirs "without noise", above privdb's 1000) has ``plain`` too: at
ε = 1000 it answers that.

Sources:
- ZETASQL_FUNCTIONS: https://github.com/google/zetasql/blob/master/docs/aggregate-dp-functions.md (the same
  text as https://cloud.google.com/bigquery/docs/reference/standard-sql/aggregate-dp-functions)
- ZETASQL_CLAUSE: https://github.com/google/zetasql/blob/master/docs/query-syntax.md#dp_clause (BigQuery:
  https://cloud.google.com/bigquery/docs/reference/standard-sql/query-syntax#dp_clause)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from oracle_queries import ORACLE_META, oracle_frame

ZETASQL_FUNCTIONS = "https://github.com/google/zetasql/blob/master/docs/aggregate-dp-functions.md"
ZETASQL_CLAUSE = "https://github.com/google/zetasql/blob/master/docs/query-syntax.md#dp_clause"

EXAMPLE_META: dict[str, Any] = {
    **ORACLE_META,
    "privacy_unit": "id",
    "columns": {("id" if k == "pid" else k): v for k, v in ORACLE_META["columns"].items()},
}
TABLES = ("professors", "view_on_professors")


def example_frame() -> pd.DataFrame:
    """Professors' requests: ``id`` the privacy unit, ≤ 3 rows and one item each, quantities 1…100."""
    return oracle_frame().rename(columns={"pid": "id"})


@dataclass(frozen=True)
class Example:
    source: str
    text: str
    outcome: str  # "answers" or an error code
    columns: tuple[str, ...] = ()
    reason: str = ""  # words the refusal's message holds (what to change)
    plain: str | None = None  # the plain SQL an answer at ε = 1000 equals ({t}: the table)


def _per_unit(value: str, outer: str, name: str, t: str = "{t}") -> str:
    """The plain SQL of a per-unit aggregate: each professor's ``value`` per item, then ``outer`` of them."""
    return (
        f"SELECT item, {outer}(v) AS {name} FROM (SELECT id, item, {value} AS v FROM {t} GROUP BY id, item) "
        "AS u GROUP BY item"
    )


HEADER = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon={e}, delta=.01{more})"
AVG_PLAIN = _per_unit("AVG(quantity)", "AVG", "average_quantity")
COUNT_PLAIN = "SELECT item, COUNT(*) AS times_requested FROM {t} GROUP BY item"
SUM_PLAIN = _per_unit("LEAST(SUM(quantity), 100)", "SUM", "quantity")
SUM_UNBOUNDED = _per_unit("SUM(quantity)", "SUM", "quantity")
MEDIAN_PLAIN = "SELECT item, MEDIAN(quantity) AS percentile_requested FROM {t} GROUP BY item"
VAR_PLAIN = "SELECT item, VAR_POP(quantity) AS pop_variance FROM {t} GROUP BY item"
NOISELESS = "is above 1000"
UNIT = ", max_groups_contributed=1, privacy_unit_column=id"
VIEW = ", max_groups_contributed=1"
PAIR = ", max_groups_contributed=2, privacy_unit_column=id"


def _q(e: str, more: str, select: str, table: str) -> str:
    return f"{HEADER.format(e=e, more=more)} item, {select} FROM {table} GROUP BY item;"


def _pair(
    select: str, columns: tuple[str, ...], plain: str, *, noiseless: str | None = None
) -> list[Example]:
    """An example as the docs give it for the table (``privacy_unit_column=id``) and for the view, with
    noise (ε = 10) and, where the docs show one, without (ε = 1e20, with ``noiseless`` as its select)."""
    out = []
    for more, table in ((UNIT, "professors"), (VIEW, "view_on_professors")):
        out.append(Example(ZETASQL_FUNCTIONS, _q("10", more, select, table), "answers", columns, plain=plain))
        if noiseless is not None:
            text = _q("1e20", more, noiseless, table)
            out.append(Example(ZETASQL_FUNCTIONS, text, "invalid_parameter", reason=NOISELESS, plain=plain))
    return out


def _clause(more: str, select: str, table: str, e: str = "1e20") -> str:
    head = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon={e}, delta=.01{more})"
    return f"{head} item, {select} FROM {table} GROUP BY item;"


AVG_B = "AVG(quantity, contribution_bounds_per_group => (0,100)) AS average_quantity"
EXAMPLES: list[Example] = [
    # AVG, COUNT(*), COUNT(item), PERCENTILE_CONT, SUM, VAR_POP (DIFFERENTIAL_PRIVACY)
    *_pair(
        "AVG(quantity, contribution_bounds_per_group => (0,100)) average_quantity",
        ("item", "average_quantity"), AVG_PLAIN, noiseless="AVG(quantity) average_quantity",
    ),
    *_pair(
        "COUNT(*, contribution_bounds_per_group=>(0, 100)) times_requested",
        ("item", "times_requested"), COUNT_PLAIN,
        noiseless="COUNT(*, contribution_bounds_per_group=>(0, 100)) times_requested",
    ),
    *_pair(
        "COUNT(item, contribution_bounds_per_group => (0,100)) times_requested",
        ("item", "times_requested"), COUNT_PLAIN,
        noiseless="COUNT(item, contribution_bounds_per_group => (0,100)) times_requested",
    ),
    *_pair(
        "PERCENTILE_CONT(quantity, 0.5, contribution_bounds_per_row => (0,100)) percentile_requested",
        ("item", "percentile_requested"), MEDIAN_PLAIN,
    ),
    *_pair(
        "SUM(quantity, contribution_bounds_per_group => (0,100)) quantity", ("item", "quantity"), SUM_PLAIN
    ),
    Example(ZETASQL_FUNCTIONS, _q("1e20", UNIT, "SUM(quantity) quantity", "professors"), "invalid_parameter",
            reason=NOISELESS, plain=SUM_UNBOUNDED),
    Example(ZETASQL_FUNCTIONS, _q("1e20", VIEW, "SUM(quantity) quantity", "view_on_professors"),
            "invalid_parameter", reason=NOISELESS, plain=SUM_UNBOUNDED),
    *_pair(
        "VAR_POP(quantity, contribution_bounds_per_row => (0,100)) pop_variance", ("item", "pop_variance"),
        VAR_PLAIN,
    ),
    # the older spelling (ANON_ functions, CLAMPED BETWEEN): read as the newer one (bigquery.anon)
    *[
        Example(
            ZETASQL_FUNCTIONS,
            "SELECT WITH ANONYMIZATION OPTIONS(epsilon=10, delta=.01, max_groups_contributed=1) item, "
            f"{select} {name} FROM view_on_professors GROUP BY item;",
            "answers",
            ("item", name),
            plain=plain,
        )
        for select, name, plain in (
            ("ANON_AVG(quantity CLAMPED BETWEEN 0 AND 100)", "average_quantity", AVG_PLAIN),
            ("ANON_COUNT(*)", "times_requested", COUNT_PLAIN),
            ("ANON_SUM(quantity CLAMPED BETWEEN 0 AND 100)", "quantity", SUM_PLAIN),
            (
                "ANON_PERCENTILE_CONT(quantity, 0.5 CLAMPED BETWEEN 0 AND 100)",
                "percentile_requested",
                MEDIAN_PLAIN,
            ),
            ("ANON_VAR_POP(quantity CLAMPED BETWEEN 0 AND 100)", "pop_variance", VAR_PLAIN),
        )
    ],
    # supplemental: implicit and explicit clamping (theirs without noise)
    *[
        Example(ZETASQL_FUNCTIONS, _clause(more, select, "view_on_professors"), "invalid_parameter",
                reason=NOISELESS, plain=plain)
        for more in (", privacy_unit_column=id", ", max_groups_contributed = 1")
        for select, plain in (
            ("AVG(quantity) AS average_quantity", AVG_PLAIN),
            ("AVG(quantity, contribution_bounds_per_group=>(0,100)) AS average_quantity", AVG_PLAIN),
            (
                "AVG(quantity, contribution_bounds_per_group=>(50,100)) AS average_quantity",
                _per_unit("LEAST(GREATEST(AVG(quantity), 50), 100)", "AVG", "average_quantity"),
            ),
        )
    ],
    # the clause's examples: add noise with max_groups_contributed=2 (above the table's 1)
    Example(ZETASQL_CLAUSE, _clause(", max_groups_contributed=2", AVG_B, "view_on_professors", "10"),
            "invalid_parameter", reason="max_groups_contributed=1 or less"),
    Example(ZETASQL_CLAUSE, _clause(PAIR, AVG_B, "professors", "10"),
            "invalid_parameter", reason="max_groups_contributed=1 or less"),
    # remove noise (ε 1e20: refused for ε first)
    Example(ZETASQL_CLAUSE, _clause(", max_groups_contributed=2", AVG_B, "view_on_professors"),
            "invalid_parameter", reason=NOISELESS),
    Example(ZETASQL_CLAUSE, _clause(PAIR, AVG_B, "professors"),
            "invalid_parameter", reason=NOISELESS),
    # limit the groups a privacy unit contributes to
    Example(ZETASQL_CLAUSE, _clause(", max_groups_contributed=1", AVG_B, "view_on_professors"),
            "invalid_parameter", reason=NOISELESS, plain=AVG_PLAIN),
    Example(ZETASQL_CLAUSE, _clause(", privacy_unit_column=id", AVG_B, "professors"),
            "invalid_parameter", reason=NOISELESS, plain=AVG_PLAIN),
    # public groups: a RIGHT OUTER JOIN with UNNEST of the public items, without a name for its column
    Example(
        ZETASQL_CLAUSE,
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 10, delta = .01, max_groups_contributed = 1, "
        "group_selection_strategy = PUBLIC_GROUPS) item, AVG(quantity) AS average_quantity "
        "FROM view_on_professors RIGHT OUTER JOIN "
        "(SELECT DISTINCT item FROM UNNEST(['pen', 'pencil', 'book'])) "
        "USING (item) GROUP BY item;",
        "unsupported_query",
        reason="UNNEST([…]) needs one name",
    ),
]  # fmt: skip
