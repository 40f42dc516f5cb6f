"""privdb: a private statistical database.

Analysts get differentially private answers paid from a budget; owners publish anonymised tables.
Packages, from the ground up: ``mechanisms`` (noise, exact and secure) and ``accounting`` (the budget
ledger); ``catalog``, ``backends`` and ``sql`` (DP-SELECT: parse → plan → rewrite → execute → noise);
``anonymize`` and ``local`` beside them; ``audit`` (empirical ε checks); ``api``, ``server`` and ``cli``
are thin faces over them.

The top-level names are imported on first use, so that ``import privdb.anonymize`` (or the CLI's
``privdb anonymize``) does not pay for the query engine's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from privdb.errors import PrivdbError

if TYPE_CHECKING:
    from privdb.api import Connection, connect
    from privdb.decisions import decide
    from privdb.result import Result

__version__ = "0.1.0"

__all__ = ["Connection", "PrivdbError", "Result", "__version__", "connect", "decide"]

_LAZY = {
    "Connection": "privdb.api",
    "connect": "privdb.api",
    "Result": "privdb.result",
    "decide": "privdb.decisions",
}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext privdb`` in Jupyter: the ``%%privdb`` cell magic (privdb.notebook; needs IPython)."""
    # optional: the notebook module needs IPython (the `notebook` extra): imported when a notebook loads it
    from privdb.notebook import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privdb' has no attribute {name!r}")
