"""`DP-SELECT ACCURACY a [CONFIDENCE c] MAX m AVG(…)` (issue 16): accuracy first by noise reduction
(privdb.sql.accuracy.first, docs/proofs/accuracy-first.md). The schedule is public and shown by explain;
answers are within ± a as often as promised; the ledger charges exactly the ex-post ε of the step reached
(MAX reserved, the rest returned); every bad request is refused before reading, free."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import pytest
from scipy.stats import binom
from typer.testing import CliRunner

import privdb
from privdb.cli import app
from privdb.data.census import METADATA, generate
from privdb.database import Database
from privdb.errors import BudgetExhausted, InvalidParameter, PrivdbError
from privdb.sql.accuracy.first import RANGE, RATIO

N = 1500


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("accuracy_first") / "db"
    with Database(path) as database:
        database.backend.load_frame("people", generate(N, seed=11))
        database.set_metadata("people", METADATA)
        database.grant("alice", epsilon=2000)
        database.grant("bob", epsilon=1)
    return path


def test_explain_shows_the_public_schedule_and_the_worst_case(db: Path) -> None:
    plan = privdb.connect(db).explain("DP-SELECT ACCURACY 1 MAX 2 AVG(age) FROM people")
    first = plan["accuracy_first"]
    schedule = first["schedule"]
    assert plan["epsilon"] == 2 and first["max_epsilon"] == first["worst_case_epsilon"] == 2
    assert schedule[0] == pytest.approx(2 / RANGE) and schedule[-1] == 2
    assert all(1 < b / a <= RATIO * (1 + 1e-5) for a, b in itertools.pairwise(schedule))
    assert first["steps"] == len(schedule) == 11
    assert first["check_level_per_step"] == pytest.approx(1 - 0.05 / 11)
    assert plan["accuracy_request"] == {"half_width": 1, "confidence": 0.95, "max_epsilon": 2}
    # a count in the query sets a public floor: the first step is where the count could meet ± 30
    mixed = privdb.connect(db).explain("DP-SELECT ACCURACY 30 MAX 2 AVG(age), COUNT(*) FROM people")
    count_alone = privdb.connect(db).explain("DP-SELECT ACCURACY 30 COUNT(*), COUNT(age) FROM people")
    assert mixed["accuracy_first"]["schedule"][0] == pytest.approx(count_alone["epsilon"])


def test_answers_are_within_the_accuracy_as_often_as_promised_and_charged_ex_post(db: Path) -> None:
    """300 answers of ACCURACY 1 MAX 2 for AVG(age) (each a different WHERE with the same truth): at least
    binom.ppf(1e-6, 300, 0.95) within ± 1 of the truth (false failure ≤ 1e-6); each charged exactly the ε
    of the step it stopped at, in the answer and in the ledger, and the budget holds exactly their sum."""
    truth = float(generate(N, seed=11)["age"].mean())
    alice = privdb.connect(db, analyst="alice")
    before = Fraction(repr(alice.budget()["epsilon_spent"]))
    runs, inside, charged = 300, 0, Fraction(0)
    steps_seen = set()
    for i in range(runs):
        answer = alice.sql(f"DP-SELECT ACCURACY 1 MAX 2 AVG(age) FROM people WHERE age > -{i + 1}")
        facts = answer.to_dict()["accuracy_first"]
        assert answer.to_dict()["accuracy_met"] is True
        k = facts["steps_taken"]
        steps_seen.add(k)
        assert answer.epsilon_spent == facts["schedule"][k - 1] == facts["epsilon_ex_post"]
        charged += Fraction(repr(facts["schedule"][k - 1]))
        low, high = answer.accuracy[0]["ci95"]
        assert low <= answer.rows[0][0] <= high
        inside += abs(answer.rows[0][0] - truth) <= 1
    assert inside >= binom.ppf(1e-6, runs, 0.95)
    assert max(steps_seen) < 11  # it stopped before MAX: the ex-post saving is real
    spends = privdb.connect(db, analyst="alice").budget()
    assert Fraction(repr(spends["epsilon_spent"])) - before == pytest.approx(charged, abs=1e-9)
    with Database(db) as database:
        log = [s for s in database.ledger.spends("alice", database.name) if "WHERE age > -" in s.note]
    assert sum(s.epsilon for s in log) == charged  # exact: the ledger holds the schedule's rationals
    assert all(s.state == "committed" for s in log)


def test_a_lower_confidence_per_group_is_kept_too(db: Path) -> None:
    """CONFIDENCE 0.8 with GROUP BY sex: in 300 answers each group's AVG(age) is within ± 1.5 at least
    binom.ppf(1e-6/2, 300, 0.8) times (false failure ≤ 1e-6 over both groups)."""
    people = generate(N, seed=11)
    truth = people.groupby("sex")["age"].mean().to_dict()
    alice = privdb.connect(db, analyst="alice")
    runs = 300
    inside = {"F": 0, "M": 0}
    for i in range(runs):
        answer = alice.sql(
            f"DP-SELECT ACCURACY 1.5 CONFIDENCE 0.8 MAX 4 sex, AVG(age) FROM people WHERE age > -{i + 1} "
            "GROUP BY sex"
        )
        assert answer.to_dict()["accuracy_met"] is True
        assert answer.to_dict()["accuracy_first"]["check_level_per_step"] == pytest.approx(1 - 0.2 / 11)
        for sex, value in answer.rows:
            inside[sex] += abs(value - truth[sex]) <= 1.5
    assert min(inside.values()) >= binom.ppf(1e-6 / 2, runs, 0.8)


def test_an_accuracy_never_met_charges_max_and_says_so(db: Path) -> None:
    alice = privdb.connect(db, analyst="alice")
    answer = alice.sql("DP-SELECT ACCURACY 0.001 MAX 0.5 sex, AVG(age), STDDEV(age) FROM people GROUP BY sex")
    data = answer.to_dict()
    assert data["accuracy_met"] is False
    assert data["accuracy_first"]["steps_taken"] == len(data["accuracy_first"]["schedule"])
    assert answer.epsilon_spent == 0.5 and [r[0] for r in answer.rows] == ["F", "M"]
    shown = CliRunner().invoke(
        app,
        [
            "query",
            "--db",
            str(db),
            "--analyst",
            "alice",
            "DP-SELECT ACCURACY 0.001 MAX 0.5 AVG(age) FROM people",
        ],
    )
    assert shown.exit_code == 0 and "accuracy NOT met even at MAX" in " ".join(shown.stdout.split())


def test_the_cli_explains_the_schedule(db: Path) -> None:
    shown = CliRunner().invoke(
        app, ["explain", "--db", str(db), "DP-SELECT ACCURACY 1 MAX 2 AVG(age) FROM people"]
    )
    text = " ".join(shown.stdout.split())
    assert shown.exit_code == 0 and "accuracy first ε steps 0.0625, 0.0883883," in text and "MAX = 2" in text


def test_variances_and_groups_stop_when_every_cell_meets_it(db: Path) -> None:
    alice = privdb.connect(db, analyst="alice")
    answer = alice.sql("DP-SELECT ACCURACY 200 MAX 16 sex, AVG(age), VAR_POP(age) FROM people GROUP BY sex")
    data = answer.to_dict()
    k = data["accuracy_first"]["steps_taken"]
    assert data["accuracy_met"] is True and answer.epsilon_spent == data["accuracy_first"]["schedule"][k - 1]
    for entry in answer.accuracy:
        for (low, high), row in zip(entry["ci95_rows"], answer.rows, strict=True):
            assert high - low <= 2 * 200 + 1e-9, (entry["column"], row)


def test_the_answer_is_stored_under_its_accuracy_request_not_under_its_max(db: Path) -> None:
    alice = privdb.connect(db, analyst="alice")
    first = alice.sql("DP-SELECT ACCURACY 2 MAX 1.5 AVG(age) FROM people WHERE age < 1000")
    again = alice.sql("DP-SELECT ACCURACY 2 MAX 1.5 AVG(age) FROM people WHERE age < 1000")
    assert again.cached and again.rows == first.rows and again.epsilon_spent == 0
    assert again.to_dict()["accuracy_first"] == first.to_dict()["accuracy_first"]
    plain = alice.sql("DP-SELECT 1.5 AVG(age) FROM people WHERE age < 1000")
    assert not plain.cached and plain.epsilon_spent == 1.5


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("DP-SELECT ACCURACY 1 AVG(age) FROM people", InvalidParameter, "add MAX"),
        ("DP-SELECT ACCURACY -1 MAX 1 AVG(age) FROM people", InvalidParameter, "positive"),
        ("DP-SELECT ACCURACY 0 MAX 1 AVG(age) FROM people", InvalidParameter, "positive"),
        ("DP-SELECT ACCURACY 1 CONFIDENCE 1.5 MAX 1 AVG(age) FROM people", InvalidParameter, "CONFIDENCE"),
        ("DP-SELECT ACCURACY 1 CONFIDENCE 0 MAX 1 AVG(age) FROM people", InvalidParameter, "CONFIDENCE"),
        ("DP-SELECT ACCURACY 1 MAX 0 AVG(age) FROM people", InvalidParameter, "MAX must be"),
        ("DP-SELECT ACCURACY 1 MAX -2 AVG(age) FROM people", InvalidParameter, "MAX must be"),
        ("DP-SELECT ACCURACY 1 MAX 2 AVG(age) FROM people", BudgetExhausted, "this needs ε=2"),
        (
            "DP-SELECT ACCURACY 1 MAX 0.5 AVG(age), COUNT(*) FROM people",
            InvalidParameter,
            "more than ε = 0.5 \\(your MAX\\)",
        ),
        ("DP-SELECT ACCURACY 1 MAX 1 AVG(age), MEDIAN(age) FROM people", InvalidParameter, "ranks"),
        ("DP-SELECT ACCURACY 1 MAX 1 CORR(age, income) FROM people", InvalidParameter, "simulated"),
    ],
)
def test_bad_requests_are_refused_and_spend_nothing(
    db: Path, sql: str, error: type[PrivdbError], message: str
) -> None:
    bob = privdb.connect(db, analyst="bob")  # a budget of 1
    before = bob.budget()
    with pytest.raises(error, match=message):
        bob.sql(sql)
    assert bob.budget() == before


def test_the_first_step_alone_when_max_is_what_the_counts_need(db: Path) -> None:
    """MAX at the counts' floor: a schedule of one step, the plain ε-query's cost."""
    floor = privdb.connect(db).explain("DP-SELECT ACCURACY 30 COUNT(*), COUNT(age) FROM people")["epsilon"]
    plan = privdb.connect(db).explain(f"DP-SELECT ACCURACY 30 MAX {floor!r} AVG(age), COUNT(*) FROM people")
    assert plan["accuracy_first"]["schedule"] == [floor]
    assert math.isclose(plan["epsilon"], floor)
