"""Result sets for the wire: column types (PostgreSQL type OIDs) chosen from the values, and each value in
text or binary format. A pandas frame's missing values (None, NaN, NaT) are SQL NULLs."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BOOL", "FLOAT8", "INT8", "TEXT", "Answer", "encode_value", "from_frame", "type_of"]

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


def from_frame(frame: pd.DataFrame, tag: str = "SELECT") -> Answer:
    """A frame as an answer (``SELECT n`` with its row count)."""
    rows = [tuple(r) for r in frame.itertuples(index=False, name=None)]
    columns = [str(c) for c in frame.columns]
    types = [type_of([r[i] for r in rows]) for i in range(len(columns))]
    return Answer(f"{tag} {len(rows)}", columns, types, rows)


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
        return str(value.isoformat())
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
        return struct.pack("!i", (value - _EPOCH).days)
    if oid == TIMESTAMP:
        delta = pd.Timestamp(value).to_pydatetime().replace(tzinfo=None) - _EPOCH_TS
        return struct.pack("!q", delta // dt.timedelta(microseconds=1))
    return _text(value, oid).encode("utf-8")


def encode_value(value: Any, oid: int, binary: bool = False) -> bytes | None:
    """One value of a column of type ``oid``: None for NULL."""
    if _missing(value):
        return None
    return _binary(value, oid) if binary else _text(value, oid).encode("utf-8")
