"""Non-interactive releases with a DP guarantee (issue 17): a whole table published once, charged to its
budget. ``histogram``: DP marginals and hierarchical histograms over public domains, made consistent."""

from privdb.publish.histogram import Domain, HistogramRelease, domain_of, release_histograms

__all__ = ["Domain", "HistogramRelease", "domain_of", "release_histograms"]
