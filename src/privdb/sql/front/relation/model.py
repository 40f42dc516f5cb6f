"""The FROM clause of a DP-SELECT as one relation: a virtual table with its own public metadata.

A :class:`Relation` is the SQL that computes the rows (from the base tables' engine names) and a
:class:`RelationMeta` that describes its columns (types, bounds, public domains, which columns identify
people) and its privacy unit, so that the rest of the pipeline (validate → plan → rewrite → noise) treats it
exactly as a table. This module holds the value and what every builder of one shares (derived columns'
metadata, the hidden privacy unit); which FROM forms are accepted and how each is built:
privdb.sql.front.relation.from_clause, privdb.sql.front.relation.joins, privdb.sql.front.per_unit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from privdb.backends.names import HIDDEN_PREFIX, quote
from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import PrivdbError, UnknownColumn, UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.expr import Expr, Type
from privdb.sql.front.expr.bounds import bound
from privdb.suggest import did_you_mean

__all__ = [
    "Eager",
    "Relation",
    "RelationMeta",
    "Tables",
    "derived_column",
    "derived_meta",
    "hidden",
    "multiplicity_of",
    "unit_columns",
]

UNIT = f"{HIDDEN_PREFIX}unit"  # the privacy unit, carried hidden through subqueries and joins
UNIT_ROWS = "\0unit_rows"  # key of ``sources``: the quoted hidden per-unit row count column, when used
AMBIGUOUS = "\0"  # marks a qualifier that names two tables of FROM (a self-join's table name)


def hidden(name: str) -> bool:
    """A name reserved for privdb's hidden columns, in any case (engines match names case-insensitively)."""
    return name.lower().startswith(HIDDEN_PREFIX)


MAX_DERIVED_VALUES = 10_000  # public values of a derived key column, computed from the source column's


@dataclass(frozen=True)
class RelationMeta(TableMeta):
    """A relation's metadata: columns by internal (unique) name, and how the query's names reach them.

    ``scope`` maps a qualifier (lower case; ``None`` for unqualified names) to the names it makes visible
    (lower case) and their internal names ("" where an unqualified name is ambiguous)."""

    scope: Mapping[str | None, Mapping[str, str]] = field(default_factory=dict, compare=False)
    multiplicity: int = 1  # rows per base row at most (joins with public tables, without a privacy unit)
    unit_columns: frozenset[str] = frozenset()  # internal names whose value is the privacy unit

    def qualified(self, qualifier: str | None, name: str) -> ColumnMeta:
        names = self.scope.get(qualifier.lower() if qualifier else None)
        if names is None:
            qualifiers = [q for q in self.scope if q is not None]
            raise UnknownColumn(
                f"{qualifier}.{name}: no table or alias {qualifier!r} in FROM"
                f"{did_you_mean(qualifier or '', qualifiers)}"
            )
        if AMBIGUOUS in names:
            raise UnsupportedQuery(
                f"{qualifier}.{name}: {qualifier!r} names two tables of FROM; use the aliases you gave them"
            )
        internal = names.get(name.lower())
        if internal is None:
            where = f"{qualifier!r}" if qualifier else "the FROM clause"
            raise UnknownColumn(f"{where} has no column {name!r}{did_you_mean(name, list(names))}")
        if internal == "":
            owners = [q for q, cols in self.scope.items() if q is not None and name.lower() in cols]
            raise UnsupportedQuery(
                f"column {name!r} is in more than one table of FROM ({', '.join(sorted(owners))}); qualify "
                f"it, e.g. {owners[0] if owners else 't'}.{name}"
            )
        return self.columns[internal]

    def column(self, name: str) -> ColumnMeta:
        if name in self.columns and not hidden(name):
            return self.columns[name]
        return self.qualified(None, name)


@dataclass(frozen=True)
class Relation:
    """Rows to aggregate: the SQL that makes them, over the base tables, and their metadata."""

    meta: TableMeta
    tables: tuple[str, ...]  # stored names of every base table read (private and public)
    sql: Callable[[Mapping[str, str]], str] | None = None  # given each table's quoted engine name
    public: bool = False
    portable: bool = True  # every expression in it is total on every engine (not only DuckDB)
    # the privacy unit of its one private base table, when each unit has at most as many rows here as there:
    # the base table's hidden per-unit row count (sources[UNIT_ROWS], when the rewrite uses it) passes
    # through, and units small there need no bounding here either (row-wise subqueries, lookups in public
    # tables with unique keys); None: no such count applies
    carried_unit: str | None = None
    # a top-level RIGHT JOIN onto a public relation (privdb.sql.front.relation.joins): the private side's
    # internal column names, NULL in SQL's rows for public keys no one matched, which the relation leaves out
    outer_nulls: frozenset[str] = frozenset()
    eager: Eager | None = None  # a join whose many-rows side may be aggregated first (unit_join.py)

    @property
    def carries_unit_rows(self) -> bool:
        return self.carried_unit is not None

    @property
    def base(self) -> str:
        """The table whose engine runs the query (the first private one)."""
        return self.tables[0]

    def source(self, sources: Mapping[str, str]) -> str:
        """The relation as a FROM item: the quoted table, or a parenthesised SELECT."""
        return sources[self.base] if self.sql is None else f"({self.sql(sources)})"

    @property
    def plain(self) -> bool:
        """A stored table read as it is (its hidden per-unit row counts are usable)."""
        return self.sql is None


@dataclass(frozen=True)
class Eager:
    """``one JOIN many ON one.unit = many.unit`` (INNER, that one condition), ``one`` declaring at most one
    row per unit: each side, its columns' names in the join (side name -> joined name) and its unit's joined
    name. The rewrite may aggregate ``many`` per unit before the join (privdb.sql.run.eager)."""

    one: Relation
    many: Relation
    one_names: Mapping[str, str]
    many_names: Mapping[str, str]
    one_unit: str
    many_unit: str


class Tables:
    """What building a relation needs from the database: each table's metadata (authorised for the
    analyst), the largest number of rows of a public relation sharing a key, and public values mapped
    through an expression (both read public data only)."""

    def meta(self, name: str) -> TableMeta:  # pragma: no cover - interface
        raise NotImplementedError

    def max_matches(self, relation: Relation, keys: list[str]) -> int:  # pragma: no cover - interface
        """The most rows of a public relation sharing one value of ``keys`` (SQL over its columns)."""
        raise NotImplementedError

    def values_of(self, sql: str, column: ColumnMeta, values: list[Any]) -> tuple[Any, ...] | None:
        return None

    def public_values(self, relation: Relation, limit: int) -> list[Any]:  # pragma: no cover - interface
        """The distinct values of a public one-column relation (at most ``limit``)."""
        raise NotImplementedError


def derived_column(name: str, e: Expr, tables: Tables) -> ColumnMeta:
    """The metadata of a subquery's output column computed as ``e``: a column passed through keeps its
    facts; any other expression gets its type, bounds by interval arithmetic where they follow, public
    values where one column's public values map through it, and identifies people if any input does."""
    if e.is_column:
        plain = expr.render(e) == quote(e.value.name)
        storage = e.value.storage if plain else _storage(e.type)
        passed: ColumnMeta = replace(e.value, name=name, storage=storage)
        return passed
    identifying = any(c.identifier or c.private_id for c in e.columns)
    lower = upper = None
    integer = False
    if e.type in (Type.NUM, Type.BOOL) and not identifying:
        try:
            b = bound(e, name)
            lower, upper, integer = b.lower, b.upper, b.integer
        except PrivdbError:
            pass
    kind = {Type.NUM: "int" if integer else "float", Type.TEXT: "text", Type.BOOL: "bool", Type.DATE: "date"}
    values = None
    columns = {c.name: c for c in e.columns}
    if len(columns) == 1 and not identifying:
        (column,) = columns.values()
        domain = column.public_values(MAX_DERIVED_VALUES)
        if domain is not None and e.type in (Type.TEXT, Type.NUM, Type.BOOL):
            values = tables.values_of(expr.render(e), column, domain)
    return ColumnMeta(
        name=name,
        type=kind.get(e.type, "text"),
        lower=lower,
        upper=upper,
        values=values if values is None or len(values) <= MAX_DERIVED_VALUES else None,
        identifier=identifying,
        storage=_storage(e.type),
    )


def _storage(kind: Type) -> str:
    return {Type.NUM: "float", Type.BOOL: "bool", Type.DATE: "date"}.get(kind, "text")


def unit_columns(meta: TableMeta) -> frozenset[str]:
    if isinstance(meta, RelationMeta):
        return meta.unit_columns
    return frozenset({meta.privacy_unit}) if meta.privacy_unit else frozenset()


def multiplicity_of(meta: TableMeta) -> int:
    return meta.multiplicity if isinstance(meta, RelationMeta) else 1


def derived_meta(
    alias: str,
    outputs: list[tuple[str, str, ColumnMeta]],
    unit_sql: str | None,
    units: set[str],
    inner: TableMeta,
    m: int,
    g: int,
    public: bool,
) -> tuple[RelationMeta, str]:
    """A subquery's metadata and select list from its outputs ``(name, SQL, column)``: names unique and not
    reserved, and the privacy unit (``unit_sql`` over the inner relation) carried as a hidden column."""
    seen: set[str] = set()
    for name, _, _ in outputs:
        if hidden(name):
            raise UnsupportedQuery(f"names starting with {HIDDEN_PREFIX!r} are reserved for privdb")
        if name.lower() in seen:
            raise UnsupportedQuery(
                f"the subquery {alias!r} has two columns named {name!r}; give them distinct names (AS …)"
            )
        seen.add(name.lower())
    columns = {name: col for name, _, col in outputs}
    select_sql = [f"{sql} AS {quote(name)}" for name, sql, _ in outputs]
    if unit_sql is not None:
        columns[UNIT] = ColumnMeta(UNIT, "text", private_id=True, storage="text")
        select_sql.append(f"{unit_sql} AS {quote(UNIT)}")
        units = units | {UNIT}
    shown = {name.lower(): name for name, _, _ in outputs}
    meta = RelationMeta(
        name=alias,
        columns=columns,
        privacy_unit=UNIT if unit_sql is not None else None,
        max_contributions=m,
        max_groups=g,
        neighbouring=inner.neighbouring,
        public=public,
        scope={None: shown, alias.lower(): dict(shown)},
        multiplicity=multiplicity_of(inner),
        unit_columns=frozenset(units),
    )
    return meta, ", ".join(select_sql)
