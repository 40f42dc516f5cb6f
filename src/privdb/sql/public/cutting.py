"""Cut what can grow: every result of the operators in ``growing`` (``||``, CONCAT, REPLACE…) and
REPLACE's input, wrapped in a cut to a public length, so that no query of the plain-SELECT or catalog
languages builds a value whose size the data (or a doubling chain) controls (docs/proofs/sql.md)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

__all__ = ["cut_growing"]


def cut_growing(
    tree: exp.Expr,
    growing: tuple[type[exp.Expr], ...],
    name_of: Callable[[exp.Expr], str],
    cutter: Callable[[exp.Expr], exp.Expr],
) -> exp.Expr:
    """``tree`` with each ``growing`` node, and REPLACE's input, replaced by ``cutter(node)`` (in place;
    returns the tree). An unaliased select item that holds one is first aliased ``name_of(item)``, so the
    cut keeps the column's name; a plain column keeps its own."""
    for select in list(tree.find_all(exp.Select)):
        for item in list(select.expressions):
            if not isinstance(item, exp.Alias) and item.find(*growing) is not None:
                name = item.alias_or_name if isinstance(item, exp.Column) else name_of(item)
                alias = exp.Alias(alias=exp.to_identifier(name, quoted=True))
                item.replace(alias)
                alias.set("this", item)
    for node in list(tree.find_all(*growing)):
        if isinstance(node, exp.Replace):
            _replace(node.this, cutter)
        _replace(node, cutter)
    return tree


def _replace(node: exp.Expr, cutter: Callable[[exp.Expr], exp.Expr]) -> None:
    placeholder = exp.Null()
    node.replace(placeholder)
    placeholder.replace(cutter(node))
