"""Personalised privacy (issue 16): ``epsilon_column`` / ``epsilon_policy`` metadata, the Sample mechanism's
rendering (each unit kept with π = (e^ε − 1)/(e^t − 1), t the query's ε), what explain, the answer and the
ledger show, and the refusals (all free). The statistical audits per class are in
tests/adversarial/test_personal_audit.py; the proof in docs/proofs/personalised.md."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from privdb.audit import clopper_pearson
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.cli import app
from privdb.database import Database
from privdb.errors import InvalidParameter, PrivdbError, UnknownColumn, UnsupportedQuery
from privdb.sql import engine
from privdb.sql.plan.personal import inclusion
from privdb.sql.plan.types import Plan
from privdb.sql.run.targets import histogram_queries

STRICT, LIBERAL = 0.1, 1.0
PEOPLE: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 3,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "age": {"type": "int", "lower": 0, "upper": 100},
        "eps": {"type": "float", "lower": STRICT, "upper": 2.0},
        "consent": {"type": "category", "values": ["full", "restricted", "none"]},
    },
    "epsilon_column": "eps",
}
POLICY = {"column": "consent", "values": {"full": LIBERAL, "restricted": STRICT}, "default": 0.01}
ROWS: dict[str, Any] = {
    "columns": {k: v for k, v in PEOPLE["columns"].items() if k != "pid"},
    "epsilon_policy": POLICY,
}
ENGINE_TYPES = {"pid": "int", "age": "int", "eps": "float", "consent": "text", "region": "int"}


def _people() -> pd.DataFrame:
    """Units 1–10 liberal (ε 1, one row each); unit 11 strict by its smallest row (0.1 and 2.0); unit 12
    with NaN, NULL and out-of-bounds ε (each counts as the smallest); unit 13 above t (ε 2)."""
    rows = [(pid, 40, 1.0, "full") for pid in range(1, 11)]
    rows += [(11, 50, 0.1, "restricted"), (11, 50, 2.0, "restricted")]
    rows += [(12, 60, math.nan, "none"), (12, 60, None, None), (12, 60, 7.5, "none")]
    rows += [(13, 70, 2.0, "full")]
    return pd.DataFrame(rows, columns=["pid", "age", "eps", "consent"])


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    made = Database(tmp_path / "db")
    frame = _people()
    made.backend.load_frame("people", frame)
    made.set_metadata("people", PEOPLE)
    made.backend.load_frame("rows", frame.drop(columns="pid"))
    made.set_metadata("rows", ROWS)
    made.backend.load_frame("regions", pd.DataFrame({"code": [40, 50], "name": ["a", "b"]}))
    made.set_metadata("regions", {"public": True, "columns": {"code": {"type": "int"}}})
    made.backend.load_frame("visits", pd.DataFrame({"pid": [1, 2], "cost": [3.0, 4.0]}))
    made.set_metadata("visits", {"privacy_unit": "pid"})
    made.grant("alice", epsilon=10, delta=1e-6)
    yield made
    made.close()


def _meta(spec: dict[str, Any]) -> Any:
    return metadata_from_dict("people", spec, ENGINE_TYPES)


# --- metadata ------------------------------------------------------------------------------------------


def test_the_metadata_gives_each_class_its_epsilon_and_survives_a_round_trip() -> None:
    meta = _meta(PEOPLE)
    assert meta.personal is not None
    assert (meta.personal.column, meta.personal.lower, meta.personal.upper) == ("eps", STRICT, 2.0)
    assert meta.columns["eps"].identifier  # never released
    assert _meta(meta.to_dict()) == meta
    policy = _meta({**ROWS, "columns": dict(ROWS["columns"])})
    assert policy.personal is not None
    assert policy.personal.policy == (("full", LIBERAL), ("restricted", STRICT))
    assert (policy.personal.lower, policy.personal.upper, policy.personal.default) == (0.01, LIBERAL, 0.01)
    assert _meta(policy.to_dict()) == policy
    no_default = _meta({"epsilon_policy": {"column": "consent", "values": {"a": 0.5, "b": 0.2}}})
    assert no_default.personal is not None and no_default.personal.default == 0.2  # the strictest


BAD: list[tuple[dict[str, Any], type[PrivdbError], str]] = [
    ({"epsilon_column": "epss"}, UnknownColumn, "did you mean 'eps'"),
    ({"epsilon_column": "consent"}, InvalidParameter, "must be a number column with lower and upper"),
    ({"epsilon_column": "age", "columns": {"age": {"type": "int"}}}, InvalidParameter, "lower and upper"),
    (
        {"epsilon_column": "eps", "columns": {"eps": {"type": "float", "lower": 0, "upper": 1}}},
        InvalidParameter,
        "every ε must be positive",
    ),
    (
        {"epsilon_column": "eps", "columns": {"eps": {"type": "float", "lower": -1, "upper": 1}}},
        InvalidParameter,
        "every ε must be positive",
    ),
    ({"epsilon_column": 3}, InvalidParameter, "must name a column"),
    (
        {
            "epsilon_column": "pid",
            "privacy_unit": "pid",
            "columns": {"pid": {"type": "int", "lower": 1, "upper": 9}},
        },
        InvalidParameter,
        "cannot be the privacy unit",
    ),
    ({**PEOPLE, "epsilon_policy": POLICY}, InvalidParameter, "not both"),
    ({**PEOPLE, "neighbouring": "substitute"}, InvalidParameter, "add_remove"),
    ({"public": True, "epsilon_policy": POLICY}, InvalidParameter, "public table"),
    ({"epsilon_policy": "consent"}, InvalidParameter, "must be a mapping like"),
    ({"epsilon_policy": {"column": "consnt", "values": {"a": 1}}}, UnknownColumn, "did you mean 'consent'"),
    ({"epsilon_policy": {"column": "consent"}}, InvalidParameter, "values must map each value"),
    ({"epsilon_policy": {"column": "age", "values": {"a": 1}}}, InvalidParameter, "text or category"),
    ({"epsilon_policy": {"column": "consent", "values": {1: 1}}}, InvalidParameter, "is not text"),
    ({"epsilon_policy": {"column": "consent", "values": {"a": 0}}}, InvalidParameter, "positive number"),
    ({"epsilon_policy": {"column": "consent", "values": {"a": "x"}}}, InvalidParameter, "positive number"),
    (
        {"epsilon_policy": {"column": "consent", "values": {"a": 1}, "default": -1}},
        InvalidParameter,
        "default must be a positive number",
    ),
    ({"epsilon_policy": {"column": "consent", "values": {"a": 1}, "colour": 1}}, InvalidParameter, "mapping"),
]


@pytest.mark.parametrize(("spec", "error", "message"), BAD)
def test_bad_personalised_metadata_is_refused_with_a_clear_message(
    db: Database, spec: dict[str, Any], error: type[PrivdbError], message: str
) -> None:
    columns = {**PEOPLE["columns"], **spec.get("columns", {})}
    full = {"privacy_unit": "pid", **spec, "columns": columns}
    if spec.get("public"):
        full = {"public": True, "columns": {"consent": {"type": "category"}}, **spec}
    with pytest.raises(error, match=re.escape(message)):
        db.set_metadata("people", full)
    assert db.metadata("people").personal == _meta(PEOPLE).personal  # nothing changed
    assert float(db.budget("alice").epsilon_remaining) == 10  # and nothing spent


# --- the sample, rendered exactly ----------------------------------------------------------------------


def _exact(db: Database, query: str, draw: float) -> pd.DataFrame:
    """The engine's frame with every ``random()`` draw fixed at ``draw`` (the noise step not run): a unit is
    kept exactly when its π exceeds ``draw``."""
    plan, sql = engine.prepare(db, query, "alice")
    assert isinstance(plan, Plan)
    assert len(re.findall(r"random\(\)", sql, re.I)) >= 1
    return db.backend.fetch(re.sub(r"random\(\)", repr(draw), sql, flags=re.I))


def test_each_unit_is_kept_with_its_probability_whole_or_not_at_all(db: Database) -> None:
    """``people`` at t = 1: π = 1 for units 1–10 and 13 (ε ≥ t), π(0.1) for unit 11 (its smallest ε) and
    unit 12 (NaN, NULL and 7.5 > upper all count as the smallest). Rows per unit are capped at 3."""
    pi = inclusion(STRICT, 1.0)
    assert pi == pytest.approx(math.expm1(0.1) / math.expm1(1.0))
    query = "DP-SELECT 1 COUNT(*) FROM people"
    assert float(_exact(db, query, pi * (1 - 1e-9)).iloc[0, 0]) == 10 + 2 + 3 + 1  # every unit kept
    assert float(_exact(db, query, pi * (1 + 1e-9)).iloc[0, 0]) == 10 + 1  # units 11 and 12 dropped whole
    assert float(_exact(db, query, 0.999999).iloc[0, 0]) == 11  # π = 1 keeps the rest at any draw
    # at t = 2 unit 13 (ε = 2) is kept always and units of ε 1 with π = (e − 1)/(e² − 1)
    pi_1 = inclusion(LIBERAL, 2.0)
    query_2 = "DP-SELECT 2 COUNT(*) FROM people"
    assert float(_exact(db, query_2, pi_1 * (1 - 1e-9)).iloc[0, 0]) == 11
    assert float(_exact(db, query_2, pi_1 * (1 + 1e-9)).iloc[0, 0]) == 1


def test_a_policy_samples_each_row_by_its_class(db: Database) -> None:
    """``rows`` (no privacy unit: each row a unit), policy full 1, restricted 0.1, other 0.01 (NULL too)."""
    query = "DP-SELECT 1 COUNT(*) FROM rows WHERE age >= 40"
    full = int((_people()["consent"] == "full").sum())
    restricted = int((_people()["consent"] == "restricted").sum())
    assert float(_exact(db, query, inclusion(0.01, 1.0) * (1 - 1e-9)).iloc[0, 0]) == len(_people())
    assert float(_exact(db, query, inclusion(0.01, 1.0) * (1 + 1e-9)).iloc[0, 0]) == full + restricted
    assert float(_exact(db, query, inclusion(STRICT, 1.0) * (1 + 1e-9)).iloc[0, 0]) == full


def test_every_read_of_a_query_samples_the_table(db: Database) -> None:
    """Statistics, order statistics and distinct counts (separate engine reads) all read the sample; a
    per-unit subquery and a join with a public table too."""
    queries = [
        "DP-SELECT 1 COUNT(*), MEDIAN(age), COUNT(DISTINCT age) FROM people",
        "DP-SELECT 1 SUM(n) FROM (SELECT pid, COUNT(*) AS n FROM people GROUP BY pid) AS u",
        "DP-SELECT 1 COUNT(*) FROM people p JOIN regions r ON p.age = r.code",
        "DP-SELECT 1 COUNT(*) FROM people WHERE eps > 0.5",  # the ε column may filter (proof, "The ε column")
    ]
    for query in queries:
        plan, sql = engine.prepare(db, query, "alice")
        assert isinstance(plan, Plan)
        for read in [sql, *histogram_queries(db, plan).values()]:
            if read:
                assert "random() < CASE WHEN" in read and '"eps"' in read, (query, read)


# --- what the analyst and the owner see ----------------------------------------------------------------


def test_explain_shows_the_threshold_and_each_class(db: Database) -> None:
    shown = engine.explain(db, "DP-SELECT 0.5 COUNT(*) FROM rows", "alice")["personalised"]
    assert shown["threshold"] == 0.5 and shown["column"] == "consent"
    assert [(c["class"], c["epsilon"], c["epsilon_lost"]) for c in shown["classes"]] == [
        ("full", 1.0, 0.5), ("restricted", 0.1, 0.1), ("other", 0.01, 0.01)
    ]  # fmt: skip
    assert [c["inclusion"] for c in shown["classes"]] == pytest.approx(
        [1.0, math.expm1(0.1) / math.expm1(0.5), math.expm1(0.01) / math.expm1(0.5)]
    )
    assert float(db.budget("alice").epsilon_remaining) == 10  # explain spends nothing
    assert "personalised" not in engine.explain(db, "DP-SELECT 1 COUNT(*) FROM visits", "alice")


def test_the_answer_and_the_ledger_say_what_each_class_lost(db: Database) -> None:
    result = engine.run(db, "alice", "DP-SELECT 1 COUNT(*), AVG(age) FROM people")
    assert result.epsilon_spent == 1.0  # the analyst pays t
    assert all("personalised" in entry for entry in result.accuracy)
    assert result.extra["personalised"]["threshold"] == 1.0
    lost = {c["class"]: c["epsilon_lost"] for c in result.extra["personalised"]["classes"]}
    assert lost == {"smallest": STRICT, "largest": 1.0}
    note = db.ledger.spends("alice", db.name)[-1].note
    assert note.startswith("DP-SELECT 1 COUNT(*), AVG(age) FROM people")
    assert note.endswith("/* personalised eps, t=1: smallest 0.1, largest 1 */")
    long = f"DP-SELECT 1 COUNT(*) FROM people WHERE age IN ({', '.join(map(str, range(200)))})"
    engine.run(db, "alice", long)
    note = db.ledger.spends("alice", db.name)[-1].note
    assert len(note) <= 500 and note.endswith("smallest 0.1, largest 1 */")  # the losses are never cut
    plain = engine.run(db, "alice", "DP-SELECT 1 COUNT(*) FROM visits")
    assert "personalised" not in plain.extra and "personalised" not in plain.accuracy[0]


REFUSED = [
    ("DP-SELECT 1 eps, COUNT(*) FROM people GROUP BY eps", "never released"),
    ("DP-SELECT 1 SUM(eps) FROM people", "cannot be aggregated"),
    ("DP-SELECT 1 age FROM people", "a record release is not offered"),
    ("DP-SELECT 1 COUNT(*) FROM people p JOIN visits v ON p.pid = v.pid", "joins public tables only"),
    ("DP-SELECT 1 COUNT(*) FROM people a JOIN people b ON a.pid = b.pid", "joins public tables only"),
    ("DP-SELECT 1 consent, COUNT(*) FROM rows GROUP BY consent", "never released"),
]


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_refusals_are_free(db: Database, query: str, message: str) -> None:
    with pytest.raises(UnsupportedQuery, match=re.escape(message)):
        engine.run(db, "alice", query)
    assert float(db.budget("alice").epsilon_remaining) == 10


def test_the_sample_is_drawn_afresh_for_each_answer(db: Database) -> None:
    """Over 400 reads at t = 1 the two strict units (11: 2 rows, 12: 3 rows) are each kept whole at a
    rate whose Clopper–Pearson interval (α = 1e-6) holds π(0.1); every read is one of the four subsets."""

    _, sql = engine.prepare(db, "DP-SELECT 1 COUNT(*) FROM people", "alice")
    counts = np.array([float(db.backend.fetch(sql).iloc[0, 0]) for _ in range(400)])
    assert set(np.unique(counts)) <= {11.0, 13.0, 14.0, 16.0}
    kept_11 = int(np.isin(counts, [13.0, 16.0]).sum())
    kept_12 = int(np.isin(counts, [14.0, 16.0]).sum())
    for kept in (kept_11, kept_12):
        low, high = clopper_pearson(kept, len(counts), 1e-6)
        assert low <= inclusion(STRICT, 1.0) <= high, kept


def test_an_accuracy_request_samples_at_the_epsilon_it_chooses(db: Database) -> None:
    shown = engine.explain(db, "DP-SELECT ACCURACY 10 COUNT(*) FROM people", "alice")
    t = shown["epsilon"]
    assert shown["personalised"]["threshold"] == t
    assert repr(math.expm1(t)) in shown["engine_sql"] or str(math.expm1(t)) in shown["engine_sql"]


def test_the_cli_explain_shows_the_classes(db: Database) -> None:
    path = db.path
    db.close()  # the command opens the database itself
    out = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["explain", "--db", str(path), "DP-SELECT 0.5 COUNT(*) FROM rows"]
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "personalised each person's ε from consent; threshold t = 0.5" in text
    assert "restricted ε 0.1: kept 0.162, loses 0.1" in text


def test_the_ledger_accounts_each_class_over_answers(db: Database) -> None:
    """Accounted per unit class: each answer at t adds min(ε_class, t) to its class, in the reservation's own
    transaction; a refused query adds nothing; the owner reads the totals (API, CLI)."""
    engine.run(db, "alice", "DP-SELECT 1 COUNT(*) FROM people WHERE age > 10")
    engine.run(db, "alice", "DP-SELECT 0.05 COUNT(*) FROM people WHERE age > 20")
    with pytest.raises(PrivdbError):
        engine.run(db, "alice", "DP-SELECT 1 SUM(eps) FROM people")
    lost = {(c["table"], c["class"]): c["epsilon_lost"] for c in db.class_losses()}
    assert lost[("people", "smallest")] == pytest.approx(STRICT + 0.05)
    assert lost[("people", "largest")] == pytest.approx(1.05)
    shown = CliRunner().invoke(app, ["budgets", "--db", str(db.path)])
    assert "smallest" in shown.stdout and "1.05" in shown.stdout  # the per-class table (its title wraps)
