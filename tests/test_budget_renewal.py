"""Renewal windows for shared budgets (issue 16): a table's or group's budget that refills every period, the
warning that comes with it, spends counted in the window they were reserved in, and every bad period refused
with a clear message before anything changes. The clock is set by the tests (time.time), never waited for."""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

import privdb
from privdb.accounting.composition import GaussianCost
from privdb.accounting.ledger import Ledger
from privdb.accounting.renewal import describe_period, parse_period, window_start
from privdb.accounting.zcdp import epsilon_from_rho, rho_from_epsilon
from privdb.cli import app
from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter

DAY = 86_400.0
runner = CliRunner()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1_800_000_000.0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def _drawn(ledger: Ledger, name: str) -> Fraction:
    return next(b.epsilon_spent for _, b in ledger.caps("d") if b.analyst == name)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 30 * DAY), ("12h", 43_200.0), ("1w", 7 * DAY), ("90m", 5_400.0),
                          (" 2D ", 2 * DAY), (3600, 3600.0), (None, None), ("never", None), ("", None)],
)  # fmt: skip
def test_periods_read_as_people_write_them(text: str | int | None, seconds: float | None) -> None:
    assert parse_period(text) == seconds
    assert describe_period(seconds) == ("never" if seconds is None else describe_period(seconds))


@pytest.mark.parametrize("text", ["monthly", "0d", "-1d", "1y", "0.1s", True, float("inf")])
def test_bad_periods_are_refused_saying_what_to_write(text: object) -> None:
    with pytest.raises(InvalidParameter, match=r"renew"):
        parse_period(text)  # type: ignore[arg-type]


def test_windows_are_aligned_to_when_the_budget_was_set() -> None:
    assert window_start(100.0, 10.0, 99.0) == 100.0
    assert window_start(100.0, 10.0, 109.9) == 100.0
    assert window_start(100.0, 10.0, 135.0) == 130.0
    assert describe_period(30 * DAY) == "30d" and describe_period(7 * DAY) == "1w"


def test_a_renewing_cap_refills_each_window_and_only_then(ledger_target: str, clock: list[float]) -> None:
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("a", "d", epsilon=10)
        ledger.set_cap("group", "team", "d", epsilon=1, renew=DAY)
        draws = [("group", "team")]
        ledger.spend("a", "d", epsilon=Fraction(8, 10), draws=draws)
        with pytest.raises(BudgetExhausted, match="group 'team'"):
            ledger.spend("a", "d", epsilon=Fraction(3, 10), draws=draws)
        clock[0] += DAY - 1  # still the first window
        with pytest.raises(BudgetExhausted):
            ledger.spend("a", "d", epsilon=Fraction(3, 10), draws=draws)
        clock[0] += 1  # the second window: refilled
        ledger.spend("a", "d", epsilon=Fraction(9, 10), draws=draws)
        assert _drawn(ledger, "team") == Fraction(9, 10)
        # the analyst's own budget never refills: it has paid 1.7 in all
        assert ledger.budget("a", "d").epsilon_spent == Fraction(17, 10)
        assert ledger.renewals("d")[("group", "team")] == (DAY, 1_800_000_000.0 + DAY)


def test_a_reservation_returns_only_to_the_window_it_was_drawn_in(
    ledger_target: str, clock: list[float]
) -> None:
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("a", "d", epsilon=10)
        ledger.set_cap("table", "people", "d", epsilon=1, renew=DAY)
        draws = [("table", "people")]
        old = ledger.reserve("a", "d", epsilon=Fraction(1, 2), draws=draws)
        clock[0] += 3 * DAY  # two windows later
        new = ledger.reserve("a", "d", epsilon=Fraction(1, 5), draws=draws)
        assert _drawn(ledger, "people") == Fraction(1, 5)  # the old reservation's window is over
        old.release()
        assert _drawn(ledger, "people") == Fraction(1, 5)  # nothing returned to this window
        new.release()
        assert _drawn(ledger, "people") == 0
        assert ledger.budget("a", "d").epsilon_spent == 0  # the analyst got both back


def test_a_renewing_window_composes_its_own_gaussian_answers(ledger_target: str, clock: list[float]) -> None:
    """Each window's Gaussian answers are charged by that window's own zCDP sums: the answers of earlier
    windows (and the analyst's answers elsewhere) discount nothing in it. Before issue 25 a window charged
    the analyst's marginal: 0.849 for answers whose conversion was 1.72."""
    cost = GaussianCost(rho_from_epsilon(1.0, 1e-6), Fraction(1, 10**6), Fraction(1))
    draws = [("table", "people")]
    with Ledger(ledger_target) as ledger:
        ledger.set_budget("a", "d", epsilon=100, delta=1e-2)
        ledger.set_cap("table", "people", "d", epsilon=2, delta=1e-3, renew=DAY)
        for window in range(3):
            answered = 0
            while answered < 50:
                try:
                    ledger.spend("a", "d", epsilon=1, delta=1e-6, gaussian=cost, draws=draws)
                except BudgetExhausted:
                    break
                answered += 1
                if answered == 1:  # the window's first answer is charged in full
                    assert float(_drawn(ledger, "people")) == pytest.approx(1.0, abs=1e-11)
            drawn = _drawn(ledger, "people")
            assert epsilon_from_rho(answered * cost.rho, answered * 1e-6) <= float(drawn) <= 2, window
            assert answered == 4, window  # 1 + 0.40 + 0.31 + 0.26 = 1.97; a fifth would pass 2
            clock[0] += DAY
        # the analyst's own budget composes all twelve answers in one family: far less than 3 × 1.97
        assert float(ledger.budget("a", "d").epsilon_spent) < 4


def test_setting_a_cap_again_keeps_or_restarts_its_windows(ledger_target: str, clock: list[float]) -> None:
    with Ledger(ledger_target) as ledger:
        ledger.set_cap("group", "team", "d", epsilon=1, renew=DAY)
        clock[0] += 1.5 * DAY
        ledger.set_cap("group", "team", "d", epsilon=2, renew=DAY)  # same period: same windows
        assert ledger.renewals("d")[("group", "team")][1] == 1_800_000_000.0 + DAY
        ledger.set_cap("group", "team", "d", epsilon=2, renew=7 * DAY)  # a new period starts now
        assert ledger.renewals("d")[("group", "team")] == (7 * DAY, clock[0])
        ledger.set_cap("group", "team", "d", epsilon=2)  # no period: a lifetime budget again
        assert ledger.renewals("d") == {}


def test_the_listing_shows_the_window_its_figures_were_counted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window of each shared budget is found once, where its drawn figure is counted: a window that
    ends while the listing is made cannot pair the old window's figure with the new window's dates."""
    start = 1_800_000_000.0
    times = [start]
    monkeypatch.setattr(time, "time", lambda: times.pop(0) if len(times) > 1 else times[0])
    with Database(tmp_path / "db") as database:
        database.set_shared_budget(group="team", epsilon=1, renew="1d")
        database.ledger.set_budget("a", database.name, epsilon=10)
        database.ledger.spend("a", database.name, epsilon=Fraction(8, 10), draws=[("group", "team")])
        times[:] = [start + DAY - 1, start + DAY]  # the first window's last second, then the second window
        (team,) = database.shared_budgets()
    assert (team["epsilon_spent"], team["window_start"], team["refills_at"]) == (0.8, start, start + DAY)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    with Database(tmp_path / "db") as database:
        database.backend.load_frame("people", generate(300, seed=5))
        database.set_metadata("people", METADATA)
        database.grant("alice", epsilon=5)
    return tmp_path / "db"


def test_queries_draw_on_a_renewing_table_budget(db: Path, clock: list[float]) -> None:
    with privdb.connect(db) as owner:
        shown = owner.set_shared_budget(table="people", epsilon=0.5, renew="1d")
    assert shown["renew"] == "1d" and shown["refills_at"] == clock[0] + DAY and "k times" in shown["warning"]
    alice = privdb.connect(db, analyst="alice")
    alice.sql("DP-SELECT 0.5 COUNT(*) FROM people")
    with pytest.raises(BudgetExhausted, match="table 'people'"):
        alice.sql("DP-SELECT 0.1 COUNT(*) FROM people WHERE age > 30")
    clock[0] += DAY
    assert alice.sql("DP-SELECT 0.1 COUNT(*) FROM people WHERE age > 30").epsilon_spent == pytest.approx(0.1)


def test_the_cli_warns_when_a_budget_renews_and_lists_the_refill(db: Path) -> None:
    set_ = runner.invoke(
        app, ["budgets", "--db", str(db), "--table", "people", "--epsilon", "2", "--renew", "30d"]
    )
    assert set_.exit_code == 0, set_.stderr
    assert "warning: a renewing budget bounds each period's answers only" in set_.stderr
    assert "every 30d" in set_.stdout
    bad = runner.invoke(
        app, ["budgets", "--db", str(db), "--table", "people", "--epsilon", "2", "--renew", "monthly"]
    )
    assert bad.exit_code == 2 and "renew 'monthly' is not a period" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    lonely = runner.invoke(app, ["budgets", "--db", str(db), "--renew", "1d"])
    assert lonely.exit_code == 2 and "--table T or --group G" in lonely.stderr


def test_the_metadata_file_declares_a_renewal(tmp_path: Path) -> None:
    csv = Path(__file__).resolve().parents[1] / "examples" / "people.csv"
    meta = tmp_path / "m.yaml"
    meta.write_text(
        "budgets:\n  groups: {team_a: {epsilon: 0.5, renew: 1w}}\n"
        "tables:\n  people:\n    columns:\n      age: {type: int, lower: 0, upper: 100}\n"
    )
    with Database(tmp_path / "db") as database:
        database.load("people", csv, meta)
        (team,) = database.shared_budgets()
    assert team["renew"] == "1w"
    meta.write_text(
        "budgets: {groups: {team_a: {epsilon: 1, renew: yearly}}}\ntables: {people: {columns: {}}}\n"
    )
    with Database(tmp_path / "db2") as database:
        with pytest.raises(InvalidParameter, match="renew 'yearly' is not a period"):
            database.load("people", csv, meta)
        assert database.table_names() == []  # refused before the table was loaded
