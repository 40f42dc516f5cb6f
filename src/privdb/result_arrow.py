"""A DP answer as an Arrow table and back: the columns of ``Result.to_pandas()`` (each column with intervals
followed by ``<col>_ci95_low`` and ``<col>_ci95_high``) and every privacy fact in the schema metadata, so the
answer can be rebuilt whole from the table alone. Also the Arrow IPC stream the server sends when a client
asks for ``application/vnd.apache.arrow.stream`` (docs/server.md).

Schema metadata (UTF-8 keys and values):

- ``privdb.epsilon_spent``, ``privdb.delta_spent``: the cost, as ``repr`` of a float (exact);
- ``privdb.budget``, ``privdb.accuracy``: JSON, as in the answer's JSON; an accuracy entry whose per-row
  intervals the interval columns hold exactly is written without its ``ci95_rows`` (so the intervals travel
  once, as numbers, not twice);
- ``privdb.ci95_columns``: JSON object naming each answer column followed by its two interval columns,
  with the index of the accuracy entry whose ``ci95_rows`` they hold (null if that entry kept them);
- ``privdb.columns``: the answer's own columns (JSON), which tells them from the interval columns;
- ``privdb.other``: the answer's other top-level fields (``cached``, ``covers``, ``truncation``, …; JSON);
- ``privdb.json_columns``: positions of columns whose values Arrow cannot hold as one type (e.g. text and
  numbers mixed), written as each value's JSON text instead.

This module works on the answer's dict (``Result.to_dict()``); ``privdb.result`` builds ``Result`` on it.
Arrow itself is imported where a table or a stream is made, so that importing this module (for
``MEDIA_TYPE``, or with ``privdb.result``) costs a terminal's answer and a JSON server nothing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # no stubs or py.typed marker

__all__ = ["MEDIA_TYPE", "from_table", "read_stream", "to_table", "write_stream"]

MEDIA_TYPE = "application/vnd.apache.arrow.stream"  # the IANA type of Arrow's IPC stream format
_FIXED = ("columns", "rows", "epsilon_spent", "delta_spent", "budget", "accuracy")


def _array(values: list[Any]) -> tuple[pa.Array, bool]:
    """The values as one Arrow array (NaN stays NaN, None is null); as JSON text if Arrow cannot type them
    as one column (True second)."""
    import pyarrow as pa

    try:
        return pa.array(values, from_pandas=False), False
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return pa.array([json.dumps(v, default=str) for v in values], type=pa.string()), True


def _intervals(answer: dict[str, Any]) -> dict[str, tuple[int, list[Any]]]:
    """Per answer column with per-row intervals: the accuracy entry's index and its rows' intervals (the
    last entry naming the column, as ``Result.to_pandas`` takes it)."""
    columns = set(answer["columns"])
    return {
        a["column"]: (i, list(a["ci95_rows"]))
        for i, a in enumerate(answer["accuracy"])
        if a.get("ci95_rows") is not None and a.get("column") in columns
    }


def _ends(intervals: list[Any], rows: int) -> tuple[list[Any], list[Any]]:
    """The low and high ends per row (None where a row has no interval), padded or cut to ``rows``."""
    lows: list[Any] = []
    highs: list[Any] = []
    for r in range(rows):
        interval = intervals[r] if r < len(intervals) else None
        lows.append(None if interval is None else interval[0])
        highs.append(None if interval is None else interval[1])
    return lows, highs


def _rebuilt(lows: list[Any], highs: list[Any]) -> list[Any]:
    """Per-row intervals from the two end columns: None where both ends are null."""
    return [None if lo is None and hi is None else [lo, hi] for lo, hi in zip(lows, highs, strict=True)]


def to_table(answer: dict[str, Any], intervals: bool = True) -> pa.Table:
    """The answer (``Result.to_dict()``) as an Arrow table with its privacy facts in the schema metadata."""
    import pyarrow as pa

    columns: list[str] = list(answer["columns"])
    rows: list[list[Any]] = answer["rows"]
    accuracy = [dict(a) for a in answer["accuracy"]]
    per_column = _intervals(answer) if intervals else {}
    names: list[str] = []
    arrays: list[pa.Array] = []
    as_json: list[int] = []
    followed: dict[str, int | None] = {}
    for c, col in enumerate(columns):
        sides = [(col, [row[c] for row in rows])]
        if col in per_column:
            index, ci95 = per_column[col]
            lows, highs = _ends(ci95, len(rows))
            sides += [(f"{col}_ci95_low", lows), (f"{col}_ci95_high", highs)]
        for name, values in sides:
            array, encoded = _array(values)
            if encoded:
                as_json.append(len(arrays))
            names.append(name)
            arrays.append(array)
        if col in per_column and _rebuilt(*_decoded(arrays[-2:], as_json, len(arrays) - 2)) == ci95:
            del accuracy[index]["ci95_rows"]  # the interval columns hold them exactly
            followed[col] = index
        elif col in per_column:
            followed[col] = None
    metadata = {
        "privdb.epsilon_spent": repr(float(answer["epsilon_spent"])),
        "privdb.delta_spent": repr(float(answer["delta_spent"])),
        "privdb.budget": json.dumps(answer["budget"]),
        "privdb.accuracy": json.dumps(accuracy, default=str),
        "privdb.ci95_columns": json.dumps(followed),
        "privdb.columns": json.dumps(columns),
        "privdb.other": json.dumps({k: v for k, v in answer.items() if k not in _FIXED}, default=str),
        "privdb.json_columns": json.dumps(as_json),
    }
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(metadata)


def _decoded(arrays: list[pa.Array], as_json: list[int], first: int) -> list[list[Any]]:
    """The Python values of consecutive arrays starting at position ``first`` of the table."""
    out = []
    for offset, array in enumerate(arrays):
        values = array.to_pylist()
        out.append([json.loads(v) for v in values] if first + offset in as_json else values)
    return out


def from_table(table: pa.Table) -> dict[str, Any]:
    """The answer's dict (as ``Result.to_dict()`` gives it) from a table written by :func:`to_table`."""
    raw = table.schema.metadata or {}
    meta = {k.decode(): v.decode() for k, v in raw.items()}
    if "privdb.columns" not in meta:
        raise ValueError("the Arrow table carries no privdb answer (no privdb.columns in its metadata)")
    columns: list[str] = json.loads(meta["privdb.columns"])
    accuracy: list[dict[str, Any]] = json.loads(meta["privdb.accuracy"])
    values = _decoded(table.columns, json.loads(meta["privdb.json_columns"]), 0)
    followed: dict[str, int | None] = json.loads(meta["privdb.ci95_columns"])
    at = 0
    kept: list[list[Any]] = []
    for col in columns:
        kept.append(values[at])
        if col in followed:
            index = followed[col]
            if index is not None:
                accuracy[index]["ci95_rows"] = _rebuilt(values[at + 1], values[at + 2])
            at += 2
        at += 1
    rows = [list(row) for row in zip(*kept, strict=True)] if kept else []
    other: dict[str, Any] = json.loads(meta.get("privdb.other", "{}"))
    return {
        "columns": columns,
        "rows": rows,
        "epsilon_spent": float(meta["privdb.epsilon_spent"]),
        "delta_spent": float(meta["privdb.delta_spent"]),
        "budget": json.loads(meta["privdb.budget"]),
        "accuracy": accuracy,
    } | other


def write_stream(table: pa.Table) -> bytes:
    """The table as an Arrow IPC stream (what ``pa.ipc.open_stream`` and every Arrow library reads)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read_stream(data: bytes) -> pa.Table:
    """The table an Arrow IPC stream holds."""
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_all()
