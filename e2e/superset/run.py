"""Apache Superset against privdb's PostgreSQL endpoint, end to end, from scratch (``make superset``).

A fresh privdb database (the census-like ``people`` table) and analyst, ``privdb serve --pg-port``; a
throw-away Superset home, its set-up and web server; then, through Superset's REST API as a user of it:
the database connection (the session's ε in Extra → engine_params → connect_args → options), its test,
a dataset over ``public.people``, SQL Lab queries, an ECharts bar chart of a DP count and its data; then
the chart drawn in headless Chromium (signed in on the login page), its screenshot read back for bars;
and privdb's ledger: the analyst's ε spent equals what the log charged, and the second load of the chart
(a refresh) spends nothing. Superset talks to privdb through a relay that records every statement it
sent and every error privdb answered, so a refused form is reported with its exact SQL.

Prints a report and exits 1 on any failure; every server it started is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import charts
from privdb_side import REPO, Privdb
from render import Browser, measure_bars
from superset_side import ADMIN, PASSWORD, Api, ApiError, Superset
from wiretap import WireTap

EPSILON = 0.1  # each plain aggregate's ε, set by the connection's options
PEOPLE = 5000
SQL_LAB = "SELECT sex, COUNT(*) AS n, AVG(income) AS mean_income FROM public.people GROUP BY sex ORDER BY sex"
SQL_LAB_SET = "SELECT sex, COUNT(*) AS n FROM public.people WHERE age > 50 GROUP BY sex"
SET_EPSILON = 0.5  # what a SET before a query in the same SQL Lab run gives that query
SQL_LAB_DP = (
    "SELECT sex, n FROM (DP-SELECT 0.1 sex, COUNT(*) AS n FROM people GROUP BY sex) AS t ORDER BY sex"
)
NOISE = 10  # a count is checked within 10 noise scales of the truth: off by more with chance e^-10


class Failed(Exception):
    """A check of the run did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class Report:
    """Timings of each step and the facts the run found, printed at the end."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float, str]] = []
        self.facts: list[str] = []

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start, status = time.monotonic(), "FAILED"
        try:
            yield
            status = "ok"
        finally:
            self.steps.append((name, time.monotonic() - start, status))
            print(f"{name:<44} {self.steps[-1][1]:7.1f} s  {status}", flush=True)

    def fact(self, text: str) -> None:
        self.facts.append(text)

    def print(self, total: float, error: BaseException | None) -> None:
        print("\nSuperset × privdb release check")
        for name, seconds, status in self.steps:
            print(f"  {name:<44} {seconds:7.1f} s  {status}")
        print(f"  {'total':<44} {total:7.1f} s")
        print("\n".join(["", *self.facts]) if self.facts else "")
        print(f"\nFAILED: {type(error).__name__}: {error}" if error else "\nPASSED")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--privdb-python", type=Path, default=REPO / ".venv" / "bin" / "python")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "superset-e2e", help="screenshot, logs")
    parser.add_argument("--keep", action="store_true", help="keep the throw-away databases (in --out)")
    args = parser.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    work = args.out / "work" if args.keep else Path(tempfile.mkdtemp(prefix="privdb-superset-"))
    work.mkdir(parents=True, exist_ok=True)
    report, started = Report(), time.monotonic()
    privdb = Privdb(python=args.privdb_python.absolute(), work=work)
    superset = Superset(work=work)
    tap: WireTap | None = None
    error: BaseException | None = None
    try:
        tap = _servers(report, privdb, superset, args.out)
        _through_superset(report, privdb, superset, tap, args.out)
    except (Exception, KeyboardInterrupt) as err:
        error = err
    finally:
        for stop in (superset.stop, privdb.stop, *((tap.close,) if tap else ())):
            try:
                stop()
            except Exception as err:  # a stop that fails is reported, the others still run
                error = error or err
        if tap is not None:  # every statement Superset sent privdb, and privdb's error if it refused one
            statements = [s.__dict__ for s in tap.statements]
            (args.out / "statements.json").write_text(json.dumps(statements, indent=1, ensure_ascii=False))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report.print(time.monotonic() - started, error)
    if error is not None:
        print(f"(logs: {args.out})", file=sys.stderr)
    return 0 if error is None else 1


def _servers(report: Report, privdb: Privdb, superset: Superset, out: Path) -> WireTap:
    with report.step("privdb: database, analyst (CLI)"):
        privdb.create(PEOPLE)
    with report.step("privdb: serve --pg-port"):
        privdb.start(out / "privdb.log")
    tap = WireTap(privdb.pg_port)
    with report.step("superset: config, db upgrade"):
        superset.configure()
        superset.command("db", "upgrade", log=out / "superset-setup.log")
    with report.step("superset: fab create-admin"):
        superset.create_admin(out / "superset-setup.log")
    with report.step("superset: init"):
        superset.command("init", log=out / "superset-setup.log")
    with report.step("superset: web server up"):
        superset.start(out / "superset-web.log")
    return tap


def _through_superset(report: Report, privdb: Privdb, superset: Superset, tap: WireTap, out: Path) -> None:
    truth = privdb.truth
    with report.step("api: login, CSRF token"):
        api = Api(superset.url)
    with report.step("api: database (test, create)"):
        uri = f"postgresql+psycopg2://{privdb.analyst}:{privdb.token}@127.0.0.1:{tap.port}/privdb"
        database = api.create_database(uri, f"-c privdb.epsilon={EPSILON}")
    with report.step("api: schemas, tables, columns"):
        schemas = api.get(f"/api/v1/database/{database}/schemas/")["result"]
        tables = api.get(f"/api/v1/database/{database}/tables/?q=(schema_name:public)")["result"]
        columns = api.get(f"/api/v1/database/{database}/table_metadata/?name=people&schema=public")["columns"]
        check("public" in schemas, f"schemas: {schemas}")
        check([t["value"] for t in tables] == ["people"], f"tables: {tables}")
        report.fact(f"people's columns as Superset reads them: {[(c['name'], c['type']) for c in columns]}")
    with report.step("api: dataset public.people"):
        dataset = api.post(
            "/api/v1/dataset/", {"database": database, "schema": "public", "table_name": "people"}
        )
        dataset_id = int(dataset["id"])
        metrics = [m["metric_name"] for m in api.get(f"/api/v1/dataset/{dataset_id}")["result"]["metrics"]]
        check("count" in metrics, f"the dataset's metrics: {metrics}")
    _sql_lab(report, privdb, api, database)
    spent = privdb.spent()
    with report.step("api: bar chart (echarts), its data"):
        chart = int(
            api.post("/api/v1/chart/", charts.bar_chart(dataset_id, "People by education (DP)"))["id"]
        )
        data = api.get(f"/api/v1/chart/{chart}/data/")["result"][0]
        counts = {r["education"]: r["count"] for r in data["data"]}
        check(set(counts) == set(truth["education"]), f"chart rows: {data['data']}")
        scale = privdb.noise_scale("count")
        for key, value in counts.items():
            off = abs(value - truth["education"][key])
            check(off < NOISE * scale, f"{key}: {value} vs {truth['education'][key]} (scale {scale:.3g})")
        charged = privdb.spent() - spent
        check(abs(charged - EPSILON) < 1e-9, f"the chart's query charged ε {charged}, not {EPSILON}")
        report.fact(f"chart {chart} ({charts.VIZ}) query: {' '.join(data['query'].split())!r}")
        report.fact(
            f"chart data (ε {charged:g}; noise scale {scale:.3g}): {counts}; true {truth['education']}"
        )
    _in_the_browser(report, privdb, superset, api, (dataset_id, chart), counts, out)
    _more_forms(report, privdb, api, dataset_id)
    with report.step("ledger: spent = charged in the log"):
        _check_ledger(report, privdb, tap, out)


def _sql_lab(report: Report, privdb: Privdb, api: Api, database: int) -> None:
    """A plain aggregate (answered at the connection's ε), its repeat (the stored answer), a SET before a
    query in the same run (its own ε), and a DP-SELECT in a subquery (Superset's parser's call)."""
    truth = privdb.truth
    spent = privdb.spent()
    with report.step("sql lab: plain aggregate (DP)"):
        lab = api.sql_lab(database, SQL_LAB)
        rows = lab["data"]
        check([r["sex"] for r in rows] == ["F", "M"], f"SQL Lab rows: {rows}")
        scale = privdb.noise_scale("n")
        for r in rows:
            off = abs(r["n"] - truth["sex"][r["sex"]])
            check(off < NOISE * scale, f"n of {r['sex']}: {r['n']} vs {truth['sex']} (scale {scale:.3g})")
            check(0 <= r["mean_income"] <= 500_000, f"mean income outside its bounds: {r}")
        charged = privdb.spent() - spent
        check(abs(charged - EPSILON) < 1e-9, f"SQL Lab's query charged ε {charged}, not {EPSILON}")
        report.fact(f"SQL Lab sent: {lab['query']['executedSql']!r}")
        report.fact(
            f"SQL Lab rows (ε {charged:g}; n's noise scale {scale:.3g}): {rows}; true n {truth['sex']}"
        )
    with report.step("sql lab: same query again (stored)"):
        again = api.sql_lab(database, SQL_LAB)
        check(again["data"] == rows, "the repeated SQL Lab query is not the stored answer")
        check(abs(privdb.spent() - spent - charged) < 1e-9, "the repeated SQL Lab query spent ε")
    with report.step("sql lab: DP-SELECT in a subquery"):
        try:
            wrapped = api.sql_lab(database, SQL_LAB_DP)
            report.fact(f"SQL Lab passed a DP-SELECT subquery: {wrapped['data']}")
        except ApiError as err:
            check(err.status in (400, 422), f"SQL Lab: {err}")
            report.fact(f"SQL Lab's parser refuses DP-SELECT (HTTP {err.status}): {err.text[:160]}")
    spent = privdb.spent()
    with report.step("sql lab: SET privdb.epsilon; SELECT …"):
        script = api.sql_lab(database, f"SET privdb.epsilon = {SET_EPSILON}; {SQL_LAB_SET}")
        check(len(script["data"]) == 2, f"SQL Lab's script answered {script['data']}")
        charged = privdb.spent() - spent
        check(abs(charged - SET_EPSILON) < 1e-9, f"the SET's query charged ε {charged}, not {SET_EPSILON}")
        report.fact(
            f"SQL Lab 'SET privdb.epsilon = {SET_EPSILON}; …' charged ε {charged:g}: {script['data']}"
        )


def _in_the_browser(
    report: Report,
    privdb: Privdb,
    superset: Superset,
    api: Api,
    ids: tuple[int, int],
    counts: dict[str, int],
    out: Path,
) -> None:
    """The chart drawn alone, then on a dashboard and that dashboard reloaded (a refresh), then a forced
    refresh through the API: each the same SQL as the API's first load, so privdb's stored answer, free."""
    dataset, chart = ids
    with report.step("api: dashboard holding the chart"):
        board = int(
            api.post("/api/v1/dashboard/", charts.dashboard(chart, "privdb (DP)", "People by education"))[
                "id"
            ]
        )
        api.put(f"/api/v1/chart/{chart}", {"dashboards": [board]})
    spent = privdb.spent()
    png, on_board = out / "superset_chart.png", out / "superset_dashboard.png"
    browser = None
    try:
        with report.step("chromium: sign in, draw the chart"):
            browser = Browser(superset.url, ADMIN, PASSWORD)
            browser.chart(chart, png)
            check(privdb.spent() == spent, f"the browser's chart spent ε {privdb.spent() - spent}")
        with report.step("screenshot: the bars read back"):
            _check_bars(report, png, counts)
        with report.step("chromium: the dashboard (second load)"):
            browser.dashboard(board, on_board)
            _check_bars(report, on_board, counts)
        with report.step("chromium: dashboard reloaded (refresh)"):
            browser.dashboard(board, out / "superset_dashboard_reload.png")
            _check_bars(report, out / "superset_dashboard_reload.png", counts)
            errors = browser.console_errors()
            check(errors == [], f"browser console errors: {errors[:3]}")
    finally:
        if browser is not None:
            browser.close()
    with report.step("api: forced refresh (stored answer)"):
        forced = api.post("/api/v1/chart/data", charts.chart_data_query(dataset, force=True))["result"][0]
        check({r["education"]: r["count"] for r in forced["data"]} == counts, "a forced refresh changed")
    check(privdb.spent() == spent, f"the loads after the first spent ε {privdb.spent() - spent}")
    report.fact("the chart in Chromium, the dashboard, its reload and a forced refresh: ε 0 (stored answer)")


def _check_bars(report: Report, png: Path, counts: dict[str, int]) -> None:
    bars = measure_bars(png)
    check(bars.share > 0.02, f"the screenshot has almost no bar colour ({bars.share:.1%}): blank?")
    check(len(bars.heights) == len(counts), f"{len(bars.heights)} bars drawn, {len(counts)} rows")
    top = max(counts.values())
    expected = [counts[key] / top for key in sorted(counts)]  # the x axis is sorted by its labels
    drawn = [h / max(bars.heights) for h in bars.heights]  # left to right
    worst = max(abs(a - b) for a, b in zip(expected, drawn, strict=True))
    check(worst < 0.03, f"bar heights {bars.heights} do not follow the counts {counts}")
    report.fact(
        f"screenshot {png.name}: {len(bars.heights)} bars in #{bytes(bars.colour).hex()} "
        f"({bars.share:.1%} of the pixels), heights {bars.heights} px, off the counts by ≤ {worst:.1%}"
    )


def _more_forms(report: Report, privdb: Privdb, api: Api, dataset: int) -> None:
    """A custom SQL metric MEDIAN(age) (Superset writes PostgreSQL's WITHIN GROUP form), and the
    explore page's "Samples" (rows of the table: privdb refuses them, and nothing is spent)."""
    spent = privdb.spent()
    with report.step("api: MEDIAN(age) metric (WITHIN GROUP)"):
        median = api.post("/api/v1/chart/data", charts.median_query(dataset))["result"][0]
        ages = {r["sex"]: r["median_age"] for r in median["data"]}
        check(set(ages) == {"F", "M"} and all(20 <= a <= 65 for a in ages.values()), f"medians: {ages}")
        check(abs(privdb.spent() - spent - EPSILON) < 1e-9, "the median's query was not charged ε 0.1")
        report.fact(f"MEDIAN(age) sent as {' '.join(median['query'].split())!r}: {ages}")
    spent = privdb.spent()
    with report.step("api: samples (rows: refused)"):
        try:
            body = {"datasource": {"id": dataset, "type": "table"}, "queries": [{"row_limit": 100}]}
            api.post("/api/v1/chart/data", body | {"result_type": "samples", "force": True})
            raise Failed("Superset's samples of a private table were answered")
        except ApiError as err:
            check("not public" in err.text, f"samples refused, but not by privdb: {err.text}")
        check(privdb.spent() == spent, "the refused samples spent ε")
        report.fact("samples (SELECT … FROM public.people LIMIT 100): refused by privdb, ε 0")


def _check_ledger(report: Report, privdb: Privdb, tap: WireTap, out: Path) -> None:
    log = privdb.log()
    answered = [e for e in log if e["outcome"] == "answered"]
    charged = sum(float(e["epsilon"]) for e in log)
    spent = privdb.spent()
    check(abs(spent - charged) < 1e-9, f"ledger: spent {spent}, the log charged {charged}")
    charges = [float(e["epsilon"]) for e in answered]  # SQL Lab, its SET, the chart, the median
    check(charges == [EPSILON, SET_EPSILON, EPSILON, EPSILON], f"the answers' ε: {charges}")
    check(len({e["query"] for e in answered}) == len(answered), "a query was charged twice")
    report.fact(f"ledger: ε spent {spent:g} of {privdb.budget:g} = the log's {len(answered)} answers:")
    for entry in answered:
        report.fact(f"    ε {float(entry['epsilon']):g}  {entry['query']}")
    refused = tap.refused()
    expected = [s for s in refused if s.error and s.error.startswith("42501") and "LIMIT 100" in s.sql]
    report.fact(f"Superset sent privdb {len(tap.statements)} statements; privdb refused {len(refused)}")
    for statement in refused:
        report.fact(f"    refused: {' '.join(statement.sql.split())!r} → {statement.error}")
    check(refused == expected, f"privdb refused statements Superset sent: {[s.sql for s in refused]}")


if __name__ == "__main__":
    sys.exit(main())
