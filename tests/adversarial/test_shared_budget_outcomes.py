"""Shared budgets against pooling analysts (issue 25), through DP-SELECT: a table's lifetime budget holds
against Gaussian answers made nearly free by a large Gaussian answer elsewhere, and a refusal by a shared
budget reads the same whatever another analyst's accuracy-first answers spent (their ex-post ε depends on
their noisy answers, which the refused analyst never paid for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adversarial.neighbours import PEOPLE_META, people
from conftest import seeded
from privdb.accounting.zcdp import epsilon_from_rho
from privdb.database import Database
from privdb.errors import BudgetExhausted
from privdb.sql import engine


def _database(path: Path, seed: int = 11) -> Database:
    db = Database(path)
    db.backend.load_frame("people", people())
    db.set_metadata("people", PEOPLE_META)
    db.backend.load_frame("visits", people(seed=4))
    db.set_metadata("visits", PEOPLE_META)
    db.noise_source = seeded(seed)
    return db


def test_a_large_gaussian_answer_elsewhere_does_not_open_a_table_cap(tmp_path: Path) -> None:
    """ε = 50 on `visits`, then up to 400 Gaussian counts on `people` (capped at ε = 1, δ = 1e-4): the
    answers on `people` together are within the cap by their own zCDP conversion (before: 400 answered,
    ε ≈ 25.7 together, each charged 0 to the cap)."""
    with _database(tmp_path / "db") as db:
        db.set_shared_budget(table="people", epsilon=1, delta=1e-4)
        db.grant("eve", epsilon=1_000, delta=1e-2)
        engine.run(db, "eve", "DP-SELECT 50 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM visits")
        rhos, refusal = [], ""
        for i in range(400):
            query = f"DP-SELECT 0.2 DELTA 1e-7 USING GAUSSIAN COUNT(*) FROM people WHERE age > {i % 100} "
            try:
                result = engine.run(db, "eve", query + f"AND visits >= {i // 100}")
            except BudgetExhausted as refused:
                refusal = refused.message
                break
            rhos.append(result.to_dict()["composition"]["rho"])
            assert result.epsilon_spent < 0.2  # the analyst's own zCDP marginal: less than plain
        assert "table 'people' has too little left" in refusal
        (cap,) = [b for b in db.shared_budgets() if b["name"] == "people"]
        pooled = epsilon_from_rho(sum(rhos), len(rhos) * 1e-7)
        assert pooled <= cap["epsilon_spent"] + 1e-9 and cap["epsilon_spent"] <= 1
        assert 5 <= len(rhos) < 100  # plain composition admits 5


# ex post 0.265165 or 0.375 (… up to 1.5) by its noise: seeds 1 to 6 stop at the first, seed 7 at the second
ACCURATE = "DP-SELECT ACCURACY 20 MAX 1.5 AVG(age) FROM people"


def _refusal(tmp_path: Path, seed: int) -> tuple[float, str]:
    """Bob's accuracy-first answer and Gaussian count on `people` under noise seed ``seed``, then Alice's
    query that the table's budget cannot pay: (Bob's ex-post ε, Alice's refusal message)."""
    with _database(tmp_path / f"db{seed}", seed) as db:
        db.set_shared_budget(table="people", epsilon=2, delta=1e-4)
        db.grant("bob", epsilon=10, delta=1e-3)
        db.grant("alice", epsilon=10, delta=1e-3)
        spent = engine.run(db, "bob", ACCURATE).epsilon_spent
        engine.run(db, "bob", "DP-SELECT 0.3 DELTA 1e-6 USING GAUSSIAN COUNT(*) FROM people")
        with pytest.raises(BudgetExhausted) as refused:
            engine.run(db, "alice", "DP-SELECT 1.5 COUNT(*) FROM people WHERE age > 30")
        assert engine.run(db, "alice", "DP-SELECT 0.1 COUNT(*) FROM people").epsilon_spent == 0.1
        return spent, refused.value.message


def test_a_shared_budget_refusal_names_only_the_callers_figures(tmp_path: Path) -> None:
    seen = {}
    for seed in range(1, 12):
        spent, message = _refusal(tmp_path, seed)
        seen.setdefault(spent, message)
        if len(seen) >= 2:
            break
    assert len(seen) >= 2, seen  # Bob's ex-post ε differed between the worlds
    messages = set(seen.values())
    assert len(messages) == 1, messages  # Alice reads the same refusal in every world
    (message,) = messages
    assert "table 'people'" in message and "ε=1.5" in message and "too little left" in message
    for spent in seen:  # neither Bob's spends nor what is left of the table's budget
        for figure in (spent, spent + 0.3, 2 - spent - 0.3):
            assert f"{figure:g}" not in message.replace("ε=1.5", "")
