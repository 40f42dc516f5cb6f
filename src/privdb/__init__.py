"""privdb: a private statistical database.

Analysts get differentially private answers paid from a budget; owners publish anonymised tables.
Packages, from the ground up: ``mechanisms`` (noise, exact and secure) and ``accounting`` (the budget
ledger); ``catalog``, ``backends`` and ``sql`` (DP-SELECT: parse → plan → rewrite → execute → noise);
``audit`` (empirical ε checks); ``api`` and ``cli`` are thin faces over them.
"""

from privdb.api import Connection, connect
from privdb.errors import PrivdbError
from privdb.result import Result

__version__ = "0.1.0"

__all__ = ["Connection", "PrivdbError", "Result", "__version__", "connect"]
