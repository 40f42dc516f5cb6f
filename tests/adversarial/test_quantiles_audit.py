"""Empirical ε audit of ZetaSQL's array of quantiles (issue 39): ``APPROX_QUANTILES(v, 2, …)``, three
quantiles released as one array, each a PERCENTILE_CONT with its share of the query's ε = 1.

The neighbours: ``D`` holds six people of one row each, values 1 … 5 and one extreme person at 10 (the
owner's bounds [0, 10]); ``D'`` is ``D`` without the extreme person, which moves the median's rank. The
audited output is the array's middle element, a function of the release (post-processing), so the release's
ε bounds it. The event
is fixed on selection draws and bounded by Clopper–Pearson at α = 1e-6 (the relation audit's method,
tests/adversarial/test_relation_audit.py), α / 2 each for the audit and its negative control: the module
fails falsely with probability ≤ 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

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
from privdb.sql.run.targets import histogram_queries

DRAWS = 600  # estimation draws per neighbour (plus DRAWS / 4 to choose the event): cheap, the bound valid
QUERY = (
    "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon={}) "
    "APPROX_QUANTILES(v, 2, contribution_bounds_per_row => (0, 10)) FROM t"
)
META = {
    "privacy_unit": "uid",
    "max_contributions": 1,
    "columns": {"uid": {"type": "int", "private_id": True}, "v": {"type": "float", "lower": 0, "upper": 10}},
}


def _database(path: Path, values: list[float]) -> Database:
    db = Database(path)
    db.backend.load_frame("t", pd.DataFrame({"uid": range(len(values)), "v": values}))
    db.set_metadata("t", META)
    db.grant("a", epsilon=100.0)
    return db


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Database, Database]]:
    root = tmp_path_factory.mktemp("quantiles_audit")
    made = (_database(root / "with", [1, 2, 3, 4, 5, 10]), _database(root / "without", [1, 2, 3, 4, 5]))
    yield made
    for db in made:
        db.close()


def _draws(db: Database, seed: int, epsilon: float) -> tuple[Plan, Callable[[int], NDArray[np.float64]]]:
    """The plan (no data read) and ``n`` draws of the array's middle element (the median), from the noise
    step on the engine's frames."""
    plan, sql = engine.prepare(db, QUERY.format(epsilon), "a")
    assert isinstance(plan, Plan)
    frame = db.backend.fetch(sql) if sql else None
    extra = {name: db.backend.fetch(h) for name, h in histogram_queries(db, plan).items()}
    rng = seeded(seed)

    def draw(n: int) -> NDArray[np.float64]:
        return np.array([add_noise(plan, frame, rng, extra).rows[0][1] for _ in range(n)], dtype=np.float64)

    return plan, draw


def _audited(neighbours: tuple[Database, Database], epsilon: float) -> float:
    pairs = zip(neighbours, (105, 206), strict=True)
    (plan, draw0), (_, draw1) = (_draws(db, seed, epsilon) for db, seed in pairs)
    assert plan.epsilon == epsilon and len(plan.query.select.expressions) == 3  # the elements share the ε
    return _audit(draw0, draw1, DRAWS, ALPHA / 2).epsilon_lower_bound


def test_the_array_of_quantiles_stays_within_its_epsilon(neighbours: tuple[Database, Database]) -> None:
    assert _audited(neighbours, 1.0) <= 1.0


def test_the_audit_sees_a_release_past_the_claim(neighbours: tuple[Database, Database]) -> None:
    """Negative control: the array released at ε = 40 where 1 is claimed is caught (its bound > 1)."""
    assert _audited(neighbours, 40.0) > 1.0
