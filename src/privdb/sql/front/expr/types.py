"""The typed expression tree: four scalar types, one node class, and the public limits of the language.

Every value an expression can produce is a scalar of one of four types (number, text, boolean, date) or
NULL: there is no list, struct or map anywhere in the language, so a GROUP BY key or an aggregate's argument
is a scalar by construction (finding 1 of issue 13: a list key made noise fail only when a row passed WHERE).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from privdb.catalog.metadata import ColumnMeta
from privdb.catalog.values import all_numbers

__all__ = [
    "DEFAULT_MAX_LENGTH",
    "MAX_IN_LIST",
    "MAX_LITERAL_LENGTH",
    "MAX_NODES",
    "MAX_PATTERN_LENGTH",
    "MAX_RESULT_LENGTH",
    "Expr",
    "Type",
    "column_type",
    "stored_number",
]

# Public limits. Together they bound the work per row by a constant (docs/proofs/sql.md, "Outcomes").
MAX_NODES = 256  # nodes in one expression (WHERE, a key or an argument)
DEFAULT_MAX_LENGTH = 1000  # characters of a text column read by any function (metadata `max_length`)
MAX_RESULT_LENGTH = 4096  # characters a text function may produce (longer results are cut)
MAX_LITERAL_LENGTH = 1000  # characters of a text literal
MAX_PATTERN_LENGTH = 200  # characters of a LIKE pattern, regular expression or date format
MAX_IN_LIST = 1000  # values in one IN list


class Type(StrEnum):
    """The scalar types of the language; NULL is the type of the bare ``NULL`` literal only."""

    NUM = "number"
    TEXT = "text"
    BOOL = "boolean"
    DATE = "date"
    NULL = "null"


@dataclass(frozen=True)
class Expr:
    """A checked expression.

    ``op`` is ``column``, ``literal`` or the name of an operator or function of the allow-list
    (functions.py); ``value`` holds a literal's value, a column's metadata or a checked constant parameter
    (a LIKE pattern, a date part); ``double`` says the rendered SQL value is already a DOUBLE (numbers that
    are not are cast before any arithmetic); ``portable`` says its rendering is total on every engine, not
    only on DuckDB."""

    op: str
    type: Type
    args: tuple[Expr, ...] = ()
    value: Any = None
    double: bool = True
    portable: bool = True
    source: str = ""  # the SQL as the analyst wrote it (for names and messages)

    def walk(self) -> Iterator[Expr]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.args)

    @property
    def columns(self) -> tuple[ColumnMeta, ...]:
        """The columns the expression reads, in order of appearance (with repeats)."""
        found = [n.value for n in self.walk() if n.op == "column"]
        return tuple(reversed(found))

    @property
    def is_column(self) -> bool:
        return self.op == "column"

    @property
    def is_literal(self) -> bool:
        return self.op == "literal"


def column_type(column: ColumnMeta) -> Type:
    """A column's type in the language, from its public metadata."""
    if column.type in ("int", "float"):
        return Type.NUM
    if column.type == "bool":
        return Type.BOOL
    if column.type == "date":
        return Type.DATE
    if column.type == "category" and column.values and all_numbers(column.values):
        return Type.NUM
    return Type.TEXT


def stored_number(column: ColumnMeta) -> bool:
    """A column declared text whose engine stores numbers (SmartNoise's ``type: string`` over a CSV of codes,
    PUMS' sex 0/1): where it meets a number, or stands as a condition, it is read as the number it stores,
    as plain SQL on that engine reads it. Nothing can fail: the engine holds numbers, no conversion runs."""
    return column_type(column) is Type.TEXT and column.storage in ("int", "float")
