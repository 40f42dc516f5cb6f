"""The local model: randomised-response surveys and frequency oracles, where nobody is trusted.

Each person randomises their own answer before it leaves them; the collector estimates rates from the noisy
reports. Every protocol is a public description (:class:`LocalProtocol`) with a client side
(``protocol.randomizer()``, CSPRNG, vectorised over people) and a collector side (``protocol.estimator()``,
unbiased counts with variances and 95% intervals, accumulating batches). Proofs: docs/proofs/local.md.
"""

from typing import TYPE_CHECKING

from privdb.local.estimators import Frequencies, SupportEstimator, project_simplex
from privdb.local.oracles import HashReports, OLHProtocol, OUEProtocol, UnaryReports
from privdb.local.protocols import BinaryProtocol, KaryProtocol, LocalProtocol, Randomizer
from privdb.local.stream import SurveyStream

if TYPE_CHECKING:
    from privdb.local.compare import LocalCentralComparison, compare_local_central, plot_local_central

_LAZY = ("LocalCentralComparison", "compare_local_central", "plot_local_central")


def __getattr__(name: str) -> object:
    """The local-versus-central comparison loads on first use (``python -m privdb.local.compare`` runs it)."""
    if name in _LAZY:
        from privdb.local import compare

        return getattr(compare, name)
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
