"""Which private ⋈ private joins on the unit may be aggregated on their many-rows side first.

``one JOIN many ON one.u = many.u`` — INNER, that one equality of the two privacy units stored alike — where
``one``'s metadata declares ``max_contributions: 1`` and ``many``'s more. The relation is unchanged; it only
carries the two sides (privdb.sql.front.relation.model.Eager) so that the rewrite (privdb.sql.run.eager) can
aggregate ``many`` per unit before the join when the query's keys and WHERE conditions read ``one`` and its
aggregates read ``many``. Whatever the data, each unit still contributes at most ``m`` rows in at most
``G`` groups, and where ``one`` has one row per unit (as declared) the answer is the join form's; the
declaration decides which form runs, the data never does (docs/proofs/sql.md, "Aggregating the many side
first").
"""

from __future__ import annotations

from collections.abc import Mapping

from privdb.sql.front.relation.model import Eager, Relation

__all__ = ["eager_join"]


def eager_join(
    left: Relation,
    right: Relation,
    names: tuple[Mapping[str, str], Mapping[str, str]],
    on: list[tuple[str, str, bool]],
    single: bool,
) -> Eager | None:
    """The two sides of ``left JOIN right`` when the many side may be aggregated first (module doc), else
    None. ``names``: each side's columns' names in the join; ``on``: the ON equalities of two columns
    (left, right, compared as stored); ``single``: INNER with no other condition."""
    lunit, runit = left.meta.privacy_unit, right.meta.privacy_unit
    if not single or left.public or right.public or lunit is None or runit is None:
        return None
    lnames, rnames = names
    if on != [(lnames[lunit], rnames[runit], True)]:
        return None
    lm, rm = left.meta.max_contributions, right.meta.max_contributions
    if lm == 1 and rm > 1:
        return Eager(left, right, lnames, rnames, lnames[lunit], rnames[runit])
    if rm == 1 and lm > 1:
        return Eager(right, left, rnames, lnames, rnames[runit], lnames[lunit])
    return None
