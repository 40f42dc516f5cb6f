"""The web page in a real browser: Debian's headless Chromium driven by Playwright against a real server.

An analyst signs in, asks, sees the answer as a table and a bar chart with 95 % error bars, watches the
budget drop and is refused when it runs out; the owner then sees the analyst's spend and the query log.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.result import Result
from serverfixtures import Server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = Path("/tmp/privdb-page.png")
QUERY = "DP-SELECT 0.4 sex, COUNT(*) FROM people GROUP BY sex"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium: apt-get install -y chromium"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    path = tmp_path_factory.mktemp("webdb")
    db = Database(path)
    db.backend.load_frame("people", generate(2000))
    db.set_metadata("people", METADATA)
    tokens = {"alice": db.grant("alice", epsilon=1.0), "owner": db.catalog.add_owner_token()}
    db.close()
    running = Server(path).start()
    try:
        yield running.url, tokens
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        expect.set_options(timeout=15_000)
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def open_page(browser: Browser, url: str) -> tuple[Page, list[str]]:
    """The page in a fresh tab, and the list its uncaught script errors go to (a test ends asserting none)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url + "/")
    return page, errors


def sign_in(page: Page, token: str) -> None:
    page.get_by_test_id("token").fill(token)
    page.get_by_test_id("sign-in").click()


def run(page: Page, sql: str) -> None:
    page.get_by_test_id("sql").fill(sql)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("run")).to_be_enabled()  # the request has finished


def test_analyst_and_owner_in_a_real_browser(server: tuple[str, dict[str, str]], browser: Browser) -> None:
    url, tokens = server
    page, errors = open_page(browser, url)

    # A wrong token is turned away with the server's message.
    sign_in(page, "not-a-token")
    expect(page.get_by_test_id("message-code")).to_have_text("unauthorized")
    expect(page.get_by_test_id("signin-form")).to_be_visible()

    # Sign in as alice: her tables, a prefilled example, the full budget.
    sign_in(page, tokens["alice"])
    expect(page.get_by_test_id("who-name")).to_have_text("alice")
    expect(page.get_by_test_id("tables")).to_contain_text("people")
    expect(page.get_by_test_id("tables")).to_contain_text("0 to 100")  # age's public bounds
    expect(page.get_by_test_id("sql")).to_have_value(re.compile(r"^DP-SELECT 0\.1 .* FROM people"))
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("1")

    # Explain is free.
    page.get_by_test_id("sql").fill(QUERY)
    page.get_by_test_id("explain").click()
    expect(page.get_by_test_id("explain-cost")).to_contain_text("ε 0.4")
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("1")

    # Run: the answer as a table with intervals, the chart with two bars and error bars, the budget drops.
    run(page, QUERY)
    expect(page.get_by_test_id("result-row")).to_have_count(2)
    expect(page.get_by_test_id("result-table")).to_contain_text("F")
    expect(page.get_by_test_id("ci")).to_have_count(2)
    chart = page.get_by_test_id("chart-svg")
    expect(chart.get_by_test_id("chart-bar")).to_have_count(2)
    expect(chart.get_by_test_id("chart-errorbar")).to_have_count(2)
    expect(chart.locator("title").first).to_contain_text("COUNT(*) by sex")
    assert chart.get_attribute("role") == "img"
    expect(page.get_by_test_id("epsilon-spent")).to_have_text("ε 0.4")
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("0.6")
    expect(page.get_by_test_id("budget-meter")).to_have_attribute("value", "0.6")
    expect(page.get_by_test_id("history").get_by_test_id("log-row")).to_have_count(1)
    expect(page.get_by_test_id("message")).to_be_hidden()
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    # The same query again is the same answer, from the cache, at no cost.
    run(page, QUERY)
    expect(page.get_by_test_id("result-cost")).to_contain_text("at no cost")
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("0.6")

    run(page, "DP-SELECT 0.4 sex, AVG(age) FROM people GROUP BY sex")
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("0.2")
    expect(page.get_by_test_id("chart-svg").get_by_test_id("chart-bar")).to_have_count(2)

    # The next is refused: the server's message in the alert box, the budget unchanged.
    run(page, "DP-SELECT 0.4 COUNT(*) FROM people")
    message = page.get_by_test_id("message")
    expect(message).to_be_visible()
    expect(message).to_have_attribute("role", "alert")
    expect(message.get_by_test_id("message-code")).to_have_text("budget_exhausted")
    expect(message).to_contain_text("left")
    expect(page.get_by_test_id("result")).to_be_hidden()
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text("0.2")
    history = page.get_by_test_id("history")
    expect(history.locator("[data-outcome=refused]")).to_have_count(1)
    page.screenshot(path="/tmp/privdb-page-refused.png", full_page=True)

    # Server text is shown as text, never as markup.
    run(page, "DP-SELECT 0.1 COUNT(*) FROM <b id=injected>x</b>")
    expect(message.get_by_test_id("message-code")).to_have_text("parse_error")
    expect(message).to_contain_text("<b id=injected>")
    assert page.locator("#injected").count() == 0

    # Sign out, then in as the owner: alice's spend, the log of everyone.
    page.get_by_test_id("sign-out").click()
    expect(page.get_by_test_id("signin-form")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    sign_in(page, tokens["owner"])
    alice = page.locator("[data-testid=analyst-row][data-name=alice]")
    expect(alice.get_by_test_id("analyst-spent")).to_have_text("0.8")
    log = page.get_by_test_id("log")
    expect(log.locator("[data-outcome=answered]")).to_have_count(2)
    expect(log).to_contain_text("budget_exhausted")

    # The owner creates an analyst (token shown once) and revokes them.
    page.get_by_test_id("grant-name").fill("bob")
    page.get_by_test_id("grant-epsilon").fill("2")
    page.get_by_test_id("grant").click()
    expect(page.get_by_test_id("new-token-value")).to_have_text(re.compile(r"\S{20,}"))
    bob = page.locator("[data-testid=analyst-row][data-name=bob]")
    expect(bob).to_contain_text("active")
    page.once("dialog", lambda dialog: dialog.accept())
    bob.get_by_test_id("revoke").click()
    expect(bob).to_contain_text("revoked")
    page.screenshot(path="/tmp/privdb-page-owner.png", full_page=True)

    assert errors == []
    page.close()


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """A server whose log holds 2,600 refusals of alice's (issue 15: the owner's page was 13,000 px tall)."""
    path = tmp_path_factory.mktemp("busydb")
    with Database(path) as db:
        db.backend.load_frame("people", generate(2000))
        db.set_metadata("people", METADATA)
        tokens = {"alice": db.grant("alice", epsilon=20.0), "owner": db.catalog.add_owner_token()}
        for i in range(2600):
            db.catalog.log_refusal("alice", f"DP-SELECT {i} COUNT(*) FROM nowhere", "unknown_table")
    running = Server(path).start()
    try:
        yield running, tokens
    finally:
        running.stop()


def test_answers_charts_csv_and_the_paged_log(busy: tuple[Server, dict[str, str]], browser: Browser) -> None:
    server, tokens = busy
    page, errors = open_page(browser, server.url)
    sign_in(page, tokens["alice"])
    expect(page.get_by_test_id("who-name")).to_have_text("alice")
    # her history pages too: 50 rows of 2,600
    expect(page.get_by_test_id("history-pager").get_by_test_id("page-range")).to_have_text("1–50 of 2,600")
    expect(page.get_by_test_id("history").get_by_test_id("log-row")).to_have_count(50)

    # One row of several statistics: no chart pretending MEDIAN is an axis (the table shows them all).
    run(page, "DP-SELECT 1 MEDIAN(age) AS median_age, CORR(age, income) AS r FROM people")
    expect(page.get_by_test_id("result-row")).to_have_count(1)
    expect(page.get_by_test_id("chart")).to_be_hidden()
    assert page.get_by_test_id("chart-svg").count() == 0
    expect(page.get_by_test_id("history-pager").get_by_test_id("page-range")).to_have_text("1–50 of 2,601")

    # A grouped answer is charted by its keys; the CSV holds what `privdb query --format csv` prints.
    with page.expect_response("**/v1/query") as answered:
        run(page, "DP-SELECT 1 sex, COUNT(*) AS n, AVG(age) AS mean_age FROM people GROUP BY sex")
    chart = page.get_by_test_id("chart-svg")
    expect(chart.get_by_test_id("chart-bar")).to_have_count(2)
    expect(chart.locator("title").first).to_contain_text("n by sex")
    ticks = chart.locator(".grid text").all_text_contents()
    assert ticks and all(t != "-0" and not t.startswith("-0.") for t in ticks), ticks
    with page.expect_download() as downloaded:
        page.get_by_test_id("download-csv").click()
    download = downloaded.value
    assert download.suggested_filename == "privdb-answer.csv"
    got = Path(download.path()).read_text(encoding="utf-8")
    cli = Result.from_dict(answered.value.json()).to_csv()
    assert got.splitlines()[0] == "sex,n,n_ci95_low,n_ci95_high,mean_age,mean_age_ci95_low,mean_age_ci95_high"
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(got)), pd.read_csv(io.StringIO(cli)))

    # Bins in key order whatever order the rows come in (issue 27: an age histogram drawn by count).
    run(page, "DP-SELECT 1 sex, COUNT(*) AS n FROM people GROUP BY sex ORDER BY sex DESC")
    expect(page.get_by_test_id("result-row").first).to_contain_text("M")
    bars = page.get_by_test_id("chart-svg").get_by_test_id("chart-bar").locator("title").all_text_contents()
    assert [b.split(":")[0] for b in bars] == ["F", "M"], bars
    keys = [[30], [4], [None], ["b10"], ["b9"], [4.5]]
    ordered = page.evaluate("ks => ks.sort(privdbPage.byKey)", keys)
    assert ordered == [[4], [4.5], [30], ["b9"], ["b10"], [None]], ordered

    # The axis never reads "-0": ticks are whole multiples of the step (a running sum drifted below zero).
    helpers = "({lo, hi}) => privdbPage.niceTicks(lo, hi, 5).map(privdbPage.fmt)"
    for lo, hi in ((-0.35, 0.25), (-0.7, 0.3), (-0.25, 0.4), (-0.0, 3.0)):
        shown = page.evaluate(helpers, {"lo": lo, "hi": hi})
        assert "0" in shown and "-0" not in shown, (lo, hi, shown)
    assert page.evaluate("privdbPage.fmt(-1e-17)") == "0"

    # Signing out says so; signing in again clears it.
    page.get_by_test_id("sign-out").click()
    expect(page.get_by_test_id("status")).to_have_text("Signed out.")
    sign_in(page, tokens["owner"])
    expect(page.get_by_test_id("analysts")).to_contain_text("alice")
    expect(page.get_by_test_id("status")).to_have_text("")

    # The owner's log: 50 rows a page, newest first, and the page stays short after 2,600 queries.
    pager = page.get_by_test_id("log-pager")
    expect(pager.get_by_test_id("page-range")).to_have_text("1–50 of 2,603")
    log = page.get_by_test_id("log")
    expect(log.get_by_test_id("log-row")).to_have_count(50)
    expect(log.get_by_test_id("log-row").first).to_contain_text("GROUP BY sex")
    expect(pager.get_by_test_id("newer")).to_be_disabled()
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 5000, height
    pager.get_by_test_id("older").click()
    expect(pager.get_by_test_id("page-range")).to_have_text("51–100 of 2,603")
    first = log.get_by_test_id("log-row").first  # page 1 held the 3 answers and refusals 2599…2553
    expect(first).to_contain_text("DP-SELECT 2552 COUNT(*) FROM nowhere")
    expect(pager.get_by_test_id("newer")).to_be_enabled()
    page.screenshot(path="/tmp/privdb-page-owner-log.png", full_page=True)
    assert errors == []
    page.close()


def test_explain_states_each_output_columns_accuracy(
    server: tuple[str, dict[str, str]], browser: Browser
) -> None:
    """The explain panel: one row per output column with ε share and ± in the answer's units (an average's at
    public group sizes, a median's as a note), and the engine SQL out of sight."""
    url, tokens = server
    page, errors = open_page(browser, url)
    sign_in(page, tokens["alice"])
    expect(page.get_by_test_id("who-name")).to_have_text("alice")
    before = page.get_by_test_id("epsilon-remaining").inner_text()
    page.get_by_test_id("sql").fill(
        "DP-SELECT 0.3 sex, AVG(income), MEDIAN(age), COUNT(*) FROM people GROUP BY sex"
    )
    page.get_by_test_id("explain").click()
    panel = page.locator("#explain-body")
    expect(panel.locator("tbody tr")).to_have_count(4)
    expect(panel.locator("tbody tr").nth(0)).to_contain_text("exact")
    expect(panel.locator("tbody tr").nth(1)).to_contain_text("at n = 1,000")
    expect(panel.locator("tbody tr").nth(2)).to_contain_text("exponential")
    # a third of the ε left after the truncation estimate's 5 % (people has a privacy unit): 0.095 of 0.3
    expect(panel.locator("tbody tr").nth(3)).to_contain_text("(32 %)")
    expect(panel.locator("tbody tr").nth(3)).to_contain_text("±")
    expect(panel.locator("details pre")).to_be_hidden()
    expect(page.get_by_test_id("epsilon-remaining")).to_have_text(before)  # explaining spent nothing
    assert errors == []


def test_surveys_are_shown_with_their_intervals(server: tuple[str, dict[str, str]], browser: Browser) -> None:
    """A survey declared and filled over the API appears, for an analyst as for the owner, as a table of
    estimates per label and a chart with one bar and one 95% error bar per answer."""
    from privdb.client import RemoteConnection

    url, tokens = server
    with RemoteConnection(url, tokens["owner"]) as owner:
        made = owner.create_survey(
            "transport", "krr", values=["bike", "bus", "car"], epsilon=2.0, open_limit=600
        )
    with RemoteConnection(url, made["collect_token"]) as device:
        device.submit_survey("transport", ["bike"] * 300 + ["bus"] * 200 + ["car"] * 100)
    for who in ("alice", "owner"):
        page, errors = open_page(browser, url)
        sign_in(page, tokens[who])
        surveys = page.get_by_test_id("surveys")
        expect(surveys).to_be_visible()
        expect(surveys).to_contain_text("600 responses")
        expect(surveys).to_contain_text("open: 600 of 600 responses from its collection token")
        expect(surveys.get_by_test_id("survey-row")).to_have_count(3)
        expect(surveys.get_by_test_id("survey-row").nth(0)).to_contain_text("bike")
        chart = surveys.get_by_test_id("survey-chart")
        expect(chart.get_by_test_id("survey-bar")).to_have_count(3)
        expect(chart.get_by_test_id("survey-errorbar")).to_have_count(3)
        # issue 27: bars coloured from the stylesheet (not SVG's default black), labels of a readable size on
        # screen, and the axis's "100 %" tick inside the picture
        fill = chart.get_by_test_id("survey-bar").first.evaluate("e => getComputedStyle(e).fill")
        assert fill not in ("rgb(0, 0, 0)", "black", "none"), fill
        sizes = chart.locator("text").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().height)")
        assert max(sizes) < 24, sizes
        box = chart.evaluate("e => e.getBoundingClientRect().right")
        ticks = chart.locator("text").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().right)")
        assert max(ticks) <= box + 0.5, (ticks, box)
        page.get_by_test_id("sign-out").click()
        expect(surveys).to_be_hidden()
        assert errors == []
        page.close()


def test_the_owner_sees_shared_budgets(server: tuple[str, dict[str, str]], browser: Browser) -> None:
    """Table lifetime budgets and budget groups (issue 16) on the owner's page, with what has been drawn."""
    from privdb.client import RemoteConnection

    url, tokens = server
    with RemoteConnection(url, tokens["owner"]) as owner:
        owner.set_shared_budget(table="people", epsilon=50.0)
        owner.set_shared_budget(group="web_team", epsilon=3.0, renew="30d")
        owner.grant("webby", epsilon=1.0, group="web_team")
    page, errors = open_page(browser, url)
    sign_in(page, tokens["owner"])
    shared = page.get_by_test_id("shared")
    expect(shared.get_by_test_id("shared-row")).to_have_count(2)
    expect(shared).to_contain_text("web_team")
    expect(shared).to_contain_text("webby")
    expect(shared).to_contain_text("/ 50")
    expect(shared).to_contain_text("every 30d")  # a renewing budget says so, with its warning as a title
    expect(shared).to_contain_text("never")
    assert errors == []


def test_the_owner_publishes_marginals_from_the_page(
    server: tuple[str, dict[str, str]], browser: Browser
) -> None:
    """Issue 17 on the owner's page: a histogram release through POST /v1/publish, its cells with intervals
    and a CSV download; a bad column is one message."""
    url, tokens = server
    page, errors = open_page(browser, url)
    sign_in(page, tokens["owner"])
    form = page.get_by_test_id("publish-form")
    form.get_by_test_id("publish-table-name").fill("people")
    form.get_by_test_id("publish-columns").fill("nosuch")
    form.get_by_test_id("publish-submit").click()
    expect(page.get_by_test_id("publish-error")).to_contain_text("no column 'nosuch'")
    form.get_by_test_id("publish-columns").fill("sex; sex, state")
    form.get_by_test_id("publish-epsilon").fill("0.5")
    form.get_by_test_id("publish-submit").click()
    expect(page.get_by_test_id("publish-summary")).to_contain_text("charged to people")
    expect(page.get_by_test_id("publish-table")).to_contain_text("ci95_low")
    assert page.get_by_test_id("publish-row").count() > 2
    assert page.get_by_test_id("publish-download").get_attribute("href", timeout=5000)
    assert errors == []
