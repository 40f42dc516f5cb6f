"""Result columns named as PostgreSQL names them: an unaliased ``AVG(age)`` is ``avg``.

privdb names an unaliased aggregate by its SQL (``COUNT(*)``, ``AVG(age)``), which its JSON answers and the
CLI keep. PostgreSQL names it by its function (``count``, ``avg``), and the tools that read the answer over
the wire — a chart's column picker, a query around the answer naming ``avg`` — expect that. So the
PostgreSQL endpoint renames, in the row description only: ``AVG(age)`` → ``avg``, its interval columns
``AVG(age)_ci95_low`` → ``avg_ci95_low``; any other name (an alias, a key) is kept as it is. Both the
statement's Describe (from the plan) and the answer use this one rule, so they agree.
"""

from __future__ import annotations

import re

__all__ = ["pg_name"]

_CALL = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\(.*\)((?:_ci95_low|_ci95_high)?)", re.S)


def pg_name(name: str) -> str:
    """PostgreSQL's name for a DP answer's column (module doc)."""
    found = _CALL.fullmatch(name)
    return name if found is None else found[1].lower() + found[2]
