"""The local model: randomised-response surveys and frequency oracles, where nobody is trusted.

Each person randomises their own answer before it leaves them; the collector estimates rates from the noisy
reports. Every protocol is a public description (:class:`LocalProtocol`) with a client side
(``protocol.randomizer()``, CSPRNG, vectorised over people) and a collector side (``protocol.estimator()``,
unbiased counts with variances and 95% intervals, accumulating batches). Proofs: docs/proofs/local.md.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privdb.local.compare import LocalCentralComparison, compare_local_central, plot_local_central
    from privdb.local.estimators import Frequencies, SupportEstimator, project_simplex
    from privdb.local.local_hashing import HashReports, OLHProtocol
    from privdb.local.protocols import BinaryProtocol, KaryProtocol, LocalProtocol, Randomizer
    from privdb.local.stream import SurveyStream
    from privdb.local.unary_encoding import OUEProtocol, UnaryReports

# the names load on first use, so that a light module of the package (privdb.local.limits, read by the CLI's
# help) does not pay for NumPy and SciPy; ``python -m privdb.local.compare`` runs the comparison
_LAZY = {
    "BinaryProtocol": "protocols",
    "Frequencies": "estimators",
    "HashReports": "local_hashing",
    "KaryProtocol": "protocols",
    "LocalCentralComparison": "compare",
    "LocalProtocol": "protocols",
    "OLHProtocol": "local_hashing",
    "OUEProtocol": "unary_encoding",
    "Randomizer": "protocols",
    "SupportEstimator": "estimators",
    "SurveyStream": "stream",
    "UnaryReports": "unary_encoding",
    "compare_local_central": "compare",
    "plot_local_central": "compare",
    "project_simplex": "estimators",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f"privdb.local.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'privdb.local' has no attribute {name!r}")


__all__ = [
    "BinaryProtocol",
    "Frequencies",
    "HashReports",
    "KaryProtocol",
    "LocalCentralComparison",
    "LocalProtocol",
    "OLHProtocol",
    "OUEProtocol",
    "Randomizer",
    "SupportEstimator",
    "SurveyStream",
    "UnaryReports",
    "compare_local_central",
    "plot_local_central",
    "project_simplex",
]
