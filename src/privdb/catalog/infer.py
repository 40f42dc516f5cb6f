"""``privdb infer``: a metadata skeleton written from the data, for the owner to review.

Types are safe to take from a file. Bounds and domains are not: the ones written here are the data's own
minimum, maximum and distinct values, so they describe the people in the table, and a bound equal to one
person's income tells an analyst that income. The skeleton says so on every such line; the owner replaces
them with public knowledge (a legal age range, a published list of states) before loading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import yaml

from privdb.catalog.mixed import MixedColumn
from privdb.catalog.typed import engine_type

__all__ = ["CONTRIBUTIONS_QUANTILE", "MAX_CATEGORIES", "MAX_LABEL", "Skeleton", "infer_skeleton", "unit_rank"]

# a text column is written as a category (its distinct values copied as the domain) only when it looks like
# a code list: at most this many distinct values, none longer than MAX_LABEL characters, and each value
# found on two rows on average; anything else may be free text (names, addresses, notes) and gets no domain
MAX_CATEGORIES = 50
MAX_LABEL = 32


@dataclass(frozen=True)
class Skeleton:
    """The YAML text, the text columns left without a domain, the guessed privacy unit (or None) and the
    ``max_contributions`` read from the data when the unit's values repeat (or None), for the owner to hear
    about."""

    text: str
    undomained: tuple[str, ...]
    unit: str | None = None
    max_contributions: int | None = None


# the rows per unit written as max_contributions: this share of the units have at most that many (a bound
# at the largest count would let one unusual person set the noise of every answer)
CONTRIBUTIONS_QUANTILE = 0.95


# the privacy unit is guessed from the column's name only: a column unique per row is not a person's id for
# being unique (UCI Adult's census weight fnlwgt is), and a weight or a float never names a person
_PERSON_IDS = frozenset(
    {"id", "pid", "uid", "personid", "userid", "respondentid", "patientid", "participantid", "subjectid"}
)
_WEIGHT = re.compile(r"wgt|weight", re.IGNORECASE)


def unit_rank(name: str, kind: str) -> int | None:
    """How well ``name`` reads as a person's id: 0 (id, pid, person_id, user_id …), 1 (another …_id),
    None (not an id: a float, a weight, or a name without "id")."""
    if kind not in ("int", "text") or _WEIGHT.search(name):
        return None
    tokens = [t for t in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()) if t]
    if not tokens:
        return None
    if "".join(tokens) in _PERSON_IDS or "".join(tokens[-2:]) in _PERSON_IDS:
        return 0
    return 1 if tokens[-1] == "id" else None


_HEADER = """\
# privacy metadata for {table}, written by `privdb infer` from {source}
#
# REVIEW EVERY LINE BEFORE LOADING. The types come from the file. The bounds (lower, upper) and domains
# (values) marked "from the data" were read from the private data itself: they are the smallest and largest
# values and the distinct values of the people in the table, so they are NOT public knowledge. Publishing
# them (or answering queries under them) can reveal a person's value. Replace each with what is known
# without the data (a legal age range, a published code list, a salary cap), then delete the marks.
# Declare the privacy unit (the column naming a person) and mark identifying text (identifier: true).
# Every key is explained in docs/metadata.md.
tables:
  {table}:
{unit}    columns:
"""


def _flow(spec: Any) -> str:
    return yaml.safe_dump(spec, default_flow_style=True, width=10**6, sort_keys=False).strip()


def _kind(duck_type: str) -> str:
    """The metadata type for a DuckDB column type (nested values are written as text)."""
    kind = engine_type(duck_type)
    return "text" if kind == "nested" else kind


def _number(value: Any, kind: str) -> int | float:
    x = float(value)
    if kind == "int" or x.is_integer():
        return int(x)
    return float(f"{x:.6g}")


def infer_skeleton(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    table: str,
    source: str,
    *,
    max_categories: int = MAX_CATEGORIES,
    mixed: Sequence[MixedColumn] = (),
) -> Skeleton:
    """The skeleton for ``relation`` (a view over the file) as YAML text with review marks. ``mixed``: text
    columns of mostly numbers (privdb.catalog.mixed), written as numbers with a mark naming the first line
    that is not one."""
    numbers = {m.column: m for m in mixed}
    columns = [(str(r[0]), str(r[1])) for r in con.execute(f"DESCRIBE {relation}").fetchall()]
    probes = []
    for name, duck_type in columns:
        q = '"' + name.replace('"', '""') + '"'
        longest = f"MAX(LENGTH(CAST({q} AS VARCHAR)))" if _kind(duck_type) == "text" else "NULL"
        probes += [f"COUNT(DISTINCT {q})", f"MIN({q})", f"MAX({q})", longest, f"COUNT({q})"]
    # fetchall, not fetchone: the CSV reader records the lines it set aside only when the scan runs to its end
    probed = con.execute(f"SELECT COUNT(*), {', '.join(probes)} FROM {relation}").fetchall()
    row = probed[0] if probed else ()
    rows = int(row[0]) if row else 0
    lines: list[str] = []
    undomained: list[str] = []
    ranked = [(r, i) for i, (n, t) in enumerate(columns) if (r := unit_rank(n, _kind(t))) is not None]
    unit_guess = columns[min(ranked)[1]][0] if ranked else None
    width = max((len(n) for n, _ in columns), default=0) + 1
    for i, (name, duck_type) in enumerate(columns):
        distinct, low, high, longest, present = row[1 + 5 * i : 6 + 5 * i]
        kind = _kind(duck_type)
        spec: dict[str, Any] = {"type": kind}
        note = ""
        if name == unit_guess:
            spec = {"type": kind, "private_id": True}
            each = "every value distinct" if rows and distinct == rows else "values repeat (rows per person)"
            note = f"{each}: a person's id? (if not, drop private_id and give bounds or a domain)"
        elif name in numbers:
            spec, note = _mostly_numbers(numbers[name])
        elif kind in ("int", "float") and low is not None:
            spec |= {"lower": _number(low, kind), "upper": _number(high, kind)}
            note = "bounds from the data: replace with public bounds"
        elif kind == "text" and _code_list(distinct, longest, present, max_categories):
            q = '"' + name.replace('"', '""') + '"'
            found = con.execute(f"SELECT DISTINCT {q} FROM {relation} WHERE {q} IS NOT NULL ORDER BY 1")
            values = [r[0] for r in found.fetchall()]
            spec = {"type": "category", "values": values}
            note = "domain from the data: replace with the public list of values"
        elif kind == "text":
            undomained.append(name)
            note = (
                f"{distinct:,} distinct values: free text (identifier: true if it names or locates someone)"
            )
        key = f"{name}:".ljust(width + 1) if _plain(name) else f"{_flow(name)}:".ljust(width + 1)
        line = f"      {key} {_flow(spec)}"
        lines.append(f"{line}   # {note}" if note and len(line) + len(note) < 110 else line)
        if note and len(line) + len(note) >= 110:  # a long line: the mark goes above it
            lines.insert(len(lines) - 1, f"      # {name}: {note}")
    unit = (
        f"    privacy_unit: {unit_guess}  # a guess: the column naming a person (drop if a row is one)\n"
        if unit_guess
        else ""
    )
    repeats = unit_guess is not None and rows > 0 and _distinct(row, columns, unit_guess) < rows
    bound = _rows_per_unit(con, relation, unit_guess) if repeats and unit_guess else None
    if bound is not None:
        share = f"{CONTRIBUTIONS_QUANTILE:.0%}"
        unit += (
            f"    # max_contributions FROM THE DATA: {share} of the {unit_guess} values have at most {bound} "
            f"row{'s' if bound > 1 else ''}; review it.\n"
            "    # Each answer keeps at most this many rows per person; `privdb load` says how many rows it\n"
            f"    # leaves out, and `privdb tune --db DIR {table}` suggests a bound with DP.\n"
            f"    max_contributions: {bound}\n"
        )
    head = _HEADER.format(table=table, source=source, unit=unit)
    return Skeleton(head + "\n".join(lines) + "\n", tuple(undomained), unit_guess, bound)


def _distinct(row: Sequence[Any], columns: list[tuple[str, str]], name: str) -> int:
    """The distinct values of column ``name`` among the probes' results."""
    i = [n for n, _ in columns].index(name)
    return int(row[1 + 5 * i] or 0)


def _rows_per_unit(con: duckdb.DuckDBPyConnection, relation: str, unit: str) -> int:
    """The number of rows that ``CONTRIBUTIONS_QUANTILE`` of the units have at most (at least 1)."""
    q = '"' + unit.replace('"', '""') + '"'
    found = con.execute(
        f"SELECT quantile_disc(n, {CONTRIBUTIONS_QUANTILE}) FROM (SELECT COUNT(*) AS n FROM {relation} "
        f"WHERE {q} IS NOT NULL GROUP BY {q})"
    ).fetchall()
    return max(1, int(found[0][0] or 1)) if found else 1


def _mostly_numbers(mixed: MixedColumn) -> tuple[dict[str, Any], str]:
    """A text column of mostly numbers, written as the numbers' type with their bounds from the data, and
    the mark that says which line is not a number and what a load will do with it."""
    spec: dict[str, Any] = {"type": mixed.kind}
    if mixed.low is not None and mixed.high is not None:
        spec |= {"lower": _number(mixed.low, mixed.kind), "upper": _number(mixed.high, mixed.kind)}
    note = (
        f"numbers, but {mixed.counted()}: a load refuses such lines (or --null, --skip-bad-lines); bounds "
        "from the data: replace with public bounds"
    )
    return spec, note


def _code_list(distinct: Any, longest: Any, present: Any, max_categories: int) -> bool:
    """Whether a text column's values look like a code list (few, short, repeated), not free text."""
    if not distinct or longest is None:
        return False
    return int(distinct) <= max_categories and int(longest) <= MAX_LABEL and 2 * int(distinct) <= int(present)


def _plain(name: str) -> bool:
    """Whether ``name`` can be written as a YAML key without quotes."""
    try:
        return bool(yaml.safe_load(f"{name}: 1") == {name: 1})
    except yaml.YAMLError:
        return False
