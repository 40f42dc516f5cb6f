"""Differentially private mechanisms with secure, exact sampling.

Each mechanism knows its privacy cost (``.cost``: ε, δ, and ρ where zCDP is tighter), its noise scale and
its accuracy, and releases whole NumPy vectors in one call. Noise is exact on a grid and drawn from a
CSPRNG (:mod:`privdb.mechanisms.randomness`); see docs/proofs/ for each privacy argument.

The names below are imported on first use, so that a module taking one mechanism (or ``_validate``, as the
ledger does) does not pay for the others' imports: the Gaussian's calibration needs SciPy, the randomised
response's interval its normal quantile.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privdb.mechanisms.base import AdditiveNoise, Mechanism, PrivacyCost
    from privdb.mechanisms.exponential import ExponentialMechanism
    from privdb.mechanisms.gaussian import (
        DiscreteGaussian,
        Gaussian,
        analytic_gaussian_sigma,
        gaussian_delta,
    )
    from privdb.mechanisms.laplace import Geometric, Laplace
    from privdb.mechanisms.randomized_response import (
        AlphaProtocol,
        BinaryRandomizedResponse,
        CoinProtocol,
        Estimate,
        FlipProtocol,
        HeadsSayYes,
        KaryRandomizedResponse,
        epsilon_of,
    )
    from privdb.mechanisms.randomness import RandomSource, SecureRandom, SeededRandom

_WHERE = {
    "privdb.mechanisms.base": ("AdditiveNoise", "Mechanism", "PrivacyCost"),
    "privdb.mechanisms.exponential": ("ExponentialMechanism",),
    "privdb.mechanisms.gaussian": (
        "DiscreteGaussian", "Gaussian", "analytic_gaussian_sigma", "gaussian_delta",
    ),
    "privdb.mechanisms.laplace": ("Geometric", "Laplace"),
    "privdb.mechanisms.randomized_response": (
        "AlphaProtocol", "BinaryRandomizedResponse", "CoinProtocol", "Estimate", "FlipProtocol",
        "HeadsSayYes", "KaryRandomizedResponse", "epsilon_of",
    ),
    "privdb.mechanisms.randomness": ("RandomSource", "SecureRandom", "SeededRandom"),
}  # fmt: skip
_LAZY = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "AdditiveNoise",
    "AlphaProtocol",
    "BinaryRandomizedResponse",
    "CoinProtocol",
    "DiscreteGaussian",
    "Estimate",
    "ExponentialMechanism",
    "FlipProtocol",
    "Gaussian",
    "Geometric",
    "HeadsSayYes",
    "KaryRandomizedResponse",
    "Laplace",
    "Mechanism",
    "PrivacyCost",
    "RandomSource",
    "SecureRandom",
    "SeededRandom",
    "analytic_gaussian_sigma",
    "epsilon_of",
    "gaussian_delta",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # found once: later look-ups skip this function
        return value
    raise AttributeError(f"module 'privdb.mechanisms' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
