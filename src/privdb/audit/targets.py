"""The mechanisms ``privdb audit`` checks, each on its worst-case neighbouring inputs.

Correct mechanisms are audited by default. Two deliberately broken variants exist to show the auditor
works: ``laplace_half_noise`` (claims ε = 1 with the noise of ε = 2) and ``rr_heads_say_yes`` (the notes'
"heads: say yes" protocol presented as if it were ln 3-DP like the coin protocol).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privdb.mechanisms import (
    AlphaProtocol,
    BinaryRandomizedResponse,
    CoinProtocol,
    DiscreteGaussian,
    ExponentialMechanism,
    FlipProtocol,
    Gaussian,
    Geometric,
    HeadsSayYes,
    KaryRandomizedResponse,
    Laplace,
    RandomSource,
)

__all__ = ["BROKEN", "CORRECT", "Target", "build_targets"]

Draw = Callable[[int], NDArray[Any]]


@dataclass(frozen=True)
class Target:
    """A mechanism's claim and samplers of its outputs on two neighbouring inputs."""

    name: str
    epsilon: float
    delta: float
    draw0: Draw
    draw1: Draw
    broken: bool = False


def _additive(mech: Laplace | Gaussian, x0: float, x1: float) -> tuple[Draw, Draw]:
    return (lambda n: mech.release(np.full(n, x0)), lambda n: mech.release(np.full(n, x1)))


def _binary(mech: BinaryRandomizedResponse | HeadsSayYes) -> tuple[Draw, Draw]:
    return (lambda n: mech.release(np.zeros(n, bool)), lambda n: mech.release(np.ones(n, bool)))


def build_targets(rng: RandomSource | None = None) -> dict[str, Target]:
    """Every auditable mechanism, keyed by name (``rng`` only for reproducible tests)."""
    targets: list[Target] = []

    lap = Laplace(epsilon=1.0, sensitivity=1.0, rng=rng)
    targets.append(Target("laplace", 1.0, 0.0, *_additive(lap, 0.0, 1.0)))

    geo = Geometric(epsilon=1.0, sensitivity=1, rng=rng)
    targets.append(Target("geometric", 1.0, 0.0, *_additive(geo, 0.0, 1.0)))

    gauss = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0, rng=rng)
    targets.append(Target("gaussian", 1.0, 1e-5, *_additive(gauss, 0.0, 1.0)))

    dgauss = DiscreteGaussian(rho=0.5, delta=1e-5, sensitivity=1, rng=rng)
    targets.append(
        Target(
            "discrete_gaussian",
            dgauss.epsilon,
            dgauss.delta,
            lambda n: dgauss.release_int(np.zeros(n)),
            lambda n: dgauss.release_int(np.ones(n)),
        )
    )

    # the exponential mechanism's worst case: one candidate loses Δ, the other 50 gain Δ
    em = ExponentialMechanism(epsilon=1.0, sensitivity=1.0, rng=rng)
    u0 = np.array([1.0] + [0.0] * 50)
    u1 = np.array([0.0] + [1.0] * 50)
    targets.append(
        Target(
            "exponential",
            1.0,
            0.0,
            lambda n: em.select_many(u0, n),
            lambda n: em.select_many(u1, n),
        )
    )

    for mech in (
        CoinProtocol(rng=rng),
        AlphaProtocol(alpha=0.6, rng=rng),
        FlipProtocol(p=0.2, rng=rng),
        BinaryRandomizedResponse.for_epsilon(1.0, rng=rng),
    ):
        targets.append(Target(mech.name, mech.epsilon, 0.0, *_binary(mech)))
    targets[-1] = Target("randomized_response", 1.0, 0.0, targets[-1].draw0, targets[-1].draw1)

    kary = KaryRandomizedResponse(epsilon=1.0, k=4, rng=rng)
    targets.append(
        Target(
            "rr_kary",
            1.0,
            0.0,
            lambda n: kary.release(np.zeros(n, np.int64)),
            lambda n: kary.release(np.ones(n, np.int64)),
        )
    )

    # broken on purpose
    half = Laplace(epsilon=2.0, sensitivity=1.0, rng=rng)
    targets.append(Target("laplace_half_noise", 1.0, 0.0, *_additive(half, 0.0, 1.0), broken=True))
    heads = HeadsSayYes(rng=rng)
    targets.append(Target("rr_heads_say_yes", math.log(3.0), 0.0, *_binary(heads), broken=True))

    return {t.name: t for t in targets}


CORRECT = (
    "laplace",
    "geometric",
    "gaussian",
    "discrete_gaussian",
    "exponential",
    "rr_coin",
    "rr_alpha",
    "rr_flip",
    "randomized_response",
    "rr_kary",
)
BROKEN = ("laplace_half_noise", "rr_heads_say_yes")
