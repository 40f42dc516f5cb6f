"""Prepared query shapes: what a DP-SELECT's plan takes from its text and the metadata, kept per database
so that a query asked again at another ε skips the parse, the relation and the resolution.

A *shape* is the query's text with its ε literal taken out, and the analyst asking (the tables they may
query and their metadata are part of what the plan was made from). Only texts of one plain form have a
shape: ``DP-SELECT`` at the start (after spaces), then an unsigned decimal literal of ASCII digits (``1``,
``0.5``, ``2.``, ``1e-3``; not ``.5``) between ASCII spaces. Two texts of one shape differ only in that
literal, which sqlglot's tokenizer reads as one number token whatever its digits (it ends at the space),
so their parses differ only in ε (a property test checks this on generated literals).
Everything that depends on ε runs afresh on every query: the ε checks of the parse (``check_epsilon``, the
same refusal), the sizing of the noise (``plan_query`` with the kept
:class:`~privdb.sql.plan.planner.Shape`) and
the engine SQL. So a prepared plan gives the same answers, refusals and charges as a fresh one.

What the kept part was made from is checked on every use, cheaply:

- the generation of the database's DuckDB connection (``DuckDBBackend.generation``: every schema or data
  change made through it; while the server runs it is the file's only writer, and workers open it
  read-only, so no other process changes the data);
- the analyst's existence and granted tables, the attachments, and the stored metadata of every table the
  plan read — read from the catalog on each use, so a change made by another process (another server
  worker, the owner's ``privdb grant`` on the directory) is seen at the next query.

A shape whose tables include an attached engine's is not kept (that engine's schema can change without
privdb), nor ACCURACY queries, record releases, or anything refused. The state is read before and after
a fresh prepare (each table's metadata before its use) and the shape kept only if both agree, so a change
made during the prepare is not kept — unless it was undone within the same prepare, which the catalog,
having no version counter, cannot tell; the plan is then one the owner's metadata held a moment before.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from privdb.lru import LRU
from privdb.sql.front.query import DPQuery, check_epsilon
from privdb.sql.plan.types import Plan, Shape

if TYPE_CHECKING:
    from privdb.database import Database
    from privdb.sql.front.relation.model import Relation

__all__ = ["Prepared", "keep", "lookup", "shape_of", "shapes", "state"]

# DP-SELECT, then an unsigned decimal ε of ASCII digits between ASCII spaces: one number token, whatever
# its digits (not ".5": sqlglot reads a leading dot as a token of its own, and the parse refuses it)
_PLAIN = re.compile(r"[ \t\r\n]*DP-SELECT[ \t\r\n]+([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)[ \t\r\n]")

ShapeKey = tuple[str | None, str, str]


def shape_of(text: str, analyst: str | None) -> tuple[ShapeKey, str] | None:
    """The shape key of ``text`` asked by ``analyst`` and its ε literal, or None (no plain form)."""
    if not isinstance(text, str):
        return None
    found = _PLAIN.match(text)
    if found is None:
        return None
    return (analyst, text[: found.start(1)], text[found.end(1) :]), found.group(1)


State = tuple[Any, ...]


@dataclass(frozen=True)
class Prepared:
    """A kept shape: the parsed query (at the ε it was first asked with), its relation, its resolution and
    public key domains, the query as written back, and the state they were made from."""

    query: DPQuery
    relation: Relation
    shape: Shape
    written: str
    tables: tuple[str, ...]
    state: State


def state(db: Database, analyst: str | None, specs: tuple[Any, ...] | None, tables: tuple[str, ...]) -> State:
    """What a shape's plan was made from: the DuckDB generation, the analyst's grant, the attachments and
    each table's stored metadata (``specs`` if read already, else read now)."""
    catalog = db.catalog
    grant = None if analyst is None else (catalog.has_analyst(analyst), catalog.analyst_tables(analyst))
    if specs is None:
        specs = tuple(catalog.metadata(t) for t in tables)
    return (db.backend.generation, grant, catalog.attachments(), specs)


def lookup(db: Database, text: str, analyst: str | None) -> tuple[DPQuery, Prepared] | None:
    """``text`` parsed from its kept shape, if that shape is kept and still valid (its ε checked as the
    parse checks it), with the shape's parts; else None (prepare afresh)."""
    found = shape_of(text, analyst)
    if found is None:
        return None
    key, literal = found
    kept = db.prepared.get(key)
    if not isinstance(kept, Prepared) or state(db, analyst, None, kept.tables) != kept.state:
        db.prepared.misses += 1
        return None
    db.prepared.hits += 1
    epsilon = float(literal)
    check_epsilon(epsilon)
    return replace(kept.query, epsilon=epsilon, text=text, written=kept.written), kept


def keep(
    db: Database,
    text: str,
    analyst: str | None,
    plan: Plan,
    shape: Shape,
    before: State,
    read: list[tuple[str, Any]],
) -> None:
    """Keep the shape of ``text`` after a fresh prepare gave ``plan`` from ``shape``: ``before`` is the
    state read before it (its metadata part empty), ``read`` each table's stored metadata as read before
    use."""
    found = shape_of(text, analyst)
    query = plan.query
    if found is None or plan.relation is None or query.accuracy is not None:
        return
    key, literal = found
    if float(literal) != query.epsilon:  # not read as the parse read it: no shape
        return
    tables = tuple(name for name, _ in read)
    attached = {name.lower() for name in before[2]}
    if any(name.lower() in attached for name in (*tables, *plan.relation.tables)):
        return
    specs = tuple(spec for _, spec in read)
    now = state(db, analyst, None, tables)
    if now != (*before[:3], specs):  # something changed meanwhile: plan afresh next time
        return
    db.prepared.put(key, Prepared(query, plan.relation, shape, query.body(), tables, now))


def shapes(db: Database) -> LRU[Hashable, object]:
    """The kept shapes of ``db`` (they live and go with the Database object)."""
    return db.prepared
