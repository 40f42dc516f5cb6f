"""Non-interactive releases with a differential-privacy guarantee (issue 17), each charged to the table's
budget (privdb.publish.charge).

``safepub`` releases a table's quasi-identifiers truthfully (sampled, generalised, small classes suppressed)
with (ε, δ)-DP (Bild, Kuhn, Prasser, PoPETs 2018); ``parameters`` gives SafePub's β and k; ``report`` the
owner's utility report. ``histogram``: DP marginals and hierarchical histograms over public domains, made
consistent (``marginals``), or one 1-D histogram by NoiseFirst (``noisefirst``).
"""

from privdb.publish.histogram import Domain, HistogramRelease, domain_of, release_histograms
from privdb.publish.parameters import SafePubParameters, parameters
from privdb.publish.safepub import Published, safepub
from privdb.publish.safepub_search import PublicHierarchy

__all__ = [
    "Domain",
    "HistogramRelease",
    "PublicHierarchy",
    "Published",
    "SafePubParameters",
    "domain_of",
    "parameters",
    "release_histograms",
    "safepub",
]
