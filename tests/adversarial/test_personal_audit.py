"""Empirical ε audits of personalised privacy (the Sample mechanism, docs/proofs/personalised.md), per class.

``D``: 30 liberal people (ε 1, two rows each), one strict person ``X`` (ε 0.1, two rows) and one person ``Y``
above the threshold (ε 2, two rows); ``max_contributions: 2``. The query is ``DP-SELECT 1 COUNT(*) FROM
people``: t = 1, so ``X`` is kept with π = (e^0.1 − 1)/(e − 1) ≈ 0.061 and everyone else always, and the count
has sensitivity 2, which ``X`` and ``Y`` each reach (the worst case). Neighbours: ``D − X`` and ``D − Y``.

Each draw is the whole answer as ``engine.run`` computes it: a fresh engine read of the rendered SQL (DuckDB's
``random()`` draws the sample) and the noise step (``add_noise``, seeded) on its frame. ``D − X`` holds no one
below t, so its read is the same every time (checked) and is read once. The audit is
``tests/adversarial/test_relation_audit.py``'s: the event is chosen on ``SAMPLES/4`` draws, Clopper–Pearson
bounds at α/2 each side on ``SAMPLES`` fresh ones; α = 1e-6 / 3 per audit (Bonferroni over the three audits),
so the module fails falsely with probability ≤ 1e-6. ``D``'s draws are shared by the two audits that need
them (each audit's guarantee holds on its own; the union bound needs no independence).

- the strict class: ε_lb(D, D − X) ≤ 0.1, its own ε (a true release of t = 1 would show ≈ 0.7 here);
- the liberal class: ε_lb(D, D − Y) ≤ 1 = t, and above 0.3 (the audit sees a loss of t at this size);
- negative control: the same table without ``epsilon_column`` (no sampling): ``X`` loses t = 1, and the
  audit shows ε_lb > 0.1 — the strict audit above could fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from adversarial.test_relation_audit import _audit
from conftest import ALPHA, seeded
from privdb.database import Database
from privdb.sql import engine
from privdb.sql.answer.noise import add_noise
from privdb.sql.plan.types import Plan

pytestmark = pytest.mark.slow

SAMPLES = 2000
SELECTION = SAMPLES // 4
ALPHA_EACH = ALPHA / 3
QUERY = "DP-SELECT 1 COUNT(*) FROM people"
STRICT, LIBERAL, ABOVE = 0.1, 1.0, 2.0
X, Y = 100, 200
META: dict[str, Any] = {
    "privacy_unit": "pid",
    "max_contributions": 2,
    "columns": {
        "pid": {"type": "int", "private_id": True},
        "eps": {"type": "float", "lower": STRICT, "upper": ABOVE},
    },
    "epsilon_column": "eps",
}


def _table(without: int | None = None) -> pd.DataFrame:
    people = [(pid, LIBERAL) for pid in range(1, 31)] + [(X, STRICT), (Y, ABOVE)]
    rows = [(pid, eps) for pid, eps in people if pid != without for _ in range(2)]
    return pd.DataFrame(rows, columns=["pid", "eps"])


def _database(path: Path, frame: pd.DataFrame, personalised: bool = True) -> Database:
    db = Database(path)
    db.backend.load_frame("people", frame)
    db.set_metadata(
        "people", META if personalised else {k: v for k, v in META.items() if k != "epsilon_column"}
    )
    db.grant("alice", epsilon=100)
    return db


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Database]]:
    root = tmp_path_factory.mktemp("personal")
    made = {
        "D": _database(root / "d", _table()),
        "D-X": _database(root / "dx", _table(X)),
        "D-Y": _database(root / "dy", _table(Y)),
        "D unsampled": _database(root / "du", _table(), personalised=False),
        "D-X unsampled": _database(root / "dxu", _table(X), personalised=False),
    }
    yield made
    for db in made.values():
        db.close()


def _answers(db: Database, n: int, seed: int, fresh: bool) -> NDArray[np.float64]:
    """``n`` answers to ``QUERY`` on ``db``: each a fresh engine read (``fresh``) or one read reused (a
    database whose read is deterministic, checked on 20 reads), then the noise step."""
    plan, sql = engine.prepare(db, QUERY, "alice")
    assert isinstance(plan, Plan) and plan.statistics[0].sensitivity == 2
    rng = seeded(seed)
    if not fresh:
        frame = db.backend.fetch(sql)
        assert all(db.backend.fetch(sql).equals(frame) for _ in range(20))
        return np.array([add_noise(plan, frame, rng).rows[0][0] for _ in range(n)], dtype=np.float64)
    out = [add_noise(plan, db.backend.fetch(sql), rng).rows[0][0] for _ in range(n)]
    return np.array(out, dtype=np.float64)


class _Pool:
    """Draws handed out in order from answers computed up front (so two audits can share ``D``'s)."""

    def __init__(self, values: NDArray[np.float64]) -> None:
        self.values, self.at = values, 0

    def __call__(self, n: int) -> NDArray[np.float64]:
        out = self.values[self.at : self.at + n]
        assert len(out) == n, "the pool is too small"
        self.at += n
        return out


@pytest.fixture(scope="module")
def answers(databases: dict[str, Database]) -> dict[str, NDArray[np.float64]]:
    n = SELECTION + SAMPLES
    return {
        "D": _answers(databases["D"], n, seed=11, fresh=True),
        "D-X": _answers(databases["D-X"], n, seed=12, fresh=False),
        "D-Y": _answers(databases["D-Y"], n, seed=13, fresh=True),
        "D unsampled": _answers(databases["D unsampled"], n, seed=14, fresh=False),
        "D-X unsampled": _answers(databases["D-X unsampled"], n, seed=15, fresh=False),
    }


def test_the_strict_person_loses_at_most_their_own_epsilon(answers: dict[str, NDArray[np.float64]]) -> None:
    result = _audit(_Pool(answers["D"]), _Pool(answers["D-X"]), SAMPLES, ALPHA_EACH)
    assert result.epsilon_lower_bound <= STRICT, result


def test_a_person_above_the_threshold_loses_at_most_t(answers: dict[str, NDArray[np.float64]]) -> None:
    result = _audit(_Pool(answers["D"]), _Pool(answers["D-Y"]), SAMPLES, ALPHA_EACH)
    assert 0.3 < result.epsilon_lower_bound <= 1.0, result


def test_without_sampling_the_strict_person_loses_more(answers: dict[str, NDArray[np.float64]]) -> None:
    """Negative control: the audit of the strict class can fail."""
    result = _audit(_Pool(answers["D unsampled"]), _Pool(answers["D-X unsampled"]), SAMPLES, ALPHA_EACH)
    assert result.epsilon_lower_bound > STRICT, result
