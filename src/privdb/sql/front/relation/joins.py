"""JOINs in a DP-SELECT's FROM: with public tables, and of private tables on their common privacy unit.

Both sides are relations (privdb.sql.front.relation.model). Each side's columns are first renamed to names
unique in the join (``pid`` and ``v.pid`` when both sides have a ``pid``), so that the ON condition, checked
by the closed expression language against the joined scope, renders without qualifiers. Why each accepted form
is sound (docs/proofs/sql.md, "Relations"):

- **private ⋈ public** (INNER, or LEFT with the private side preserved): a public table's rows are about no
  one. A private row meets at most ``k`` public rows, ``k`` the largest number of public rows sharing a value
  of the join keys (read from the public table: public information). With a privacy unit, the bounding after
  the join keeps every unit to ``m`` rows whatever ``k`` is; without one, each row stands for ``k`` rows, and
  the relation's ``multiplicity`` multiplies the sensitivities. A public table preserved by a LEFT JOIN would
  release which public rows no person matched: refused.
- **private ⋈ private** (INNER or LEFT), when ON equates the two privacy units (``a.pid = b.pid``, maybe with
  more conditions) under the same neighbouring relation: every joined row holds one unit's rows from both
  sides, so removing a unit from every table removes exactly its joined rows; the unit's joined rows are
  bounded to ``m = m_a·m_b`` (and ``max(G_a, G_b)`` groups) after the join (or, one side declaring one
  row per unit, partly before it: privdb.sql.front.relation.unit_join).
- **private × public without a condition** (``CROSS JOIN p``, ``FROM t, p``): exactly ``JOIN p ON TRUE``.
- **private RIGHT JOIN public** (the last join of the DP-SELECT's own FROM): every public key. The rows are
  the INNER join's; each public column gets the public relation's distinct values as its domain, so GROUP BY
  on them releases every key (unmatched: noise-only). What would read SQL's NULL rows for unmatched keys
  (COUNT(*), GROUP BY or WHERE on the private side, IS NULL/COALESCE/CASE of it) is refused
  (privdb.sql.front.relation.right_join).
- anything else (FULL, other RIGHT joins, private–private CROSS or other conditions) is refused with the
  reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlglot import exp

from privdb.backends.names import quote
from privdb.catalog.metadata import ColumnMeta
from privdb.errors import UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Expr, Type
from privdb.sql.front.expr.render import column_expr, render_num, render_text
from privdb.sql.front.relation.model import (
    AMBIGUOUS,
    MAX_DERIVED_VALUES,
    UNIT,
    UNIT_ROWS,
    Relation,
    RelationMeta,
    Tables,
    hidden,
    multiplicity_of,
    unit_columns,
)
from privdb.sql.front.relation.unit_join import eager_join

__all__ = ["join_relations"]

_PRIVATE_JOIN = (
    "two private tables join only ON their common privacy unit (e.g. people.pid = visits.pid), so that every "
    "joined row belongs to one person; other joins of private tables have no bound on how many rows one "
    "person reaches"
)


def _side_names(rel: Relation, other: Relation, qualifier: str, taken: set[str]) -> dict[str, str]:
    """Internal name of each of ``rel``'s columns in the join: kept where unique, else ``qualifier.name``."""
    out: dict[str, str] = {}
    other_names = {n.lower() for n in other.meta.columns}
    for name in rel.meta.columns:
        new = name
        if hidden(name):
            new = f"{name}_{qualifier}" if name.lower() in other_names else name
        elif name.lower() in other_names or name.lower() in taken:
            new = f"{qualifier}.{name}"
        while new.lower() in taken:  # a self-join without distinct aliases: still one name per column
            new = f"{qualifier}.{new}"
        taken.add(new.lower())
        out[name] = new
    return out


def _qualifiers(rel: Relation) -> list[str]:
    meta = rel.meta
    assert isinstance(meta, RelationMeta)
    return [q for q in meta.scope if q is not None]


def _conjuncts(condition: Expr) -> list[Expr]:
    """The top-level conjuncts of an ON condition, in order."""
    if condition.op == "and":
        return [c for arg in condition.args for c in _conjuncts(arg)]
    return [condition]


def _as_stored(term: Expr) -> bool:
    """An equality of two columns stored alike: compared as stored, with no conversion."""
    if term.op != "eq" or not all(a.is_column and a.portable for a in term.args):
        return False
    a, b = term.args
    return (a.value.storage or a.value.type) == (b.value.storage or b.value.type) and a.type is b.type


def _compared_sql(column: Expr) -> str:
    """A column as an equality of two columns not stored alike reads it (expr.render's operands)."""
    if column.type is Type.NUM:
        return render_num(column)
    if column.type is Type.TEXT:
        return render_text(column)
    return expr.render(column)


def _join_term(term: Expr) -> tuple[str, bool]:
    """A conjunct as SQL, and whether it is total on every engine. An equality of two columns stored alike
    (``p.pid = v.pid``) compares them as stored: no cast, so it cannot fail on any engine."""
    if _as_stored(term):
        a, b = term.args
        return f"({quote(a.value.name)} = {quote(b.value.name)})", True
    return expr.render(term), term.portable


def join_relations(left: Relation, right: Relation, join: exp.Join, tables: Tables) -> Relation:
    """The relation ``left JOIN right`` (module doc), or a refusal that says why."""
    side = str(join.args.get("side") or "").upper()
    kind = str(join.args.get("kind") or "").upper()
    if kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL") or side == "FULL":
        raise UnsupportedQuery(
            f"{(side or kind)} JOIN is not supported: write INNER or LEFT JOIN with the private table first "
            "(a FULL join keeps rows no person matched)"
        )
    if join.args.get("method") or join.args.get("global"):
        raise UnsupportedQuery(f"{join.args.get('method')} JOIN is not supported; write INNER or LEFT JOIN")
    on, using = join.args.get("on"), join.args.get("using")
    if kind == "CROSS" and (on is not None or using):
        raise UnsupportedQuery("a CROSS JOIN takes no ON or USING; write JOIN … ON instead")
    if on is None and not using:
        if left.public == right.public or side:
            raise UnsupportedQuery(
                "a JOIN needs ON a = b or USING (…); a join without a condition is a CROSS JOIN, accepted "
                "only between a private table and a public one (FROM t CROSS JOIN p, or FROM t, p)"
            )
        on = exp.true()  # CROSS JOIN / FROM a, b with a public table: exactly JOIN … ON TRUE
    if side == "RIGHT" and (left.public or not right.public):
        raise UnsupportedQuery(
            "RIGHT JOIN is supported only with a public relation on the right (private RIGHT JOIN "
            "(SELECT DISTINCT k FROM public_table) g ON … GROUP BY g.k: every public key); otherwise "
            "write INNER or LEFT JOIN with the private table first (a RIGHT join keeps rows no person "
            "matched)"
        )
    if left.public and not right.public:
        if side == "LEFT":
            raise UnsupportedQuery(
                "a LEFT JOIN that preserves a public table would release which public rows no person "
                "matched; put the private table first (private LEFT JOIN public) or use INNER JOIN"
            )
    elif not left.public and not right.public:
        if left.meta.privacy_unit is None or right.meta.privacy_unit is None:
            raise UnsupportedQuery(f"{_PRIVATE_JOIN}; a table without a privacy_unit has none")
        if left.meta.neighbouring != right.meta.neighbouring:
            raise UnsupportedQuery(
                "the two private tables declare different neighbouring relations (add_remove and "
                "substitute); a join needs one"
            )
    taken: set[str] = set()
    lnames = _side_names(left, right, (_qualifiers(left) or ["l"])[0], taken)
    rnames = _side_names(right, left, (_qualifiers(right) or ["r"])[0], taken)
    columns: dict[str, ColumnMeta] = {}
    for rel, names in ((left, lnames), (right, rnames)):
        for old, new in names.items():
            columns[new] = ColumnMeta(**{**rel.meta.columns[old].__dict__, "name": new})
    scope: dict[str | None, dict[str, str]] = {None: {}}
    ambiguous: set[str] = set()
    for rel, names in ((left, lnames), (right, rnames)):
        meta = rel.meta
        assert isinstance(meta, RelationMeta)
        for qualifier, visible in meta.scope.items():
            if qualifier is None:
                for low, internal in visible.items():
                    mapped = names[internal] if internal else ""
                    if low in scope[None] and scope[None][low] != mapped:
                        ambiguous.add(low)
                    scope[None][low] = mapped
                continue
            if qualifier in scope:  # two tables known by one name (a self-join's table name)
                scope[qualifier] = {AMBIGUOUS: ""}
                continue
            scope[qualifier] = {low: (names[i] if i else "") for low, i in visible.items()}
    using_names = [u.name.lower() for u in (using or [])]
    for low in ambiguous:
        scope[None][low] = "" if low not in using_names else scope[None][low]
    for low in using_names:  # USING (c): unqualified c is the left side's
        lmeta = left.meta
        assert isinstance(lmeta, RelationMeta)
        rmeta_ = right.meta
        assert isinstance(rmeta_, RelationMeta)
        lc, rc = lmeta.scope[None].get(low), rmeta_.scope[None].get(low)
        if not lc or not rc:
            raise UnsupportedQuery(f"USING ({low}): both sides of the JOIN need a column {low!r}")
        scope[None][low] = lnames[lc]
    lunits = {lnames[u] for u in unit_columns(left.meta)}
    runits = {rnames[u] for u in unit_columns(right.meta)}
    # a LEFT JOIN's right side is NULL where nothing matched: its unit column is not the unit there
    units = lunits | (runits if side != "LEFT" else set())
    private_pair = not left.public and not right.public
    unit = (
        lnames[left.meta.privacy_unit]
        if left.meta.privacy_unit
        else (rnames[right.meta.privacy_unit] if right.meta.privacy_unit and not right.public else None)
    )
    draft = RelationMeta(
        name=f"{left.meta.name} JOIN {right.meta.name}", columns=columns, privacy_unit=unit,
        neighbouring=left.meta.neighbouring if not left.public else right.meta.neighbouring,
        scope=scope, unit_columns=frozenset(units),
    )  # fmt: skip
    # the condition, over the joined scope (names unique, so it renders unqualified)
    portable = left.portable and right.portable
    if using:
        conjuncts: list[Expr] = []
        for low in using_names:
            lname = lnames[left.meta.scope[None][low]]  # type: ignore[attr-defined]
            rname = rnames[right.meta.scope[None][low]]  # type: ignore[attr-defined]
            a, b = column_expr(columns[lname], lname), column_expr(columns[rname], rname)
            if a.type is not b.type:
                raise UnsupportedQuery(
                    f"USING ({low}): the two columns hold different types ({a.type.value} and "
                    f"{b.type.value}); join columns of one type"
                )
            conjuncts.append(Expr("eq", Type.BOOL, (a, b), portable=False, source=f"{low} = {low}"))
    else:
        assert on is not None
        conjuncts = _conjuncts(expr.check(on, draft, "JOIN … ON", Type.BOOL))
    rendered = [_join_term(c) for c in conjuncts]
    condition_sql = " AND ".join(sql for sql, _ in rendered)
    portable = portable and all(ok for _, ok in rendered)
    lcols, rcols = set(lnames.values()), set(rnames.values())
    oriented: list[tuple[str, str, bool]] = []  # (left column, right column, compared as stored)
    for c in conjuncts:
        if c.op == "eq" and c.args[0].is_column and c.args[1].is_column:
            a, b = c.args
            if a.value.name in rcols:
                a, b = b, a
            if a.value.name in lcols and b.value.name in rcols:
                oriented.append((a.value.name, b.value.name, _as_stored(c)))
    m, g, multiplicity = left.meta.max_contributions, left.meta.max_groups, multiplicity_of(left.meta)
    carries = False
    if private_pair:
        on_units = [stored for a, b, stored in oriented if a in lunits and b in runits]
        if not on_units:
            raise UnsupportedQuery(
                f"{_PRIVATE_JOIN}: add {_unit_hint(left, lnames)} = {_unit_hint(right, rnames)} to ON"
            )
        if not any(on_units):
            raise UnsupportedQuery(
                "the two privacy unit columns are stored as different types, so comparing them would "
                "convert them (two people's ids could become equal); join privacy units stored alike"
            )
        m = left.meta.max_contributions * right.meta.max_contributions
        g = max(left.meta.max_groups, right.meta.max_groups)
    else:
        private, public, pnames = (left, right, rnames) if right.public else (right, left, lnames)
        m, g, multiplicity = (
            private.meta.max_contributions,
            private.meta.max_groups,
            multiplicity_of(private.meta),
        )
        k = None
        if (private.meta.privacy_unit is None or private.carries_unit_rows) and not private.public:
            # a private row meeting k public rows counts k times; k is counted on the public keys as the
            # join compares them (converted where they are not compared as stored)
            inverse = {v: k for k, v in pnames.items()}
            key_sql: list[str] = []
            for lcol, rcol, stored in oriented:
                name = inverse[rcol if public is right else lcol]
                key = column_expr(public.meta.columns[name], name)
                key_sql.append(expr.render(key) if stored else _compared_sql(key))
            k = tables.max_matches(public, key_sql)
            if private.meta.privacy_unit is None:
                multiplicity *= max(k, 1)
        # with unique public keys a unit keeps at most its base rows: its stored row count still applies
        carries = (
            private.carries_unit_rows and k is not None and k <= 1 and (private is left or side != "LEFT")
        )
    if side == "RIGHT":  # every public key a group: the public side's values as its columns' domains
        for old, new in rnames.items():
            if not hidden(old) and (domain := _public_domain(right, old, tables)) is not None:
                columns[new] = replace(columns[new], values=domain)
    rmeta = RelationMeta(
        name=draft.name, columns=columns, privacy_unit=unit, max_contributions=m, max_groups=g,
        neighbouring=draft.neighbouring, public=left.public and right.public, scope=scope,
        multiplicity=multiplicity, unit_columns=frozenset(units),
    )  # fmt: skip
    join_word = "LEFT JOIN" if side == "LEFT" else "JOIN"

    carrier = left if not private_pair and not left.public else right

    def sql(sources: Mapping[str, str]) -> str:
        lsel = ", ".join(f"{quote(o)} AS {quote(n)}" for o, n in lnames.items())
        rsel = ", ".join(f"{quote(o)} AS {quote(n)}" for o, n in rnames.items())
        if carries and UNIT_ROWS in sources:  # the private side's hidden per-unit row count, passed through
            if carrier is left:
                lsel += f", {sources[UNIT_ROWS]}"
            else:
                rsel += f", {sources[UNIT_ROWS]}"
        return (
            f"SELECT * FROM (SELECT {lsel} FROM {left.source(sources)} AS _l) AS _jl {join_word} "
            f"(SELECT {rsel} FROM {right.source(sources)} AS _r) AS _jr ON {condition_sql}"
        )

    tables_read = (
        left.tables + right.tables if not left.public or right.public else right.tables + left.tables
    )
    return Relation(
        rmeta, tables_read, sql, public=left.public and right.public, portable=portable,
        carried_unit=carrier.carried_unit if carries else None,
        outer_nulls=frozenset(lnames.values()) if side == "RIGHT" else frozenset(),
        eager=eager_join(left, right, (lnames, rnames), oriented, not side and len(conjuncts) == 1),
    )  # fmt: skip


def _public_domain(public: Relation, column: str, tables: Tables) -> tuple[Any, ...] | None:
    """The distinct non-NULL values of one column of a public relation (public data), or None past
    ``MAX_DERIVED_VALUES``: the keys a RIGHT JOIN onto it releases."""

    def sql(sources: Mapping[str, str]) -> str:
        return f"SELECT {quote(column)} FROM {public.source(sources)} AS _d WHERE {quote(column)} IS NOT NULL"

    one = Relation(public.meta, public.tables, sql, public=True)
    values = tables.public_values(one, MAX_DERIVED_VALUES + 1)
    return tuple(values) if 0 < len(values) <= MAX_DERIVED_VALUES else None


def _unit_hint(rel: Relation, names: dict[str, str]) -> str:
    unit = rel.meta.privacy_unit
    if unit is None:
        return "the privacy unit"
    if unit == UNIT:
        return f"{rel.meta.name}.<its privacy unit>"
    return f"{(_qualifiers(rel) or [rel.meta.name])[0]}.{unit}"
