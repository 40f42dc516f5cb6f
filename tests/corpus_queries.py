"""A corpus of DP-SELECT queries as analysts write them (issue 14), run by tests/test_sql_corpus.py.

Three parts: ``PUMS`` (the census sample in data/pums, loaded as ``PUMS``, row-level, and
``PUMS_pid``, one row per person ``pid``), ``PEOPLE`` (tests/joinfixtures.py: ``people`` one row per person,
``visits`` up to 5 rows per person in up to 2 groups, ``regions`` public) and ``REFUSED`` (the forms issue 14
item 10 keeps refused, each with the reason the message must give).

An answered query may carry ``truth``: plain SQL the owner runs on the raw tables, returning the same
columns in the same order as the answer (keys and values). It computes what privdb estimates: the answer
*after* contribution bounding, so over ``visits`` (max_contributions 5) a person's rows count with weight
``min(1, 5/R)``, ``R`` their rows (after WHERE), and a per-person count is cut to 5; incomes of ``people``
are clamped to the declared 200,000. A NULL in the truth leaves that cell unchecked. Queries whose bounded
answer is random (a person's groups sampled when they reach more than ``max_groups``) carry no truth.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Query:
    sql: str
    truth: str | None = None  # plain SQL computing the exact (bounded) answer on the raw data
    refuse: str | None = None  # a refusal whose message contains this
    bug: str | None = None  # a known bug: the case is expected to fail (one-line reason)

    @property
    def answered(self) -> bool:
        return self.refuse is None


def answer(sql: str, truth: str | None = None, *, bug: str | None = None) -> Query:
    return Query(" ".join(sql.split()), " ".join(truth.split()) if truth else None, bug=bug)


def refuse(sql: str, reason: str) -> Query:
    return Query(" ".join(sql.split()), refuse=reason)


# ---------------------------------------------------------------- PUMS (1,000 census records)

# the public domain of FLOOR(age / 10) * 10 for age in 0..100, for truths of groups that may be empty
_DECADES = "(SELECT range * 10 AS decade FROM range(0, 11)) AS d"

PUMS: list[Query] = [
    # counts, overall and by the categories
    answer("DP-SELECT 1 COUNT(*) FROM PUMS", "SELECT COUNT(*) FROM PUMS"),
    answer("DP-SELECT 1 COUNT(*) AS n FROM PUMS WHERE age > 40", "SELECT COUNT(*) FROM PUMS WHERE age > 40"),
    answer(
        "DP-SELECT 1 sex, COUNT(*) AS n FROM PUMS GROUP BY sex",
        "SELECT sex, COUNT(*) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 race, COUNT(*) AS n FROM PUMS GROUP BY race",
        "SELECT race, COUNT(*) FROM PUMS GROUP BY race",
    ),
    answer(
        "DP-SELECT 1 educ, COUNT(*) AS n FROM PUMS GROUP BY educ",
        "SELECT educ, COUNT(*) FROM PUMS GROUP BY educ",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) AS c, married AS m FROM PUMS GROUP BY married",
        "SELECT COUNT(*), married FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 sex, married, COUNT(*) AS n FROM PUMS GROUP BY sex, married",
        "SELECT sex, married, COUNT(*) FROM PUMS GROUP BY sex, married",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM PUMS WHERE sex = 1 AND married = 0",
        "SELECT COUNT(*) FROM PUMS WHERE sex = 1 AND married = 0",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM PUMS WHERE educ IN (13, 14, 15, 16)",
        "SELECT COUNT(*) FROM PUMS WHERE educ IN (13, 14, 15, 16)",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM PUMS WHERE age BETWEEN 25 AND 34",
        "SELECT COUNT(*) FROM PUMS WHERE age BETWEEN 25 AND 34",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM PUMS WHERE NOT (sex = 1 OR race = 1)",
        "SELECT COUNT(*) FROM PUMS WHERE NOT (sex = 1 OR race = 1)",
    ),
    answer(
        "DP-SELECT 1 COUNT(income) FROM PUMS WHERE income > 0",
        "SELECT COUNT(income) FROM PUMS WHERE income > 0",
    ),
    answer("DP-SELECT 1 COUNT(1) FROM PUMS WHERE married = 1", "SELECT COUNT(1) FROM PUMS WHERE married = 1"),
    answer(
        "DP-SELECT 1 COUNT(*) FROM PUMS p WHERE p.income >= 100000",
        "SELECT COUNT(*) FROM PUMS WHERE income >= 100000",
    ),
    # sums and averages
    answer("DP-SELECT 1 AVG(age) FROM PUMS", "SELECT AVG(age) FROM PUMS"),
    answer("DP-SELECT 1 AVG(income) FROM PUMS", "SELECT AVG(income) FROM PUMS"),
    answer("DP-SELECT 1 SUM(income) FROM PUMS", "SELECT SUM(income) FROM PUMS"),
    answer(
        "DP-SELECT 1 married, AVG(income) AS income FROM PUMS GROUP BY married",
        "SELECT married, AVG(income) FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 sex, AVG(age) AS age, AVG(income) AS income FROM PUMS GROUP BY sex",
        "SELECT sex, AVG(age), AVG(income) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 race, SUM(income) AS total FROM PUMS GROUP BY race",
        "SELECT race, SUM(income) FROM PUMS GROUP BY race",
    ),
    answer(
        "DP-SELECT 1 race, COUNT(*) AS n, SUM(income) AS s FROM PUMS WHERE age >= 18 GROUP BY race "
        "ORDER BY race",
        "SELECT race, COUNT(*), SUM(income) FROM PUMS WHERE age >= 18 GROUP BY race",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) AS n, AVG(age) AS a, SUM(income) AS s, VAR(age) AS v FROM PUMS WHERE sex = 0",
        "SELECT COUNT(*), AVG(age), SUM(income), VAR_SAMP(age) FROM PUMS WHERE sex = 0",
    ),
    answer(
        "DP-SELECT 1 educ, AVG(income) AS income FROM PUMS GROUP BY educ ORDER BY educ LIMIT 5",
        "SELECT educ, AVG(income) FROM PUMS GROUP BY educ",
    ),
    # HAVING (thresholds far from the true values: selection by noise barely biases the coverage)
    answer(
        "DP-SELECT 1 educ, COUNT(*) AS n FROM PUMS GROUP BY educ HAVING COUNT(*) > 120",
        "SELECT educ, COUNT(*) FROM PUMS GROUP BY educ",
    ),
    answer(
        "DP-SELECT 1 race, AVG(income) AS income FROM PUMS GROUP BY race HAVING COUNT(*) > 40",
        "SELECT race, AVG(income) FROM PUMS GROUP BY race",
    ),
    answer(
        "DP-SELECT 1 married, COUNT(*) AS n, AVG(age) AS age FROM PUMS GROUP BY married HAVING AVG(age) > 30",
        "SELECT married, COUNT(*), AVG(age) FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 married, COUNT(*) AS n FROM PUMS GROUP BY married HAVING COUNT(*) > 100 ORDER BY n DESC",
        "SELECT married, COUNT(*) FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 race, COUNT(*) AS n FROM PUMS GROUP BY race HAVING n > 50 ORDER BY n DESC",
        "SELECT race, COUNT(*) FROM PUMS GROUP BY race",
    ),
    answer(
        "DP-SELECT 1 sex, COUNT(*) AS n FROM PUMS GROUP BY sex HAVING sex = 1",
        "SELECT sex, COUNT(*) FROM PUMS WHERE sex = 1 GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 married, STDDEV(age) AS sd FROM PUMS GROUP BY married HAVING STDDEV(age) > 5",
        "SELECT married, STDDEV_SAMP(age) FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 sex, SUM(income) AS s FROM PUMS GROUP BY sex HAVING SUM(income) > 0 AND COUNT(*) > 10",
        "SELECT sex, SUM(income) FROM PUMS GROUP BY sex",
    ),
    # key release: the public domain, free
    answer("DP-SELECT 1 DISTINCT sex FROM PUMS", "SELECT DISTINCT sex FROM PUMS"),
    answer("DP-SELECT 1 educ FROM PUMS GROUP BY educ", "SELECT DISTINCT educ FROM PUMS"),
    answer(
        "DP-SELECT 1 DISTINCT race, married FROM PUMS",  # the product of the domains, (5, 1) not in the data
        "SELECT r.range, m.range FROM range(1, 7) AS r CROSS JOIN range(0, 2) AS m",
    ),
    answer("DP-SELECT 1 DELTA 1e-6 DISTINCT income FROM PUMS", "SELECT DISTINCT income FROM PUMS"),
    answer("DP-SELECT 1 DISTINCT TOP 2 educ FROM PUMS", "SELECT DISTINCT educ FROM PUMS"),
    # TOP, ORDER BY … LIMIT, positions and aliases in GROUP BY and ORDER BY
    answer(
        "DP-SELECT 1 sex, COUNT(*) FROM PUMS GROUP BY 1",
        "SELECT sex, COUNT(*) FROM PUMS GROUP BY 1",
    ),
    answer(
        "DP-SELECT 1 sex AS s, COUNT(*) AS n FROM PUMS GROUP BY s",
        "SELECT sex, COUNT(*) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 sex, married, COUNT(*) FROM PUMS GROUP BY sex, married ORDER BY 3 DESC",
        "SELECT sex, married, COUNT(*) FROM PUMS GROUP BY sex, married",
    ),
    answer(
        "DP-SELECT 1 educ, COUNT(*) AS n FROM PUMS GROUP BY educ ORDER BY AVG(income) DESC LIMIT 3",
        "SELECT educ, COUNT(*) FROM PUMS GROUP BY educ",
    ),
    answer(
        "DP-SELECT 1 TOP 3 educ, COUNT(*) AS n FROM PUMS GROUP BY educ ORDER BY n DESC",
        "SELECT educ, COUNT(*) FROM PUMS GROUP BY educ",
    ),
    answer(
        "DP-SELECT 1 TOP 2 race, COUNT(*) AS n FROM PUMS GROUP BY race ORDER BY COUNT(*) DESC",
        "SELECT race, COUNT(*) FROM PUMS GROUP BY race",
    ),
    # distinct counts
    answer("DP-SELECT 1 COUNT(DISTINCT educ) FROM PUMS", "SELECT COUNT(DISTINCT educ) FROM PUMS"),
    answer("DP-SELECT 1 COUNT(DISTINCT age) AS ages FROM PUMS", "SELECT COUNT(DISTINCT age) FROM PUMS"),
    answer(
        "DP-SELECT 1 sex, COUNT(DISTINCT race) AS races FROM PUMS GROUP BY sex",
        "SELECT sex, COUNT(DISTINCT race) FROM PUMS GROUP BY sex",
    ),
    answer("DP-SELECT 1 APPROX_COUNT_DISTINCT(educ) FROM PUMS", "SELECT COUNT(DISTINCT educ) FROM PUMS"),
    # arithmetic and functions over aggregates, constants
    answer("DP-SELECT 1 COUNT(*) * 5 AS n5 FROM PUMS", "SELECT COUNT(*) * 5 FROM PUMS"),
    answer(
        "DP-SELECT 1 married, SUM(income) / COUNT(*) AS mean_income FROM PUMS GROUP BY married",
        "SELECT married, SUM(income) / COUNT(*) FROM PUMS GROUP BY married",
    ),
    answer("DP-SELECT 1 ROUND(AVG(age), 1) AS age FROM PUMS", "SELECT ROUND(AVG(age), 1) FROM PUMS"),
    answer("DP-SELECT 1 (SUM(age)) FROM PUMS", "SELECT SUM(age) FROM PUMS"),
    answer("DP-SELECT 1 POWER(SUM(age), 2) AS sq FROM PUMS", "SELECT POWER(SUM(age), 2) FROM PUMS"),
    answer("DP-SELECT 1 3, PI(), COUNT(*) FROM PUMS", "SELECT 3, PI(), COUNT(*) FROM PUMS"),
    answer(
        "DP-SELECT 1 SUM(income) / SUM(age) AS per_year FROM PUMS",
        "SELECT SUM(income) / SUM(age) FROM PUMS",
    ),
    answer(
        "DP-SELECT 1 sex, SUM(income) / 1000 AS k, COUNT(*) AS n FROM PUMS GROUP BY sex",
        "SELECT sex, SUM(income) / 1000, COUNT(*) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 married, 100 * SUM(CASE WHEN educ >= 13 THEN 1 ELSE 0 END) / COUNT(*) AS pct_college "
        "FROM PUMS GROUP BY married",
        "SELECT married, 100 * SUM(CASE WHEN educ >= 13 THEN 1 ELSE 0 END) / COUNT(*) FROM PUMS GROUP BY "
        "married",
    ),
    answer(
        "DP-SELECT 1 SUM(income) / NULLIF(COUNT(*), 0) AS mean FROM PUMS",
        "SELECT SUM(income) / COUNT(*) FROM PUMS",
    ),
    answer("DP-SELECT 1 SQRT(VAR_POP(age)) AS sd FROM PUMS", "SELECT STDDEV_POP(age) FROM PUMS"),
    answer("DP-SELECT 1 AVG(age) - 40 AS excess FROM PUMS GROUP BY sex ORDER BY excess"),
    answer("DP-SELECT 1 sex, IF(COUNT(*) > 500, 'many', 'few') AS size FROM PUMS GROUP BY sex"),
    answer(
        "DP-SELECT 1 COUNT(*) - COUNT(CASE WHEN married = 1 THEN 1 END) AS unmarried FROM PUMS",
        "SELECT COUNT(*) - COUNT(CASE WHEN married = 1 THEN 1 END) FROM PUMS",
    ),
    # expressions inside aggregates
    answer(
        "DP-SELECT 1 SUM(CASE WHEN sex = 1 THEN income ELSE 0 END) AS men_income FROM PUMS",
        "SELECT SUM(CASE WHEN sex = 1 THEN income ELSE 0 END) FROM PUMS",
    ),
    answer(
        "DP-SELECT 1 sex, AVG(CASE WHEN income > 50000 THEN 1 ELSE 0 END) AS share_high FROM PUMS GROUP BY "
        "sex",
        "SELECT sex, AVG(CASE WHEN income > 50000 THEN 1 ELSE 0 END) FROM PUMS GROUP BY sex",
    ),
    answer("DP-SELECT 1 AVG(age * 12) AS months FROM PUMS", "SELECT AVG(age * 12) FROM PUMS"),
    answer(
        "DP-SELECT 1 COUNT(CASE WHEN married = 1 THEN 1 END) AS married FROM PUMS",
        "SELECT COUNT(CASE WHEN married = 1 THEN 1 END) FROM PUMS",
    ),
    answer("DP-SELECT 1 SUM(income / 1000) AS k FROM PUMS", "SELECT SUM(income / 1000) FROM PUMS"),
    answer(
        "DP-SELECT 1 AVG(LEAST(income, 100000)) AS capped FROM PUMS",
        "SELECT AVG(LEAST(income, 100000)) FROM PUMS",
    ),
    answer("DP-SELECT 1 AVG(COALESCE(income, 0)) FROM PUMS", "SELECT AVG(COALESCE(income, 0)) FROM PUMS"),
    answer(
        "DP-SELECT 1 SUM(CAST(age > 65 AS INTEGER)) AS seniors FROM PUMS",
        "SELECT SUM(CAST(age > 65 AS INTEGER)) FROM PUMS",
    ),
    answer(
        "DP-SELECT 1 AVG(CAST(income AS DOUBLE)) AS mean FROM PUMS",
        "SELECT AVG(CAST(income AS DOUBLE)) FROM PUMS",
    ),
    # variances and standard deviations, every spelling
    answer(
        "DP-SELECT 1 sex, (VAR(age)) AS v FROM PUMS GROUP BY sex",
        "SELECT sex, VAR_SAMP(age) FROM PUMS GROUP BY sex",
    ),
    answer("DP-SELECT 1 STD(age) FROM PUMS", "SELECT STDDEV_SAMP(age) FROM PUMS"),
    answer("DP-SELECT 1 STDDEV_POP(income) FROM PUMS", "SELECT STDDEV_POP(income) FROM PUMS"),
    answer("DP-SELECT 1 VAR_POP(age) FROM PUMS", "SELECT VAR_POP(age) FROM PUMS"),
    answer(
        "DP-SELECT 1 VAR_SAMP(age), STDDEV_SAMP(age) FROM PUMS",
        "SELECT VAR_SAMP(age), STDDEV_SAMP(age) FROM PUMS",
    ),
    answer(
        "DP-SELECT 1 married, VARIANCE(income) AS v, STDDEV(income) AS s FROM PUMS GROUP BY married",
        "SELECT married, VAR_SAMP(income), STDDEV_SAMP(income) FROM PUMS GROUP BY married",
    ),
    # aliases, qualified and quoted names
    answer(
        "DP-SELECT 1 p.married, COUNT(*) AS n FROM PUMS AS p GROUP BY p.married",
        "SELECT married, COUNT(*) FROM PUMS GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 p.sex, AVG(p.income) FROM PUMS p WHERE p.age >= 30 GROUP BY p.sex",
        "SELECT sex, AVG(income) FROM PUMS WHERE age >= 30 GROUP BY sex",
    ),
    answer(
        'DP-SELECT 1 "sex", SUM("income") AS "total" FROM "PUMS" GROUP BY "sex"',
        "SELECT sex, SUM(income) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 PUMS.race, COUNT(*) FROM PUMS GROUP BY PUMS.race",
        "SELECT race, COUNT(*) FROM PUMS GROUP BY race",
    ),
    answer(
        'DP-SELECT 1 COUNT(*) AS "count", AVG(income) AS "avg" FROM PUMS AS "P" WHERE "P".age > 50',
        "SELECT COUNT(*), AVG(income) FROM PUMS WHERE age > 50",
    ),
    # filters as written
    answer(
        "DP-SELECT 1 AVG(age) FROM PUMS WHERE educ BETWEEN 9 AND 12 AND NOT married = 1",
        "SELECT AVG(age) FROM PUMS WHERE educ BETWEEN 9 AND 12 AND NOT married = 1",
    ),
    answer(
        "DP-SELECT 1 AVG(income) FROM PUMS WHERE sex = '1'",
        "SELECT AVG(income) FROM PUMS WHERE sex = 1",
    ),
    answer(
        "DP-SELECT 1 COUNT(DISTINCT sex) FROM PUMS WHERE age > 90",
        "SELECT COUNT(DISTINCT sex) FROM PUMS WHERE age > 90",
    ),
    # keys computed by expressions over public domains
    answer(
        "DP-SELECT 1 educ >= 13 AS graduate, COUNT(*) AS n FROM PUMS GROUP BY educ >= 13",
        "SELECT educ >= 13, COUNT(*) FROM PUMS GROUP BY educ >= 13",
    ),
    answer(
        "DP-SELECT 1 FLOOR(age / 10) * 10 AS decade, COUNT(*) AS n FROM PUMS GROUP BY FLOOR(age / 10) * 10",
        f"SELECT d.decade, COUNT(p.age) FROM {_DECADES} LEFT JOIN PUMS p ON FLOOR(p.age / 10) * 10 = "
        "d.decade "
        "GROUP BY d.decade",
    ),
    answer(
        "DP-SELECT 1 CASE WHEN married = 1 THEN 'married' ELSE 'single' END AS status, AVG(income) AS income "
        "FROM PUMS GROUP BY CASE WHEN married = 1 THEN 'married' ELSE 'single' END",
        "SELECT CASE WHEN married = 1 THEN 'married' ELSE 'single' END, AVG(income) FROM PUMS GROUP BY 1",
    ),
    answer(
        "DP-SELECT 1 DELTA 1e-6 age, COUNT(*) AS n FROM PUMS GROUP BY age",
        "SELECT a.range, COUNT(p.age) FROM range(0, 101) AS a LEFT JOIN PUMS p ON p.age = a.range GROUP BY 1",
    ),
    # keys without a public domain: released through the noisy threshold (δ)
    answer(
        "DP-SELECT 1 DELTA 1e-6 income, COUNT(*) AS n FROM PUMS GROUP BY income",
        "SELECT income, COUNT(*) FROM PUMS GROUP BY income",
    ),
    # subqueries and CTEs
    answer(
        "DP-SELECT 1 COUNT(*) FROM (SELECT * FROM PUMS WHERE age > 60) AS old",
        "SELECT COUNT(*) FROM PUMS WHERE age > 60",
    ),
    answer(
        "DP-SELECT 1 AVG(income) FROM (SELECT age, income FROM PUMS WHERE married = 1) AS m",
        "SELECT AVG(income) FROM PUMS WHERE married = 1",
    ),
    answer(
        "DP-SELECT 1 AVG(k) FROM (SELECT income / 1000 AS k FROM (SELECT income FROM PUMS WHERE sex = 0) "
        "AS w) "
        "AS x",
        "SELECT AVG(income / 1000) FROM PUMS WHERE sex = 0",
    ),
    answer(
        "WITH adults AS (SELECT age, income, educ FROM PUMS WHERE age >= 21) "
        "DP-SELECT 1 educ, COUNT(*) AS n FROM adults GROUP BY educ",
        "SELECT educ, COUNT(*) FROM PUMS WHERE age >= 21 GROUP BY educ",
    ),
    answer(
        "WITH x AS (SELECT sex, income / 12 AS monthly FROM PUMS) "
        "DP-SELECT 1 sex, AVG(monthly) FROM x GROUP BY sex",
        "SELECT sex, AVG(income / 12) FROM PUMS GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 q.graduate, COUNT(*) AS n FROM (SELECT educ >= 13 AS graduate FROM PUMS) AS q "
        "GROUP BY q.graduate",
        "SELECT educ >= 13, COUNT(*) FROM PUMS GROUP BY 1",
    ),
    answer(
        "WITH young AS (SELECT * FROM PUMS WHERE age < 30), poor AS (SELECT * FROM young WHERE income < "
        "20000) "
        "DP-SELECT 1 COUNT(*) AS n FROM poor",
        "SELECT COUNT(*) FROM PUMS WHERE age < 30 AND income < 20000",
    ),
    # order statistics
    answer("DP-SELECT 1 MEDIAN(age) FROM PUMS"),
    answer("DP-SELECT 1 sex, QUANTILE(income, 0.9) AS p90 FROM PUMS GROUP BY sex"),
    # the same sample with a person id (user-level, one row per person)
    answer("DP-SELECT 1 COUNT(DISTINCT pid) FROM PUMS_pid", "SELECT COUNT(DISTINCT pid) FROM PUMS_pid"),
    answer(
        "DP-SELECT 1 sex, COUNT(DISTINCT pid) AS people FROM PUMS_pid GROUP BY sex",
        "SELECT sex, COUNT(DISTINCT pid) FROM PUMS_pid GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 married, AVG(income) FROM PUMS_pid GROUP BY married",
        "SELECT married, AVG(income) FROM PUMS_pid GROUP BY married",
    ),
    answer(
        "DP-SELECT 1 COUNT(pid) FROM PUMS_pid WHERE age < 30",
        "SELECT COUNT(pid) FROM PUMS_pid WHERE age < 30",
    ),
    answer(
        "DP-SELECT 1 AVG(n) FROM (SELECT pid, COUNT(*) AS n FROM PUMS_pid GROUP BY pid) AS q",
        "SELECT 1.0",
    ),
    answer(
        "WITH rich AS (SELECT pid, educ FROM PUMS_pid WHERE income > 60000) "
        "DP-SELECT 1 educ >= 13 AS graduate, COUNT(*) AS n FROM rich GROUP BY educ >= 13",
        "SELECT educ >= 13, COUNT(*) FROM PUMS_pid WHERE income > 60000 GROUP BY 1",
    ),
]


# ---------------------------------------------------------------- people / visits / regions


# per person: visits (R), their total cost, and the weight min(1, m/R) of contribution bounding (m = 5)
def _visits(where: str = "", extra: str = "") -> str:
    condition = f"WHERE {where} " if where else ""
    more = f", {extra}" if extra else ""
    return (
        f"(SELECT pid, COUNT(*) AS n, SUM(cost) AS s, LEAST(1.0, 5.0 / COUNT(*)) AS f{more} "
        f"FROM visits {condition}GROUP BY pid)"
    )


# people ⋈ visits on pid (inner): a person's joined rows are their visits, bounded to 5 the same way
_JOINED = f"people p JOIN {_visits()} AS b ON p.pid = b.pid"
# people ⋈ visits (left): a person without visits has one joined row
_LEFT = (
    "people p LEFT JOIN (SELECT pid, COUNT(*) AS n, SUM(cost) AS s FROM visits GROUP BY pid) AS b "
    "ON p.pid = b.pid"
)
_HOSPITAL = _visits(extra="SUM(CASE WHEN kind = 'hospital' THEN cost ELSE 0 END) AS h")
_EXPENSIVE = _visits(extra="COUNT(CASE WHEN cost > 800 THEN 1 END) AS e")
_SQUARES = _visits(extra="SUM(cost * cost) AS q")
_DENTIST = _visits("kind = 'dentist'")
_GP = _visits("kind = 'gp'")
_GP_PHARMACY = _visits("kind IN ('gp', 'pharmacy')")
_INCOME = "LEAST(income, 200000)"  # the declared bound of people.income

PEOPLE: list[Query] = [
    # one table, one row per person
    answer("DP-SELECT 1 COUNT(*) FROM people", "SELECT COUNT(*) FROM people"),
    answer(
        "DP-SELECT 1 sex, COUNT(*) AS n, AVG(age) AS age FROM people GROUP BY sex",
        "SELECT sex, COUNT(*), AVG(age) FROM people GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 region, AVG(income) AS income FROM people GROUP BY region",
        f"SELECT region, AVG({_INCOME}) FROM people GROUP BY region",
    ),
    answer(
        "DP-SELECT 1 sex, COUNT(*) AS n FROM people GROUP BY sex HAVING COUNT(*) > 1000",
        "SELECT sex, COUNT(*) FROM people GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 VAR(age), STDDEV_POP(income) FROM people",
        f"SELECT VAR_SAMP(age), STDDEV_POP({_INCOME}) FROM people",
    ),
    answer(
        "DP-SELECT 1 region, COUNT(*) * 100 / 5000 AS pct FROM people GROUP BY region",
        "SELECT region, COUNT(*) * 100 / 5000 FROM people GROUP BY region",
    ),
    answer(
        'DP-SELECT 1 "p"."sex", COUNT(*) AS "n" FROM "people" AS "p" GROUP BY "p"."sex"',
        "SELECT sex, COUNT(*) FROM people GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 DELTA 1e-6 age, COUNT(*) FROM people WHERE age > 80 GROUP BY age",
        "SELECT a.range, COUNT(p.age) FROM range(0, 101) AS a LEFT JOIN people p ON p.age = a.range "
        "AND p.age > 80 GROUP BY 1",
    ),
    answer(
        "DP-SELECT 1 DELTA 1e-6 ROUND(income, -4) AS band, COUNT(*) AS n FROM people GROUP BY "
        "ROUND(income, -4)",
        "SELECT ROUND(income, -4), COUNT(*) FROM people GROUP BY 1",
    ),
    answer(
        "DP-SELECT 1 AVG(age) FROM (SELECT pid, age FROM (SELECT * FROM people WHERE income > 20000) AS a "
        "WHERE age < 60) AS b",
        "SELECT AVG(age) FROM people WHERE income > 20000 AND age < 60",
    ),
    answer(
        "WITH seniors AS (SELECT pid, age, income FROM people WHERE age >= 65) "
        "DP-SELECT 1 COUNT(*) AS n, AVG(income) AS income FROM seniors",
        f"SELECT COUNT(*), AVG({_INCOME}) FROM people WHERE age >= 65",
    ),
    answer("DP-SELECT 1 region FROM people GROUP BY region", "SELECT DISTINCT region FROM people"),
    answer(
        "WITH people AS (SELECT * FROM people WHERE age > 50) DP-SELECT 1 COUNT(*) FROM people",
        "SELECT COUNT(*) FROM people WHERE age > 50",
    ),
    # visits: several rows per person, bounded to 5
    answer("DP-SELECT 1 COUNT(*) FROM visits", f"SELECT SUM(LEAST(n, 5)) FROM {_visits()}"),
    answer("DP-SELECT 1 SUM(cost) FROM visits", f"SELECT SUM(f * s) FROM {_visits()}"),
    answer("DP-SELECT 1 AVG(cost) FROM visits", f"SELECT SUM(f * s) / SUM(f * n) FROM {_visits()}"),
    answer(
        "DP-SELECT 1 SUM(cost) / COUNT(*) AS mean_cost FROM visits",
        f"SELECT SUM(f * s) / SUM(f * n) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM visits WHERE kind = 'dentist'",
        f"SELECT SUM(LEAST(n, 5)) FROM {_DENTIST}",
    ),
    answer(
        "DP-SELECT 1 AVG(v.cost) FROM visits v WHERE v.kind IN ('gp', 'pharmacy')",
        f"SELECT SUM(f * s) / SUM(f * n) FROM {_GP_PHARMACY}",
    ),
    answer(
        "DP-SELECT 1 SUM(CASE WHEN kind = 'hospital' THEN cost ELSE 0 END) AS hospital_cost FROM visits",
        f"SELECT SUM(f * h) FROM {_HOSPITAL}",
    ),
    answer(
        "DP-SELECT 1 COUNT(CASE WHEN cost > 800 THEN 1 END) AS expensive FROM visits",
        f"SELECT SUM(f * e) FROM {_EXPENSIVE}",
    ),
    answer(
        "DP-SELECT 1 AVG(cost * 1.2) AS with_vat FROM visits",
        f"SELECT 1.2 * SUM(f * s) / SUM(f * n) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 STDDEV(cost) FROM visits",
        "SELECT SQRT((SUM(f * q) - SUM(f * s) * SUM(f * s) / SUM(f * n)) / (SUM(f * n) - 1)) "
        f"FROM {_SQUARES}",
    ),
    answer(
        "DP-SELECT 1 ROUND(SUM(cost) / COUNT(DISTINCT pid), 2) AS per_patient FROM visits",
        f"SELECT ROUND(SUM(f * s) / COUNT(*), 2) FROM {_visits()}",
    ),
    answer("DP-SELECT 1 kind, COUNT(*) AS n, AVG(cost) AS mean_cost FROM visits GROUP BY kind"),
    answer("DP-SELECT 1 DISTINCT kind FROM visits", "SELECT DISTINCT kind FROM visits"),
    answer(
        "DP-SELECT 1 COUNT(DISTINCT pid) AS patients FROM visits", "SELECT COUNT(DISTINCT pid) FROM visits"
    ),
    answer("DP-SELECT 1 COUNT(DISTINCT kind) FROM visits", "SELECT COUNT(DISTINCT kind) FROM visits"),
    answer("DP-SELECT 1 kind, COUNT(DISTINCT pid) AS patients FROM visits GROUP BY kind"),
    answer(
        "DP-SELECT 1 COUNT(DISTINCT pid) FROM visits WHERE kind = 'hospital'",
        "SELECT COUNT(DISTINCT pid) FROM visits WHERE kind = 'hospital'",
    ),
    answer(
        "WITH big AS (SELECT pid, cost FROM visits WHERE cost > 500) "
        "DP-SELECT 1 COUNT(*) AS n, SUM(cost) AS s FROM big",
        f"SELECT SUM(LEAST(n, 5)), SUM(f * s) FROM {_visits('cost > 500')}",
    ),
    # one aggregation per person in a subquery, aggregated outside
    answer(
        "DP-SELECT 1 AVG(n) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS q",
        f"SELECT AVG(LEAST(n, 5)) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 SUM(n) AS visits, COUNT(*) AS patients FROM (SELECT pid, COUNT(*) AS n FROM visits "
        "GROUP BY pid) q",
        f"SELECT SUM(LEAST(n, 5)), COUNT(*) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 AVG(total) FROM (SELECT pid, SUM(cost) AS total FROM visits GROUP BY pid) AS t",
        f"SELECT AVG(LEAST(s, 5000)) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS q WHERE n >= 3",
        f"SELECT COUNT(*) FROM {_visits()} WHERE n >= 3",
    ),
    answer(
        "WITH per AS (SELECT pid, COUNT(*) AS n, AVG(cost) AS mean_cost FROM visits GROUP BY pid) "
        "DP-SELECT 1 n, COUNT(*) AS people FROM per GROUP BY n",
        f"SELECT k.range, COUNT(b.pid) FROM range(0, 6) AS k LEFT JOIN {_visits()} AS b "
        "ON LEAST(b.n, 5) = k.range GROUP BY 1",
    ),
    answer(
        "DP-SELECT 1 AVG(mean_cost) FROM (SELECT pid, AVG(cost) AS mean_cost FROM visits GROUP BY pid) AS q",
        f"SELECT AVG(s / n) FROM {_visits()}",
    ),
    answer(
        "WITH v AS (SELECT pid, COUNT(*) AS n, SUM(cost) AS total FROM visits GROUP BY pid) "
        "DP-SELECT 1 SUM(total) / SUM(n) AS cost_per_visit FROM v",
        f"SELECT SUM(LEAST(s, 5000)) / SUM(LEAST(n, 5)) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 DISTINCT n FROM (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) q",
        "SELECT range FROM range(0, 6)",
    ),
    answer(
        "DP-SELECT 1 kind, AVG(n) AS mean_visits FROM (SELECT pid, kind, COUNT(*) AS n FROM visits "
        "GROUP BY pid, kind) AS q GROUP BY kind"
    ),
    answer(
        "DP-SELECT 1 MAX(n) FROM (SELECT pid, COUNT(*) AS n FROM visits WHERE kind = 'hospital' GROUP BY "
        "pid) AS q"
    ),
    # private ⋈ private on the privacy unit
    answer(
        "DP-SELECT 1 p.sex, COUNT(*) AS visits, SUM(v.cost) AS cost FROM people p JOIN visits v ON p.pid = "
        "v.pid "
        "GROUP BY p.sex",
        f"SELECT p.sex, SUM(LEAST(b.n, 5)), SUM(b.f * b.s) FROM {_JOINED} GROUP BY p.sex",
    ),
    answer(
        "DP-SELECT 1 AVG(v.cost) FROM people p JOIN visits v ON p.pid = v.pid WHERE p.age >= 65",
        f"SELECT SUM(b.f * b.s) / SUM(b.f * b.n) FROM {_JOINED} WHERE p.age >= 65",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people p JOIN visits v USING (pid)",
        f"SELECT SUM(LEAST(b.n, 5)) FROM {_JOINED}",
    ),
    answer(
        "DP-SELECT 1 sex, COUNT(*) AS n FROM people JOIN visits USING (pid) GROUP BY sex",
        f"SELECT p.sex, SUM(LEAST(b.n, 5)) FROM {_JOINED} GROUP BY p.sex",
    ),
    answer(
        "DP-SELECT 1 p.region, COUNT(*) AS n FROM people p LEFT JOIN visits v ON p.pid = v.pid GROUP BY "
        "p.region",
        f"SELECT p.region, SUM(LEAST(COALESCE(b.n, 1), 5)) FROM {_LEFT} GROUP BY p.region",
    ),
    answer(
        "DP-SELECT 1 COUNT(v.cost) FROM people p LEFT JOIN visits v ON p.pid = v.pid",
        f"SELECT SUM(LEAST(COALESCE(b.n, 0), 5)) FROM {_LEFT}",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people p LEFT JOIN visits v ON p.pid = v.pid WHERE v.pid IS NULL",
        "SELECT COUNT(*) FROM people WHERE pid NOT IN (SELECT pid FROM visits)",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people p LEFT JOIN visits v ON p.pid = v.pid AND v.kind = 'gp'",
        f"SELECT SUM(LEAST(COALESCE(b.n, 1), 5)) FROM people p LEFT JOIN {_GP} AS b ON p.pid = b.pid",
    ),
    answer(
        "DP-SELECT 1 p.sex, SUM(v.cost) AS cost FROM people p JOIN visits v ON p.pid = v.pid WHERE v.cost "
        "> 100 "
        "GROUP BY p.sex",
        f"SELECT p.sex, SUM(b.f * b.s) FROM people p JOIN {_visits('cost > 100')} AS b ON p.pid = b.pid "
        "GROUP BY p.sex",
    ),
    answer(
        "WITH a AS (SELECT pid, age FROM people), b AS (SELECT pid, cost FROM visits) "
        "DP-SELECT 1 COUNT(*) FROM a JOIN b ON a.pid = b.pid",
        f"SELECT SUM(LEAST(n, 5)) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM (SELECT pid AS person, cost FROM visits) v JOIN people p ON p.pid = "
        "v.person",
        f"SELECT SUM(LEAST(n, 5)) FROM {_visits()}",
    ),
    answer(
        "DP-SELECT 1 COUNT(DISTINCT v.kind) FROM people p JOIN visits v ON p.pid = v.pid",
        "SELECT COUNT(DISTINCT kind) FROM visits",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) AS pairs FROM visits a JOIN visits b ON a.pid = b.pid AND a.kind = 'gp' "
        "AND b.kind = 'hospital'",
        "SELECT SUM(LEAST(g.n * h.n, 25)) FROM (SELECT pid, COUNT(*) AS n FROM visits WHERE kind = 'gp' "
        "GROUP BY pid) AS g JOIN (SELECT pid, COUNT(*) AS n FROM visits WHERE kind = 'hospital' GROUP BY "
        "pid) "
        "AS h ON g.pid = h.pid",
    ),
    answer(
        "DP-SELECT 1 COUNT(DISTINCT p.pid) FROM people p JOIN visits v ON p.pid = v.pid",
        "SELECT COUNT(DISTINCT pid) FROM visits",
    ),
    answer(
        "DP-SELECT 1 p.sex, COUNT(*) AS gp_visits FROM people p JOIN visits v ON p.pid = v.pid AND v.kind "
        "= 'gp' "
        "GROUP BY p.sex",
        f"SELECT p.sex, SUM(LEAST(b.n, 5)) FROM people p JOIN {_GP} AS b ON p.pid = b.pid GROUP BY p.sex",
    ),
    answer(
        "WITH per AS (SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) "
        "DP-SELECT 1 p.sex, AVG(per.n) AS mean_visits FROM people p JOIN per ON p.pid = per.pid GROUP BY "
        "p.sex",
        f"SELECT p.sex, AVG(LEAST(b.n, 5)) FROM {_JOINED} GROUP BY p.sex",
    ),
    answer(
        "DP-SELECT 1 p.sex, AVG(COALESCE(q.n, 0)) AS mean_visits FROM people p LEFT JOIN "
        "(SELECT pid, COUNT(*) AS n FROM visits GROUP BY pid) AS q ON p.pid = q.pid GROUP BY p.sex",
        f"SELECT p.sex, AVG(LEAST(COALESCE(b.n, 0), 5)) FROM {_LEFT} GROUP BY p.sex",
    ),
    # with the public regions table
    answer(
        "DP-SELECT 1 r.name, COUNT(*) AS n FROM people p JOIN regions r ON p.region = r.code GROUP BY r.name",
        "SELECT r.name, COUNT(*) FROM people p JOIN regions r ON p.region = r.code GROUP BY r.name",
    ),
    answer(
        "DP-SELECT 1 r.name, AVG(p.income) AS income FROM people AS p INNER JOIN regions AS r ON r.code = "
        "p.region "
        "GROUP BY r.name",
        "SELECT r.name, AVG(LEAST(p.income, 200000)) FROM people p JOIN regions r ON r.code = p.region "
        "GROUP BY r.name",
    ),
    answer(
        "DP-SELECT 1 r.name, p.sex, COUNT(*) AS n FROM people p JOIN regions r ON p.region = r.code "
        "GROUP BY r.name, p.sex",
        "SELECT r.name, p.sex, COUNT(*) FROM people p JOIN regions r ON p.region = r.code GROUP BY 1, 2",
    ),
    answer(
        "DP-SELECT 1 name, COUNT(*) AS n FROM people JOIN regions ON region = code GROUP BY name",
        "SELECT name, COUNT(*) FROM people JOIN regions ON region = code GROUP BY name",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people p JOIN regions r ON p.region = r.code AND r.name <> 'North'",
        "SELECT COUNT(*) FROM people WHERE region <> 1",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people WHERE region NOT IN (SELECT code FROM regions WHERE name = "
        "'North')",
        "SELECT COUNT(*) FROM people WHERE region <> 1",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people p LEFT JOIN regions r ON p.region = r.code WHERE r.name = 'North'",
        "SELECT COUNT(*) FROM people p JOIN regions r ON p.region = r.code WHERE r.name = 'North'",
    ),
    answer(
        "DP-SELECT 1 TOP 2 r.name, COUNT(*) AS n FROM people p JOIN regions r ON p.region = r.code "
        "GROUP BY r.name ORDER BY n DESC",
        "SELECT r.name, COUNT(*) FROM people p JOIN regions r ON p.region = r.code GROUP BY r.name",
    ),
    answer(
        "DP-SELECT 1 r.name, COUNT(*) AS visits FROM visits v JOIN people p ON v.pid = p.pid "
        "JOIN regions r ON p.region = r.code GROUP BY r.name",
        f"SELECT r.name, SUM(LEAST(b.n, 5)) FROM {_JOINED} JOIN regions r ON p.region = r.code GROUP BY "
        "r.name",
    ),
    answer(
        "DP-SELECT 1 COUNT(*) FROM people WHERE region IN (SELECT code FROM regions WHERE name IN "
        "('North', 'South'))",
        "SELECT COUNT(*) FROM people WHERE region IN (1, 2)",
    ),
    answer(
        "DP-SELECT 1 sex, AVG(income) AS income FROM people WHERE region IN (SELECT code FROM regions "
        "WHERE name <> 'Centre') GROUP BY sex",
        f"SELECT sex, AVG({_INCOME}) FROM people WHERE region <> 5 GROUP BY sex",
    ),
    answer(
        "DP-SELECT 1 SUM(v.cost) FROM visits v JOIN people p ON p.pid = v.pid "
        "WHERE p.region IN (SELECT code FROM regions WHERE name LIKE 'N%')",
        f"SELECT SUM(b.f * b.s) FROM {_JOINED} WHERE p.region = 1",
    ),
    answer(
        "WITH named AS (SELECT p.pid, p.age, r.name AS region_name FROM people p JOIN regions r "
        "ON p.region = r.code) DP-SELECT 1 region_name, AVG(age) AS age FROM named GROUP BY region_name",
        "SELECT r.name, AVG(p.age) FROM people p JOIN regions r ON p.region = r.code GROUP BY r.name",
    ),
]


# ---------------------------------------------------------------- refused by design (issue 14, item 10)

REFUSED: list[Query] = [
    refuse(
        "DP-SELECT 1 educ, COUNT(*) OVER (PARTITION BY educ) FROM PUMS",
        "window functions (OVER …) are not supported",
    ),
    refuse(
        "DP-SELECT 1 AVG(income), RANK() OVER (ORDER BY AVG(income)) FROM PUMS GROUP BY educ",
        "window functions",
    ),
    refuse(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) DP-SELECT 1 COUNT(*) "
        "FROM r",
        "recursive CTEs (WITH RECURSIVE) are not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM PUMS WHERE income > (SELECT AVG(income) FROM PUMS)",
        "a subquery used as a value is not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p WHERE p.income > (SELECT AVG(q.income) FROM people q "
        "WHERE q.sex = p.sex)",
        "a subquery used as a value is not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p WHERE EXISTS (SELECT 1 FROM visits v WHERE v.pid = p.pid)",
        "EXISTS (SELECT …) is not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p WHERE p.pid IN (SELECT pid FROM visits WHERE cost > 500)",
        "IN (SELECT …) reads public tables only",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p WHERE p.region IN (SELECT code FROM regions r "
        "WHERE r.code = p.region AND p.age > 50)",
        "correlated subqueries are not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM (SELECT age FROM PUMS WHERE sex = 0 UNION ALL SELECT age FROM PUMS "
        "WHERE sex = 1) AS u",
        "set operations (UNION, INTERSECT, EXCEPT) over private tables are not supported",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM (SELECT pid FROM people INTERSECT SELECT pid FROM visits) AS i",
        "set operations",
    ),
    refuse("DP-SELECT 1 COUNT(*) FROM people UNION SELECT COUNT(*) FROM visits", "set operations"),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM regions r RIGHT JOIN people p ON r.code = p.region",
        "RIGHT JOIN is supported only with a public relation on the right",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p FULL OUTER JOIN visits v ON p.pid = v.pid",
        "FULL JOIN is not supported",
    ),
    refuse("DP-SELECT 1 COUNT(*) FROM people CROSS JOIN visits", "a join without a condition"),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p, visits v WHERE p.pid = v.pid",
        "a join without a condition is a CROSS JOIN",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.age = v.cost",
        "two private tables join only ON their common privacy unit",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM PUMS a JOIN PUMS_pid b ON a.age = b.age",
        "a table without a privacy_unit has none",
    ),
    refuse(
        "DP-SELECT 1 COUNT(*) FROM regions r LEFT JOIN people p ON r.code = p.region",
        "a LEFT JOIN that preserves a public table",
    ),
    refuse(
        "DP-SELECT 1 AVG(n) FROM (SELECT sex, COUNT(*) AS n FROM people GROUP BY sex) AS s",
        "must include the privacy unit",
    ),
    refuse(
        "DP-SELECT 1 AVG(n) FROM (SELECT educ, COUNT(*) AS n FROM PUMS GROUP BY educ) AS s",
        "a subquery may group only by the privacy unit",
    ),
]

CORPUS: dict[str, list[Query]] = {"pums": PUMS, "people": PEOPLE, "refused": REFUSED}
