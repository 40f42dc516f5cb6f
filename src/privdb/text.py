"""Text that is not Unicode: lone surrogates, found before they reach an engine, a store or a JSON writer.

JSON lets a string hold ``"\\ud800"`` (an escape of half of a surrogate pair), and Python decodes it into a
``str`` no UTF-8 encoder accepts: SQLite, PostgreSQL, DuckDB and the JSON writer of an answer all fail on
it. Every text privdb takes from outside is checked here first, so such text is a clear refusal
(``parse_error`` for a query, ``invalid_parameter`` for other fields) instead of a fault, and
:func:`storable` writes a refused query into the log with the surrogate spelled as its escape.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["lone_surrogate", "not_unicode", "storable"]

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python str every surrogate is a lone one


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in ``text``, or None if it is Unicode text."""
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def not_unicode(value: Any, where: str = "") -> str | None:
    """Where (a JSON path such as ``responses[3]``) the first string inside ``value`` that is not Unicode
    text lies, keys of objects included; None if there is none."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:  # linear in the value's size, which the server's body limit bounds
        item, path = stack.pop()
        if isinstance(item, str):
            if lone_surrogate(item) is not None:
                return path or "the value"
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str) and lone_surrogate(key) is not None:
                    return f"{path}(a key)" if path else "a key"
                stack.append((inner, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list | tuple):
            stack.extend((inner, f"{path}[{i}]") for i, inner in enumerate(item))
    return None


def storable(text: str) -> str:
    """``text`` as SQLite and PostgreSQL can store it: lone surrogates as ``\\udXXX`` escapes, NUL as
    ``\\x00``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
