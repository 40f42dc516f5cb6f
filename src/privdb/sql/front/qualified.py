"""Names as PostgreSQL clients write them: ``public.people``, ``privdb.public.people``, ``"public"."people"``.

privdb's tables live in one schema, which the PostgreSQL endpoint's catalog calls ``public`` (psql's
``\\dt``, Superset's dataset picker and DBeaver's navigator all show ``public.people``), and BI tools then
qualify every name with it: ``SELECT … FROM public.fair``. A table or column qualified with the schema
``public`` (with or without a database name before it: a client may connect with any database name) is
the same as the bare name; any other schema is refused by the stages that read the tree, as before.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["PUBLIC_SCHEMA", "unqualify"]

PUBLIC_SCHEMA = "public"


def unqualify(tree: exp.Expr) -> exp.Expr:
    """``tree`` with the ``public`` schema (and a database name before it) taken off table and column
    names, in place; returns the tree."""
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.db.lower() == PUBLIC_SCHEMA:
            table.set("db", None)
            table.set("catalog", None)
    for column in tree.find_all(exp.Column):
        if column.args.get("db") is not None and column.db.lower() == PUBLIC_SCHEMA:
            column.set("db", None)
            column.set("catalog", None)
    return tree
