"""The empirical ε auditor on every local randomiser: no lower bound above the claim; the non-DP one caught.

Neighbouring inputs are two true values (0 and 1) for one person. Unary and hashed reports are audited
through a projection that keeps everything that differs between the two values — OUE: bits 0 and 1 (the
other bits have the same distribution under both); OLH: whether each value hashes to the reported bucket.
A projection is post-processing, so its ε lower bound is a lower bound for the whole report. Confidence
1 − 1e-6: a correct randomiser fails with probability at most 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from numpy.typing import NDArray

from conftest import ALPHA, seeded
from privdb.audit import audit
from privdb.local import BinaryProtocol, HashReports, KaryProtocol, OLHProtocol, OUEProtocol, UnaryReports

Draw = Callable[[int], NDArray[np.int64]]


def draws(proto: object, seed: int) -> tuple[Draw, Draw]:
    client = proto.randomizer(rng=seeded(seed))  # type: ignore[attr-defined]

    def project(reports: object) -> NDArray[np.int64]:
        if isinstance(reports, UnaryReports):
            bits = reports.to_bits()
            return (2 * bits[:, 0] + bits[:, 1]).astype(np.int64)
        if isinstance(reports, HashReports):
            n = len(reports)
            hit0 = reports.hash(np.zeros(n, np.int64)) == reports.y
            hit1 = reports.hash(np.ones(n, np.int64)) == reports.y
            coded: NDArray[np.int64] = (2 * hit0 + hit1).astype(np.int64)
            return coded
        out: NDArray[np.int64] = np.asarray(reports).astype(np.int64)
        return out

    return (
        lambda n: project(client.randomize(np.zeros(n, np.int64))),
        lambda n: project(client.randomize(np.ones(n, np.int64))),
    )


PROTOCOLS = [
    BinaryProtocol.coin(),
    BinaryProtocol.alpha(0.6),
    BinaryProtocol.flip(0.2),
    BinaryProtocol.for_epsilon(1.0),
    KaryProtocol(epsilon=1.0, d=4),
    OUEProtocol(epsilon=1.0, d=6),
    OLHProtocol(epsilon=1.0, d=8),
    OLHProtocol(epsilon=2.0, d=100),
]


@pytest.mark.parametrize("proto", PROTOCOLS, ids=lambda p: f"{p.name}-d{p.d}")
def test_no_randomiser_shows_more_than_its_claim(proto: object) -> None:
    draw0, draw1 = draws(proto, 21)
    eps = proto.epsilon  # type: ignore[attr-defined]
    result = audit(proto.name, draw0, draw1, epsilon=eps, samples=100_000, confidence=1 - ALPHA)  # type: ignore[attr-defined]
    assert result.passed, result


def test_tight_claims_are_found_close() -> None:
    """Power: the coin protocol and k-RR show most of their ε at 95% confidence."""
    for proto in (BinaryProtocol.coin(), KaryProtocol(epsilon=1.0, d=4)):
        result = audit(proto.name, *draws(proto, 22), epsilon=proto.epsilon, samples=100_000)
        assert result.epsilon_lower_bound > 0.85 * proto.epsilon


def test_heads_say_yes_is_caught() -> None:
    """The notes' non-private variant, presented as if it were ln 3-DP like the coin protocol."""
    heads = BinaryProtocol.heads_say_yes()
    client = heads.randomizer(rng=seeded(23), allow_non_private=True)
    result = audit(
        "heads_say_yes",
        lambda n: client.randomize(np.zeros(n, bool)),
        lambda n: client.randomize(np.ones(n, bool)),
        epsilon=math.log(3),
        samples=100_000,
        confidence=1 - ALPHA,
    )
    assert not result.passed and result.epsilon_lower_bound > 2 * math.log(3)
