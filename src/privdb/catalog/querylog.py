"""The query log's shape and filters, as SQL over the two tables that hold it.

The log is not a table of its own: every spend is a row of the ledger's ``spends`` (so the log and the
budgets cannot disagree) and every query refused before it read data is a row of the catalog's
``refusals``. Both live in the same store (the database's SQLite file, or the shared PostgreSQL database),
so one ``UNION ALL`` reads them; filters, order and paging are applied there, never by reading the whole
log into Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, NamedTuple, TypedDict, get_args

from privdb.accounting.sqlstore import glob_word_match
from privdb.errors import Forbidden, InvalidParameter

__all__ = ["OUTCOMES", "LogFilter", "LogOptions", "LogRow", "Outcome", "log_subject"]

Outcome = Literal["answered", "failed", "refused", "interrupted"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

# One row per entry: a spend is `answered` (committed), `failed` (committed: it failed after reading the data,
# charged with the code `query_failed`, no answer), `interrupted` (still reserved: its process is
# running it, or died where privdb cannot tell; or settled after its process died: privdb.accounting.restart,
# charged with the code `query_failed` if it had begun to read, at ε = 0 if it had not) or `refused`
# (released: refused after reserving, before reading data); a refusal is `refused` with its code. `src` and
# `id` order entries of the same instant as they were written (spends first, as before).
LOG_UNION = """
SELECT created AS time, analyst, note AS query,
       CASE WHEN ended = 'unread' THEN '0/1' ELSE epsilon END AS epsilon,
       CASE WHEN ended = 'unread' THEN '0/1' ELSE delta END AS delta,
       CASE WHEN ended = 'failed' THEN 'failed'
            WHEN ended IS NOT NULL OR state = 'reserved' THEN 'interrupted'
            WHEN state = 'committed' THEN 'answered' ELSE 'refused' END AS outcome,
       CASE WHEN ended IN ('read', 'failed') THEN 'query_failed' END AS code, 0 AS src, id
FROM spends WHERE database = ?
UNION ALL
SELECT created, analyst, query, '0/1', '0/1', 'refused', code, 1, id FROM refusals
"""


class LogOptions(TypedDict, total=False):
    """The keyword arguments of every face's ``log`` beside ``analyst``: the filters of LogFilter, and
    ``limit``/``offset`` for paging."""

    limit: int | None
    offset: int
    table: str | None
    since: float | None
    outcome: str | None
    newest_first: bool


class LogRow(NamedTuple):
    """One entry as stored (ε and δ as exact ``n/d`` text)."""

    time: float
    analyst: str
    query: str
    epsilon: str
    delta: str
    outcome: str
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        """The entry as the API gives it (DESIGN.md: time, analyst, query, ε, δ, outcome, code)."""
        return self._asdict() | {
            "epsilon": float(Fraction(self.epsilon)),
            "delta": float(Fraction(self.delta)),
        }


@dataclass(frozen=True)
class LogFilter:
    """Which entries to show: one analyst's (None: everyone's), those whose query names ``table`` (a
    whole-word match on the query text, any case), those at or after ``since`` (Unix seconds), those with
    one ``outcome``."""

    analyst: str | None = None
    table: str | None = None
    since: float | None = None
    outcome: str | None = None
    newest_first: bool = False

    def __post_init__(self) -> None:
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise InvalidParameter(f"outcome must be one of {', '.join(OUTCOMES)}, got {self.outcome!r}")
        if self.table is not None and not self.table.replace("_", "a").isalnum():
            # a table's name is letters, digits and _ (check_name): nothing else can be a GLOB pattern
            raise InvalidParameter(
                f"table filter {self.table!r} is not a table name (letters, digits and _ only)"
            )

    @classmethod
    def of(cls, analyst: str | None, options: LogOptions) -> LogFilter:
        """The filter that a ``log(analyst, **options)`` call names (its paging set aside)."""
        return cls(
            analyst,
            options.get("table"),
            options.get("since"),
            options.get("outcome"),
            options.get("newest_first", False),
        )

    def where(self, word_match: Callable[[str], str] | None = None) -> tuple[str, list[Any]]:
        """The ``WHERE`` clause (empty when nothing is filtered) and its arguments; ``word_match`` writes
        the store's whole-word match (:meth:`privdb.accounting.sqlstore.SQLStore.word_match`; SQLite's by
        default)."""
        terms: list[str] = []
        args: list[Any] = []
        if self.analyst is not None:
            terms.append("analyst = ?")
            args.append(self.analyst)
        if self.table is not None:  # the name between two non-word characters (the text padded with spaces)
            terms.append((word_match or glob_word_match)("lower(query)"))
            args.append(self.table.lower())
        if self.since is not None:
            terms.append("time >= ?")
            args.append(self.since)
        if self.outcome is not None:
            terms.append("outcome = ?")
            args.append(self.outcome)
        return (" WHERE " + " AND ".join(terms) if terms else ""), args


def log_subject(viewer: str | None, asked: str | None) -> str | None:
    """Whose log entries ``viewer`` (an analyst, or None: the owner) gets when asking for ``asked``'s: the
    owner any analyst's (None: everyone's); an analyst only their own, and a filter naming anyone else is
    refused whether or not that analyst exists."""
    if viewer is None or asked in (None, viewer):
        return asked if viewer is None else viewer
    raise Forbidden("an analyst sees only their own log entries: leave out the analyst filter")
