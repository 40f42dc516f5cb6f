"""Differentially private mechanisms with secure, exact sampling.

Each mechanism knows its privacy cost (``.cost``: ε, δ, and ρ where zCDP is tighter), its noise scale and
its accuracy, and releases whole NumPy vectors in one call. Noise is exact on a grid and drawn from a
CSPRNG (:mod:`privdb.mechanisms.randomness`); see docs/proofs/ for each privacy argument.
"""

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
