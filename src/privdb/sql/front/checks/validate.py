"""Validate a parsed DP-SELECT against its relation's metadata and resolve what it asks for.

The FROM clause has become one relation (privdb.sql.front.relation.model: a table, subquery, CTE or JOIN).
Over it: a select list of aggregates (privdb.sql.front.checks.aggregates), GROUP BY keys, expressions over
aggregates and constants (post-processing, privdb.sql.front.formulas.compiler), a WHERE predicate and keys of
the closed expression language (privdb.sql.front.expr), HAVING (a predicate over the noisy aggregates and
keys: post-processing; an aggregate used only there is computed and paid like any other), DISTINCT (GROUP BY
of the selected columns), ORDER BY and LIMIT/TOP on the noisy result. A query without aggregates but with keys
(``GROUP BY col`` or ``DISTINCT col``) is a key release. Every other clause is refused by an allow-list.

The clauses read on their own (the allow-list, WHERE, GROUP BY, aliases in HAVING and ORDER BY) are in
privdb.sql.front.checks.clauses; this module resolves the outputs: each aggregate once, the formulas' leaves,
and the order of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from privdb.catalog.metadata import ColumnMeta, TableMeta
from privdb.errors import PrivdbError, UnsupportedQuery
from privdb.sql.front import expr
from privdb.sql.front.checks.aggregates import AggregateRef, Arguments, is_aggregate
from privdb.sql.front.checks.clauses import (
    AGGREGATE_CLAUSES,
    check_clauses,
    check_predicate,
    expand_aliases,
    filters_as_case,
    group_by,
    has_aggregate,
    strip_parens,
)
from privdb.sql.front.expr import Expr
from privdb.sql.front.expr.types import stored_number
from privdb.sql.front.formulas.compiler import Formula, compile_formula, compile_predicate

__all__ = ["KeyRef", "Resolved", "hidden_formula", "resolve"]


@dataclass(frozen=True)
class KeyRef:
    """A GROUP BY key: its output name, engine SQL and the columns it reads."""

    output: str
    sql: str  # DuckDB SQL of the checked expression (expr.render)
    columns: tuple[ColumnMeta, ...]
    node: exp.Expression
    in_select: bool
    expr: Expr | None = None


@dataclass(frozen=True)
class Resolved:
    """What a DP-SELECT asks for, checked against the metadata."""

    table: TableMeta
    where: Expr | None  # checked, boolean
    keys: tuple[KeyRef, ...]
    aggregates: tuple[AggregateRef, ...]
    outputs: tuple[tuple[str, str, int], ...]  # (name, "key" | "aggregate" | "formula", index)
    order: tuple[tuple[str, bool], ...]  # (output or hidden aggregate name, descending)
    limit: int | None
    formulas: tuple[Formula, ...] = ()
    having: Formula | None = None
    leaves: tuple[tuple[str, int], ...] = ()  # a formula's leaf i: ("aggregate" | "key", index)
    computed: tuple[tuple[str, str], ...] = ()  # hidden columns of aggregate arguments: (name, SQL)
    portable: bool = True  # the computed arguments are total on every engine


class _Resolver:
    def __init__(self, select: exp.Select, table: TableMeta) -> None:
        self.select = select
        self.table = table
        units = getattr(table, "unit_columns", None)
        self.arguments = Arguments(
            table,
            units if units is not None else frozenset({table.privacy_unit} - {None}),  # type: ignore[arg-type]
        )
        self.aggregates: list[AggregateRef] = []
        self.by_text: dict[str, int] = {}
        self.leaves: list[tuple[str, int]] = []
        self.key_sql: list[str] = []
        self.key_exprs: list[expr.Expr] = []
        self.formulas: list[Formula] = []

    # ---- aggregates and formula leaves
    def register(self, node: exp.Expression, output: str | None) -> int:
        """The index of an aggregate (one per distinct text); ``output`` None: hidden (HAVING, formulas)."""
        node = strip_parens(node)
        text = node.sql(dialect="duckdb")
        found = self.by_text.get(text)
        if found is None:
            name = output if output is not None else text
            self.aggregates.append(self.arguments.aggregate(node, name, output is not None))
            self.by_text[text] = found = len(self.aggregates) - 1
        elif output is not None and not self.aggregates[found].visible:
            self.aggregates[found] = replace(self.aggregates[found], output=output, visible=True)
        elif output is not None:
            raise UnsupportedQuery(f"{text} is selected twice; select each aggregate once")
        return found

    def selected(self, node: exp.Expression) -> bool:
        """Whether the aggregate ``node`` is already an output column."""
        found = self.by_text.get(strip_parens(node).sql(dialect="duckdb"))
        return found is not None and self.aggregates[found].visible

    def leaf_of(self, role: str, index: int) -> int:
        pair = (role, index)
        if pair not in self.leaves:
            self.leaves.append(pair)
        return self.leaves.index(pair)

    def key_index(self, node: exp.Expression) -> int | None:
        try:
            rendered = expr.render(expr.check(node, self.table, "a key"))
        except PrivdbError:
            return None
        return self.key_sql.index(rendered) if rendered in self.key_sql else None

    def leaf_kind(self, index: int) -> str:
        """A formula leaf's static kind (privdb.sql.front.formulas.compiler.LeafKind): aggregates are numbers
        (MODE: its column's values), keys their type in the language."""
        role, i = self.leaves[index]
        if role == "aggregate":
            return "any" if self.aggregates[i].kind == "mode" else "number"
        key = self.key_exprs[i]
        if key.op == "column" and stored_number(key.value):
            return "numtext"
        return {expr.Type.NUM: "number", expr.Type.TEXT: "text", expr.Type.BOOL: "boolean"}.get(
            key.type, "any"
        )

    def leaf(self, node: exp.Expression) -> int | None:
        node = strip_parens(node)
        if is_aggregate(node):
            return self.leaf_of("aggregate", self.register(node, None))
        if has_aggregate(node) or not any(isinstance(n, exp.Column) for n in node.walk()):
            return None
        index = self.key_index(node)
        return None if index is None else self.leaf_of("key", index)

    # ---- the query
    def resolve(self) -> Resolved:
        filters_as_case(self.select)
        select, table = self.select, self.table
        check_clauses(select, AGGREGATE_CLAUSES)
        where_node = select.args.get("where")
        where = check_predicate(where_node.this, table, "WHERE") if where_node is not None else None
        if where_node is not None and has_aggregate(where_node.this):
            raise UnsupportedQuery("WHERE filters rows and cannot hold an aggregate; use HAVING")
        items = list(select.expressions)
        resolved_groups = group_by(select, table, items)
        key_exprs = [expr.check(g, table, "GROUP BY") for g in resolved_groups]
        self.key_sql = [expr.render(k) for k in key_exprs]
        self.key_exprs = key_exprs
        if len(set(self.key_sql)) != len(self.key_sql):
            raise UnsupportedQuery("GROUP BY lists the same key twice")
        for k in key_exprs:
            for col in k.columns:
                if col.identifier or col.private_id:
                    raise UnsupportedQuery(f"column {col.name!r} identifies people and is never released")

        outputs: list[tuple[str, str, int]] = []
        formulas: list[Formula] = []
        key_outputs: dict[int, str] = {}
        for item in items:
            node = strip_parens(item.this if isinstance(item, exp.Alias) else item)
            text = node.sql(dialect="duckdb")
            name = item.alias if isinstance(item, exp.Alias) else (
                node.name if isinstance(node, exp.Column) else text
            )  # fmt: skip
            if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and node.is_star):
                raise UnsupportedQuery("SELECT * returns rows; list aggregates such as COUNT(*) instead")
            if is_aggregate(node) and not self.selected(node):
                outputs.append((name, "aggregate", self.register(node, name)))
                continue
            if is_aggregate(node):  # selected again: the same noisy value in a second column (no more ε)
                if not isinstance(item, exp.Alias):  # as DuckDB names it, made unique (pandas' ``_1``)
                    taken = {o[0].lower() for o in outputs}
                    name = next(
                        f"{name}_{i}" for i in range(1, len(items) + 1) if f"{name}_{i}".lower() not in taken
                    )
                outputs.append((name, "aggregate", self.register(node, None)))
                continue
            if not has_aggregate(node):
                index = self.key_index(node)
                if index is not None:
                    key_outputs[index] = name
                    outputs.append((name, "key", index))
                    continue
                if any(isinstance(n, exp.Column) for n in node.walk()):
                    expr.check(node, table, "the select list")  # a bad expression says what is wrong
                    raise UnsupportedQuery(
                        f"{text} is neither an aggregate nor a GROUP BY key; a DP-SELECT releases only "
                        "aggregates, expressions over them, and the keys they are grouped by"
                    )
            formulas.append(compile_formula(node, self.leaf, "the select list", self.leaf_kind))
            self.formulas = formulas
            outputs.append((name, "formula", len(formulas) - 1))
        having_node = select.args.get("having")
        having = (
            compile_predicate(
                expand_aliases(having_node.this, items, table), self.leaf, "HAVING", self.leaf_kind
            )
            if having_node is not None
            else None
        )
        if not self.aggregates and not key_exprs:
            raise UnsupportedQuery(
                "the query asks for no aggregate and no key: add COUNT(*) (or another aggregate), or GROUP "
                "BY the columns whose values you want"
            )
        names = [o[0] for o in outputs]
        if len({n.lower() for n in names}) != len(names):
            raise UnsupportedQuery("two output columns have the same name; give them distinct aliases (AS …)")
        keys = tuple(
            KeyRef(
                output=key_outputs.get(i, f"key{i}"), sql=self.key_sql[i], columns=key_exprs[i].columns,
                node=resolved_groups[i], in_select=i in key_outputs, expr=key_exprs[i],
            )
            for i in range(len(resolved_groups))
        )  # fmt: skip
        order = self.order(outputs, keys, items, formulas)
        limit = None
        limit_node = select.args.get("limit")
        if limit_node is not None:
            value = limit_node.expression
            if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
                raise UnsupportedQuery("LIMIT takes a whole number")
            limit = int(value.this)
        computed = tuple((name, sql) for sql, (name, _) in self.arguments.computed.items())
        return Resolved(
            table, where, keys, tuple(self.aggregates), tuple(outputs), order, limit, tuple(formulas),
            having, tuple(self.leaves), computed, self.arguments.portable,
        )  # fmt: skip

    def order(
        self,
        outputs: list[tuple[str, str, int]],
        keys: tuple[KeyRef, ...],
        items: list[exp.Expression],
        formulas: list[Formula],
    ) -> tuple[tuple[str, bool], ...]:
        """The output order: by output columns, aggregates, or expressions over them and the keys (a hidden
        formula, named :func:`hidden_formula`; post-processing like any other)."""
        order: list[tuple[str, bool]] = []
        order_node = self.select.args.get("order")
        if order_node is None:
            return ()
        for ordered in order_node.expressions:
            target = strip_parens(ordered.this)
            text = target.sql(dialect="duckdb")
            match = None
            for name, role, index in outputs:
                by_name = (
                    isinstance(target, exp.Column)
                    and not target.table
                    and target.name.lower() == name.lower()
                )
                by_aggregate = (
                    role == "aggregate" and self.aggregates[index].node.sql(dialect="duckdb") == text
                )
                by_key = role == "key" and keys[index].node.sql(dialect="duckdb") == text
                by_formula = role == "formula" and self.formulas[index].text == text
                if by_name or by_aggregate or by_key or by_formula:
                    match = name
                    break
            if isinstance(target, exp.Literal) and not target.is_string and str(target.this).isdigit():
                pos = int(target.this)
                if 1 <= pos <= len(outputs):
                    match = outputs[pos - 1][0]
            if match is None and is_aggregate(target):  # ORDER BY COUNT(*) not selected: a hidden aggregate
                match = self.aggregates[self.register(target, None)].output
            if match is None and not (isinstance(target, exp.Literal | exp.Column)):
                # ORDER BY n * 2, -AVG(x), ABS(a - b): an expression over output columns, aggregates and keys
                formula = compile_formula(
                    expand_aliases(target, items, self.table, keys=True),
                    self.leaf,
                    "ORDER BY",
                    self.leaf_kind,
                )
                formulas.append(formula)
                match = hidden_formula(len(formulas) - 1)
            if match is None:
                raise UnsupportedQuery(
                    f"ORDER BY {text}: order by an output column (name, alias or position) or an aggregate"
                )
            order.append((match, bool(ordered.args.get("desc"))))
        return tuple(order)


def hidden_formula(index: int) -> str:
    """The sort name of a formula that orders the rows without being an output column (ORDER BY n * 2)."""
    return f"\x00formula{index}"


def resolve(select: exp.Select, table: TableMeta) -> Resolved:
    """Check the SELECT's shape and names; return its keys, aggregates, formulas and output order."""
    return _Resolver(select, table).resolve()
