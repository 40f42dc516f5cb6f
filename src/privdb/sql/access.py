"""Who may ask about what: the one place a DP-SELECT, a plain SELECT and an explain check the analyst and
their grant, before anything about a table (its columns, bounds, errors) reaches them or anything is spent.
"""

from __future__ import annotations

from privdb.backends.base import find_table
from privdb.database import Database
from privdb.errors import Unauthorized

__all__ = ["authorize", "check_analyst"]


def check_analyst(db: Database, analyst: str) -> None:
    """Refuse an analyst the catalog does not know."""
    if not db.catalog.has_analyst(analyst):
        raise Unauthorized(f"unknown analyst {analyst!r}; the owner creates analysts with `privdb grant`")


def authorize(db: Database, analyst: str, table: str) -> str:
    """Refuse (before anything is spent) an unknown analyst, or a table they may not query; return the
    table's stored name. Suggestions come only from the tables the analyst may query, and a scoped analyst
    gets one refusal for any table outside the grant, whether or not it exists (``find_table``)."""
    check_analyst(db, analyst)
    return find_table(table, db.table_names(), visible=db.catalog.analyst_tables(analyst))
