"""A small corpus for the truth oracle (issue 26, tests/test_truth_oracle.py): DP-SELECT forms translated
from other projects' documented differential-privacy SQL examples, over one generated table where
contribution bounding and clamping change nothing.

The examples carried over (facts, not code):

- Google's BigQuery / ZetaSQL differential-privacy docs: a table of supplies bought by professors (a
  privacy-unit id, an item such as pencil / pen / scissors, a quantity), queried per item with COUNT(*),
  COUNT of a column, SUM, AVG, VAR_POP / STDDEV_POP and PERCENTILE_CONT(…, 0.5), a WHERE on the item, and
  per-unit totals averaged (their AVG first aggregates each privacy unit).
- Tumult Analytics' tutorials: library members (age, education level) and their checkouts: counts by
  education level, counts of an age band, age buckets of ten years, averages per group.

``supplies`` (``oracle_frame``): one row per purchase, 1–3 rows per professor ``pid`` (max_contributions 3),
each professor buying one item in one year with one education level and one department (so max_groups 1
keeps every row: their rows fall in one group of every grouping used here); quantity 1…100 and price
0.5…50 inside their declared bounds; about 4% of professors without a department (a NULL key), about 5%
of prices NULL (SQL's NULL, which privdb must skip as SQL does). Every key has a public domain (item,
year, edu, dept) or is derived from a bounded column, so no group is thresholded away.

``plain`` of a query is the SQL whose answer privdb estimates on such data: by default the DP-SELECT with
``DP-SELECT ε`` replaced by ``SELECT`` (``{t}`` the table); a query whose plain form differs names it.
``portable`` is False where the plain SQL uses a function SQLite lacks (MEDIAN, VAR_POP, STDDEV_POP):
there the truth is DuckDB's plain answer on the same rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

ITEMS = ["pencil", "pen", "scissors", "ruler", "stapler"]
EDUCATION = ["secondary", "bachelor", "master", "doctorate"]
YEARS = [2021, 2022, 2023]
DEPARTMENTS = ["math", "physics", "history"]

ORACLE_META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 3,
    "max_groups": 1,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "item": {"type": "category", "values": ITEMS},
        "edu": {"type": "category", "values": EDUCATION},
        "year": {"type": "int", "values": YEARS},
        "dept": {"type": "category", "values": DEPARTMENTS},
        "age": {"type": "int", "lower": 18, "upper": 90},
        "quantity": {"type": "int", "lower": 0, "upper": 100},
        "price": {"type": "float", "lower": 0, "upper": 50},
    },
}


def oracle_frame(units: int = 3000, seed: int = 26) -> pd.DataFrame:
    """The ``supplies`` rows: every value inside its bounds, ≤ 3 rows per unit, one group per unit."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, units)
    pid = np.repeat(np.arange(1, units + 1), sizes)
    n = len(pid)
    price = np.round(rng.uniform(0.5, 50, n), 2)
    return pd.DataFrame(
        {
            "pid": pid,
            "item": np.array(ITEMS)[rng.choice(len(ITEMS), units, p=[0.35, 0.3, 0.15, 0.12, 0.08])][pid - 1],
            "edu": np.array(EDUCATION)[rng.integers(0, len(EDUCATION), units)][pid - 1],
            "year": np.array(YEARS)[rng.integers(0, len(YEARS), units)][pid - 1],
            "dept": np.where(
                rng.random(units) < 0.04, None, np.array(DEPARTMENTS)[rng.integers(0, 3, units)]
            )[pid - 1],
            "age": rng.integers(18, 91, units)[pid - 1],
            "quantity": rng.integers(1, 101, n),
            "price": np.where(rng.random(n) < 0.05, np.nan, price),
        }
    )


@dataclass(frozen=True)
class OracleQuery:
    sql: str  # DP-SELECT with ε 1 over table {t}
    plain: str | None = None  # the plain SQL where it is not the DP-SELECT with `DP-SELECT 1` → `SELECT`
    portable: bool = True  # False: the plain SQL runs on DuckDB only (the truth is DuckDB's)
    bug: str | None = None  # a known silent wrong answer: the case is expected to fail (one-line reason)

    def at(self, epsilon: float, table: str) -> str:
        """The DP-SELECT at ``epsilon`` over ``table``."""
        return re.sub(r"DP-SELECT 1 ", f"DP-SELECT {epsilon:g} ", self.sql, count=1).format(t=table)

    def truth(self, table: str) -> str:
        """The plain SQL over ``table``."""
        return (self.plain or re.sub(r"DP-SELECT 1 ", "SELECT ", self.sql, count=1)).format(t=table)


def q(sql: str, plain: str | None = None, *, portable: bool = True, bug: str | None = None) -> OracleQuery:
    return OracleQuery(" ".join(sql.split()), " ".join(plain.split()) if plain else None, portable, bug)


ORACLE: list[OracleQuery] = [
    # BigQuery: per item, the number of purchases, of priced purchases, and of professors
    q("DP-SELECT 1 item, COUNT(*) AS n FROM {t} GROUP BY item"),
    q("DP-SELECT 1 item, COUNT(price) AS priced FROM {t} GROUP BY item"),
    q("DP-SELECT 1 item, COUNT(DISTINCT pid) AS professors FROM {t} GROUP BY item"),
    # BigQuery: SUM and AVG of the quantity per item; AVG with a WHERE on the item
    q("DP-SELECT 1 item, SUM(quantity) AS total FROM {t} GROUP BY item"),
    q("DP-SELECT 1 item, AVG(quantity) AS average_quantity FROM {t} GROUP BY item"),
    q("DP-SELECT 1 AVG(quantity) AS a, SUM(quantity) AS s FROM {t} WHERE item <> 'pen'"),
    # BigQuery: population variance and standard deviation; a sum of a NULL-holding column
    q("DP-SELECT 1 item, VAR_POP(quantity) AS v FROM {t} GROUP BY item", portable=False),
    q("DP-SELECT 1 STDDEV_POP(price) AS s, SUM(price) AS total, AVG(price) AS mean FROM {t}", portable=False),
    # BigQuery: PERCENTILE_CONT(quantity, 0.5) per item (privdb's MEDIAN; SQLite has no median)
    q("DP-SELECT 1 item, MEDIAN(quantity) AS m FROM {t} GROUP BY item", portable=False),
    # BigQuery: a professor's total, then the average of the totals (their AVG aggregates each unit first)
    q(
        "DP-SELECT 1 AVG(total) AS per_professor FROM "
        "(SELECT pid, SUM(quantity) AS total FROM {t} GROUP BY pid) AS u"
    ),
    # Tumult: members by education level; an age band; ten-year age buckets
    q("DP-SELECT 1 edu, COUNT(*) AS n FROM {t} GROUP BY edu"),
    q("DP-SELECT 1 COUNT(*) AS young FROM {t} WHERE age BETWEEN 18 AND 25"),
    q(
        "DP-SELECT 1 edu, AVG(age) AS mean_age, COUNT(*) AS n FROM {t} WHERE year >= 2022 GROUP BY edu",
    ),
    # two public keys; an expression summed; a sum per year of a product
    q("DP-SELECT 1 year, item, COUNT(*) AS n FROM {t} GROUP BY year, item"),
    q("DP-SELECT 1 year, SUM(quantity * price) AS spent FROM {t} GROUP BY year"),
    # a key with NULLs: plain SQL's GROUP BY keeps a NULL group; privdb releases the declared domain only and
    # says so in the answer (`outside_domain`, docs/answers.md), so the truth leaves NULL out
    q(
        "DP-SELECT 1 dept, COUNT(*) AS n, AVG(quantity) AS q FROM {t} GROUP BY dept",
        plain="SELECT dept, COUNT(*) AS n, AVG(quantity) AS q FROM {t} WHERE dept IS NOT NULL GROUP BY dept",
    ),
    q("DP-SELECT 1 SUM(CASE WHEN quantity > 50 THEN 1 ELSE 0 END) AS bulk, COUNT(*) AS n FROM {t}"),
]
