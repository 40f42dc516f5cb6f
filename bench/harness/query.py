"""A benchmark's query, in the forms each side runs: the plain aggregate (the floor), privdb's DP-SELECT at
a given ε, and a peer's spelling with schema-qualified tables. Standard library only (peer workers use it)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

ANALYST = "bench"  # the analyst every benchmark grants a budget to
EPS = 1.0  # ε per query


@dataclass(frozen=True)
class Query:
    key: str
    label: str
    body: str  # everything after SELECT

    def raw(self) -> str:
        return f"SELECT {self.body}"

    def dp(self, epsilon: float) -> str:
        return f"DP-SELECT {epsilon!r} {self.body}"

    def qualified(self, tables: tuple[str, ...], schema: str = "main") -> str:
        """The plain query with ``tables`` named ``schema.table``, as SmartNoise's and Qrlew's metadata name
        them (DuckDB's default schema is ``main``)."""
        names = "|".join(map(re.escape, tables))
        return re.sub(rf"\b(FROM|JOIN) ({names})\b", rf"\1 {schema}.\2", self.raw())


def check_fresh(result: Any, epsilon: float, what: str) -> None:
    """Raise if privdb answered from its store of answers or charged another ε: the timing would be void."""
    if result.cached or not math.isclose(result.epsilon_spent, epsilon):
        raise RuntimeError(f"privdb answered {what} from its store: the timing would be void")
