"""privdb: a private statistical database.

Analysts get differentially private answers paid from a budget; owners publish anonymised tables.
Packages, from the ground up: ``mechanisms`` (noise, exact and secure) and ``accounting`` (the budget
ledger), then ``audit`` (empirical ε checks); ``cli`` is a thin face over them.
"""

from privdb.errors import PrivdbError

__version__ = "0.1.0"

__all__ = ["PrivdbError", "__version__"]
