"""Choosing ε: by the disclosure an adversary reaches (Lee & Clifton 2011: privdb.accounting.disclosure), by
the economics of a study (Hsu et al. 2014: ``economic``) and by the accuracy of an adversary's interval
estimate (Naldi & D'Acquisto 2015: ``estimation``)."""

from privdb.accounting.choose_epsilon.economic import EconomicChoice, economic_epsilon, participants_needed
from privdb.accounting.choose_epsilon.estimation import estimation_confidence, estimation_epsilon

__all__ = [
    "EconomicChoice",
    "economic_epsilon",
    "estimation_confidence",
    "estimation_epsilon",
    "participants_needed",
]
