"""Canonical group keys: one hashable, JSON-ready value per key, and a total order over them.

*Keys.* The engine returns keys as DuckDB and pandas make them (``pd.NA``, ``NaT``, NaN, numpy scalars,
timestamps, arrays). Each is mapped to one canonical, hashable, JSON-ready value (``canonical_key``): NULL,
NaN, ``pd.NA`` and ``NaT`` are one key, null (docs/proofs/sql.md, "Keys that meet"); −0.0 is 0.0; dates and
times become ISO text as DuckDB writes them (``2024-01-31``, ``2024-01-31 10:00:00``, UTC for time zones);
lists and structs become tuples. Keys released through the threshold are sorted by ``order_key``, a total
order over every canonical value (null last), so their order is a function of the released keys only.
"""

from __future__ import annotations

import datetime
import decimal
import sys
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["canonical_key", "canonical_rank", "order_key"]


def _pandas_missing(value: Any) -> bool:
    """``pd.NA`` or ``NaT``. Only a frame's value can be one, and a frame means pandas is loaded: a key from
    ``fetch_columns`` (Python values) is looked at without importing pandas."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and (value is pandas.NA or value is pandas.NaT)


def _blob_text(data: bytes) -> str:
    """A BLOB as DuckDB writes it: printable ASCII as is, other bytes (and the backslash) as ``\\xHH``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in data)


def canonical_key(value: Any) -> Any:
    """One key value as a canonical, hashable, JSON-ready Python value (module doc, *Keys*).

    Values the engine keeps apart but that are one key here (NULL, NaN, ``pd.NA``, ``NaT``; 0.0 and −0.0)
    map to the same value, so their statistics are added, never overwritten."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if kind is float:
        return None if value != value else (0.0 if value == 0.0 else value)
    if _pandas_missing(value):
        return None
    if isinstance(value, np.datetime64 | np.timedelta64):
        if np.isnat(value):
            return None
        import pandas as pd  # its Timestamp and Timedelta: the ISO text DuckDB writes

        return canonical_key(pd.Timestamp(value) if isinstance(value, np.datetime64) else pd.Timedelta(value))
    if isinstance(value, np.generic):
        return canonical_key(value.item())
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float | decimal.Decimal):
        return (
            canonical_key(float(value))
            if not (isinstance(value, decimal.Decimal) and value.is_nan())
            else None
        )
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime.datetime):  # pd.Timestamp too
        if value.tzinfo is not None:
            return value.astimezone(datetime.UTC).isoformat(sep=" ")
        if value.time() == datetime.time(0) and getattr(value, "nanosecond", 0) == 0:
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):  # pd.Timedelta too
        import pandas as pd  # its ISO text of a duration

        return str(pd.Timedelta(value).isoformat())
    if isinstance(value, bytes | bytearray | memoryview):
        return _blob_text(bytes(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):  # a STRUCT
        return tuple((canonical_key(k), canonical_key(v)) for k, v in value.items())
    if isinstance(value, list | tuple | np.ndarray):  # a LIST or ARRAY
        return tuple(canonical_key(v) for v in value)
    return str(value)


def canonical_rank(value: Any) -> tuple[Any, ...]:
    """``order_key`` of a canonical value."""
    kind = type(value)
    if value is None:
        return (9,)
    if kind is bool:
        return (1, value)
    if kind is int or kind is float:
        return (2, value)
    if kind is str:
        return (3, value)
    if kind is tuple:
        return (4, tuple(canonical_rank(v) for v in value))
    return (5, kind.__name__, repr(value))  # not reached: canonical values are of the kinds above


def order_key(value: Any) -> tuple[Any, ...]:
    """A sort key giving a total order over any values: booleans, then numbers (−inf … inf), text, lists and
    structs, and null last (NULL, NaN, ``pd.NA``, ``NaT``: one key). Equal keys are the same canonical key."""
    return canonical_rank(canonical_key(value))
