"""The types a file's columns are read as, and what they are called in a message.

DuckDB's CSV sniffer types each column from a sample of its first lines. Left alone, a column the metadata
declares a number but whose sample holds a word is read as text, and the load is refused for its type with no
line named; so a CSV is read with the types it must have (:func:`forced_types`), and a value that does not fit
is then a bad line the reader names by line and column (privdb.catalog.files.bad_lines). Rows added to a table
are read as the table's own types; a file a server receives is read as the owner's machine read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privdb.catalog.reading import ReadOptions
from privdb.errors import InvalidParameter
from privdb.suggest import did_you_mean

__all__ = [
    "APPEND_KEEPS_METADATA",
    "NUMBER",
    "append_columns",
    "declared_types",
    "described_type",
    "engine_type",
    "forced_types",
    "wrong_type",
]

APPEND_KEEPS_METADATA = (
    "rows added to a table keep its metadata: give none (to change it, load the whole table again, "
    "without append)"
)
NUMBER = "DOUBLE"  # what a column the metadata declares int or float is read as when the sniffer saw text

_INTEGERS = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
    "INT",
)  # fmt: skip


def engine_type(duck_type: str) -> str:
    """privdb's type name for a DuckDB column type."""
    t = duck_type.upper()
    if "[" in t or t.startswith(("STRUCT", "MAP", "UNION", "LIST", "JSON", "VARIANT")):
        return "nested"  # never a value of the expression language: read only as text (CAST … AS VARCHAR)
    if t in ("BOOLEAN", "BOOL"):
        return "bool"
    if t.startswith(_INTEGERS):
        return "int"
    if t.startswith(("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC")):
        return "float"
    if t.startswith(("DATE", "TIMESTAMP", "TIME")):
        return "date"
    return "text"


_DECLARED = {"int": "int", "integer": "int", "float": "float", "double": "float"} | {
    "text": "text", "string": "text", "varchar": "text"
}  # fmt: skip


def declared_types(spec: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The number and text columns a metadata spec declares (lower-cased name, int, float or text), as
    ``ReadOptions.declared`` takes them."""
    columns = (spec or {}).get("columns")
    if not isinstance(columns, dict):
        return ()
    found = []
    for name, col in columns.items():
        kind = str(col.get("type", "")).lower() if isinstance(col, dict) else ""
        if kind in _DECLARED:
            found.append((str(name).lower(), _DECLARED[kind]))
    return tuple(found)


def forced_types(sniffed: Mapping[str, str], options: ReadOptions) -> dict[str, str]:
    """The DuckDB type to read each column of a CSV as, where it is not the one the sniffer chose: the exact
    type asked for (``options.types``), else a number for a column the metadata declares one that the sniffer
    read otherwise (float: anything but a float; int: anything but a number, read as a float so that 3.5 is
    not rounded), and text for a column it declares text. Columns are matched by name, case aside."""
    exact, declared = dict(options.types), dict(options.declared)
    forced: dict[str, str] = {}
    for name, duck_type in sniffed.items():
        wanted = exact.get(name.lower())
        kind = engine_type(duck_type)
        if wanted is not None:
            if wanted.upper() != duck_type.upper():
                forced[name] = wanted
        elif (declared.get(name.lower()) == "float" and kind != "float") or (
            declared.get(name.lower()) == "int" and kind not in ("int", "float")
        ):
            forced[name] = NUMBER
        elif declared.get(name.lower()) == "text" and kind != "text":
            forced[name] = "VARCHAR"  # codes such as 02139 keep their leading zeros
    return forced


def described_type(column: str, duck_type: str | None, options: ReadOptions) -> str:
    """What a column's values must be, for a message naming a value that is not one: "a float (the type the
    metadata declares)", or the type read from the file's first lines."""
    declared = dict(options.declared).get(column.lower())
    exact = dict(options.types).get(column.lower())
    if declared in ("int", "float"):
        return f"{_article(declared)} (the type the metadata declares)"
    if exact is not None:
        return f"{_article(engine_type(exact))} (the column's type)"
    if duck_type is None:
        return "of the column's type (read from the file's first lines; the metadata may declare another)"
    kind = engine_type(duck_type)
    return f"{_article(kind)} (the type read from the file's first lines; the metadata may declare another)"


def wrong_type(column: str, bad: int, lines: int, first: int, options: ReadOptions) -> str | None:
    """The refusal of a column read as the type asked for when ``bad`` of its ``lines`` do not fit it (the
    ``first`` such line named) and that is most of them (None when it is a few): the metadata's type, or
    the file, is the wrong one."""
    if 2 * bad <= lines:
        return None
    share = (
        f"line {first}, the only line"
        if lines == 1
        else f"{bad:,} of {lines:,} lines, the first line {first}"
    )
    declared = dict(options.declared).get(column.lower())
    if declared is not None:
        return (
            f"column {column!r}: declared {declared} but the data holds text (not numbers on {share}); fix "
            "the type in the metadata or the data (a marker of missing values: --null, e.g. --null NA)"
        )
    exact = dict(options.types).get(column.lower())
    if exact is None:
        return None
    return (
        f"column {column!r} is {engine_type(exact)} but most of the file's values do not fit it (on "
        f"{share}); is it the right file, with the table's columns?"
    )


def _article(kind: str) -> str:
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def append_columns(
    file: Mapping[str, str], table: Mapping[str, str], name: str, *, types: bool = True
) -> dict[str, str]:
    """For rows added to table ``name``: each of the file's columns (name → privdb type) with the table's
    column it fills (case aside, any order). Refused, naming them, unless the file has exactly the table's
    columns with types that fit (the same type, an int into a float, anything but nested values into text;
    ``types=False``: the names alone, for a file still to be read as the table's types)."""
    by_lower = {c.lower(): c for c in table}
    missing = [c for c in table if c.lower() not in {f.lower() for f in file}]
    extra = [f for f in file if f.lower() not in by_lower]
    if missing or extra:
        parts = [f"missing {', '.join(map(repr, missing))}"] if missing else []
        if extra:
            hint = did_you_mean(extra[0], missing) if missing else ""
            parts.append(f"not in the table {', '.join(map(repr, extra))}{hint}")
        raise InvalidParameter(
            f"the file's columns do not match table {name!r} ({'; '.join(parts)}): rows added to a table "
            "need its columns, in any order (load the file without --append to replace the table)"
        )
    matched: dict[str, str] = {}
    for column, kind in file.items():
        target = by_lower[column.lower()]
        want = table[target]
        fits = kind == want or (kind, want) == ("int", "float") or (want == "text" and kind != "nested")
        if types and not fits:
            raise InvalidParameter(
                f"column {target!r}: the file's values are {kind} but the table's column is {want}; fix the "
                "file (or load it without --append to replace the table)"
            )
        matched[column] = target
    return matched
