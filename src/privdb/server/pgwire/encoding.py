"""Result sets for the wire: column types (PostgreSQL type OIDs) and each value in text or binary format.

A column's type comes from its values; a column without any (all NULL, or no rows) takes its frame's dtype
(DuckDB's frames keep the engine's type: ``Int64``, ``float64``, ``boolean``, ``datetime64``), else text.
A portal of a described statement is sent with the types its Describe announced (:func:`retyped`). A pandas
frame's missing values (None, NaN, NaT) are SQL NULLs."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BOOL", "FLOAT8", "INT8", "TEXT", "Answer", "encode_value", "from_frame", "retyped", "type_of"]

BOOL, INT8, INT4, INT2, TEXT, FLOAT4, FLOAT8, DATE, TIMESTAMP = 16, 20, 23, 21, 25, 700, 701, 1082, 1114
SIZES = {BOOL: 1, INT8: 8, INT4: 4, INT2: 2, TEXT: -1, FLOAT4: 4, FLOAT8: 8, DATE: 4, TIMESTAMP: 8}
_EPOCH = dt.date(2000, 1, 1)  # PostgreSQL's binary dates and timestamps count from it
_EPOCH_TS = dt.datetime(2000, 1, 1)


@dataclass
class Answer:
    """What one statement returns: columns with their type OIDs and rows (``columns`` empty: a command
    without rows, e.g. ``SET``), the command tag, and notices sent before it."""

    tag: str
    columns: list[str] = field(default_factory=list)
    types: list[int] = field(default_factory=list)
    rows: Sequence[Sequence[Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NaT or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _kind(value: Any) -> int:
    if isinstance(value, bool | np.bool_):
        return BOOL
    if isinstance(value, int | np.integer):
        return INT8
    if isinstance(value, float | np.floating):
        return FLOAT8
    if isinstance(value, dt.datetime):
        return TIMESTAMP
    if isinstance(value, dt.date):
        return DATE
    return TEXT


def type_of(values: Sequence[Any]) -> int:
    """One type for a column: the values' common kind; integers and floats mixed are float8; anything
    else mixed is text."""
    kinds = {_kind(v) for v in values if not _missing(v)}
    if not kinds:
        return TEXT
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {INT8, FLOAT8}:
        return FLOAT8
    return TEXT


def _dtype_type(dtype: Any) -> int:
    """The type of a frame column that holds no value, from its dtype (text when it says nothing)."""
    if pd.api.types.is_bool_dtype(dtype):
        return BOOL
    if pd.api.types.is_integer_dtype(dtype):
        return INT8
    if pd.api.types.is_float_dtype(dtype):
        return FLOAT8
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return TIMESTAMP
    return TEXT


def from_frame(frame: pd.DataFrame, tag: str = "SELECT") -> Answer:
    """A frame as an answer (``SELECT n`` with its row count)."""
    rows = [tuple(r) for r in frame.itertuples(index=False, name=None)]
    columns = [str(c) for c in frame.columns]
    types = []
    for i, dtype in enumerate(frame.dtypes):
        values = [r[i] for r in rows]
        types.append(type_of(values) if any(not _missing(v) for v in values) else _dtype_type(dtype))
    return Answer(f"{tag} {len(rows)}", columns, types, rows)


def _fits(value: Any, oid: int) -> bool:
    """Whether ``value`` can be sent, unchanged, as a value of type ``oid``."""
    kind = _kind(value)
    if kind == oid:
        return True
    if oid == FLOAT8:
        return kind == INT8
    if oid == INT8:
        return kind == FLOAT8 and math.isfinite(value) and float(value).is_integer()
    if oid == DATE:  # a date key is released as ISO text (privdb.sql.answer.noise.canonical_key)
        return isinstance(value, str) and _iso_date(value) is not None
    return False


def retyped(answer: Answer, described: Answer) -> Answer:
    """``answer`` with the column types ``described`` announced (a statement's Describe), for each column
    whose values all fit them (a column of NULLs, or no rows, always does), so the rows come as announced;
    a column the description did not foresee keeps its values' type. Unchanged if the columns differ."""
    if answer.columns != described.columns:
        return answer
    types = [
        want if all(_missing(r[i]) or _fits(r[i], want) for r in answer.rows) else have
        for i, (have, want) in enumerate(zip(answer.types, described.types, strict=True))
    ]
    return Answer(answer.tag, answer.columns, types, answer.rows, answer.notices)


def _iso_date(value: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if len(value) == 10 else None
    except ValueError:
        return None


def _as_date(value: Any) -> dt.date:
    """A value of a date column (a date, or its ISO text: :func:`_fits` let only those through)."""
    if isinstance(value, str):
        day = _iso_date(value)
        assert day is not None, "a date column's text is ISO (checked by _fits)"
        return day
    if isinstance(value, dt.datetime):
        return value.date()
    assert isinstance(value, dt.date)
    return value


def _text(value: Any, oid: int) -> str:
    if oid == BOOL:
        return "t" if value else "f"
    if oid == INT8:
        return str(int(value))
    if oid == FLOAT8:
        number = float(value)
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return repr(number)
    if oid == TIMESTAMP:
        return pd.Timestamp(value).isoformat(sep=" ")
    if oid == DATE:
        return _as_date(value).isoformat()
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    return str(value)


def _binary(value: Any, oid: int) -> bytes:
    if oid == BOOL:
        return b"\x01" if value else b"\x00"
    if oid == INT8:
        return struct.pack("!q", int(value))
    if oid == FLOAT8:
        return struct.pack("!d", float(value))
    if oid == DATE:
        return struct.pack("!i", (_as_date(value) - _EPOCH).days)
    if oid == TIMESTAMP:
        delta = pd.Timestamp(value).to_pydatetime().replace(tzinfo=None) - _EPOCH_TS
        return struct.pack("!q", delta // dt.timedelta(microseconds=1))
    return _text(value, oid).encode("utf-8")


def encode_value(value: Any, oid: int, binary: bool = False) -> bytes | None:
    """One value of a column of type ``oid``: None for NULL."""
    if _missing(value):
        return None
    return _binary(value, oid) if binary else _text(value, oid).encode("utf-8")
