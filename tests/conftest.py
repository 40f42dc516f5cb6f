"""Shared fixtures: seeded random sources (tests only; production always uses the CSPRNG)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from numpy.typing import NDArray

from pgfixture import fresh_database, postgres_cluster
from privdb.mechanisms.randomness import InsecureRandomWarning, SeededRandom

# The suite's `privdb` subprocesses start warm, as a user's do (privdb.cli.warm); the warm process it leaves
# behind ends two minutes after the last of them rather than the default ten.
os.environ.setdefault("PRIVDB_WARM_IDLE", "120")

# Property tests draw the same examples on every run (`make test`, CI), as the statistical tests use fixed
# seeds: a red run then means the change, not the draw. HYPOTHESIS_PROFILE=explore draws fresh examples on
# each run to look for new counterexamples (pin each find as a plain test beside its property, as
# tests/test_anonymize_recoding.py does).
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

# Statistical tests in this suite use fixed seeds and a per-test false-failure rate of at most 1e-6.
ALPHA = 1e-6


def seeded(seed: int) -> SeededRandom:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomWarning)
        return SeededRandom(seed)


@pytest.fixture
def rng() -> SeededRandom:
    return seeded(20261122)


class ScriptedSource:
    """Returns scripted words first, then seeded ones: drives the samplers into their exact paths."""

    def __init__(self, script: list[int], seed: int = 1) -> None:
        self.script = list(script)
        self.rest = seeded(seed)
        self.drawn: list[int] = []

    def words(self, n: int) -> NDArray[np.uint64]:
        take = [self.script.pop(0) for _ in range(min(n, len(self.script)))]
        more = self.rest.words(n - len(take))
        out = np.concatenate([np.array(take, dtype=np.uint64), more]).astype(np.uint64)
        self.drawn.extend(int(w) for w in out)
        return out


@pytest.fixture
def scripted() -> Callable[..., ScriptedSource]:
    return ScriptedSource


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A throw-away PostgreSQL cluster (tests/pgfixture.py), one per test module that asks for it."""
    with postgres_cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a ledger lives, on each store: a SQLite file, or a fresh database of the throw-away cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite")
    return fresh_database(request.getfixturevalue("pg_url"))
