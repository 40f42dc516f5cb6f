"""Reading and writing the tables ``privdb anonymize`` publishes, fast at a million rows.

``read_table`` lets DuckDB read (and sniff) the file into Arrow: text columns go to pandas straight from
Arrow (no Python string per cell), the other columns through DuckDB's own pandas conversion, so every
column keeps the dtype ``DuckDBPyRelation.df()`` gives (e.g. ``Int64`` for whole numbers with gaps).

``write_table`` writes the CSV with pyarrow's writer, byte for byte what ``DataFrame.to_csv`` writes (the
format of earlier releases): the header is quoted as pandas quotes it, text columns go to Arrow as a
dictionary of their distinct values, numbers with decimals are spelt as pandas spells them. Columns pyarrow
cannot spell the same way (booleans, dates, mixed objects) or text that needs quoting (the delimiter, a
quote, a line break) fall back to pandas' writer for the whole table. Either way the file appears all at
once: a failure leaves no partial file. ``staged_table`` writes it in a background thread while the caller
measures the release, and moves it into place only when told.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]  # no stubs or py.typed marker
import pyarrow.csv as pacsv  # type: ignore[import-untyped]

from privdb.errors import InvalidParameter

__all__ = ["read_table", "staged_table", "write_table"]


def read_table(path: str | Path) -> tuple[pd.DataFrame, str]:
    """A CSV (delimiter and header detected) or Parquet file as a DataFrame in file order, and the CSV's
    delimiter (``,`` for Parquet)."""
    p = Path(path)
    if not p.is_file():
        raise InvalidParameter(f"file {str(p)!r} does not exist")
    con = duckdb.connect(":memory:")
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            query, delimiter = "SELECT * FROM read_parquet($path)", ","
        else:
            sniff = con.sql("SELECT Delimiter FROM sniff_csv($path)", params={"path": str(p)}).fetchall()
            query, delimiter = "SELECT * FROM read_csv_auto($path)", str(sniff[0][0]) if sniff else ","
        arrow = con.sql(query, params={"path": str(p)}).to_arrow_table()
        return _to_pandas(con, arrow), delimiter
    except duckdb.Error as err:
        raise InvalidParameter(f"could not read {str(p)!r} as CSV: {str(err).splitlines()[0]}") from None
    finally:
        con.close()


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def _to_pandas(con: duckdb.DuckDBPyConnection, arrow: pa.Table) -> pd.DataFrame:
    """Text columns from Arrow directly, the rest as DuckDB converts them; columns in the file's order."""
    names: list[str] = [str(n) for n in arrow.column_names]
    text = [n for n, kind in zip(names, arrow.schema.types, strict=True) if _is_text(kind)]
    rest = [n for n in names if n not in set(text)]
    parts = [arrow.select(text).to_pandas()] if text else []
    if rest:
        con.register("privdb_read", arrow.select(rest))
        listed = ", ".join('"' + n.replace('"', '""') + '"' for n in rest)
        parts.append(con.sql(f"SELECT {listed} FROM privdb_read").df())  # names quoted above
    frame: pd.DataFrame = pd.concat(parts, axis=1) if len(parts) > 1 else parts[0]
    return frame.loc[:, names]


def write_table(frame: pd.DataFrame, path: str | Path, delimiter: str = ",") -> None:
    """Write ``frame`` as CSV, as ``DataFrame.to_csv(index=False, sep=delimiter)`` would, all at once."""
    with staged_table(frame, path, delimiter) as commit:
        commit()


@contextlib.contextmanager
def staged_table(
    frame: pd.DataFrame | Callable[[], pd.DataFrame], path: str | Path, delimiter: str = ","
) -> Iterator[Callable[[], None]]:
    """Start writing ``frame`` (as ``write_table``) to a hidden file beside ``path`` in a background thread,
    while the caller goes on (``privdb anonymize`` measures its release meanwhile: pyarrow's writer releases
    the GIL); ``commit()`` waits for the writer and moves the file into place. Leaving the block without
    ``commit()`` (an error, Ctrl-C) removes the hidden file at once: no partial or unwanted release.

    ``frame`` may be a function that makes the frame (the release's rows shuffled): it runs in the writer's
    thread too, and its failure, like the writer's, is raised by ``commit()``."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(
        prefix=".privdb-", suffix=".csv", dir=target.parent if target.parent.exists() else None
    )
    failure: list[BaseException] = []

    def write() -> None:
        try:
            with os.fdopen(fd, "wb") as out:
                _write(frame() if callable(frame) else frame, out, delimiter)
        except BaseException as err:  # handed to commit(), which raises it in the caller's thread
            failure.append(err)

    writer = threading.Thread(target=write, name="privdb-write-release", daemon=True)
    writer.start()
    committed = False

    def commit() -> None:
        nonlocal committed
        writer.join()
        if failure:
            raise failure[0]
        os.replace(tmp, target)
        committed = True

    try:
        yield commit
    finally:
        if not committed:
            Path(tmp).unlink(missing_ok=True)  # a writer still running writes on into a removed file


def _write(frame: pd.DataFrame, out: BinaryIO, delimiter: str) -> None:
    arrow = _as_arrow(frame, delimiter)
    if arrow is None:
        out.write(frame.to_csv(index=False, sep=delimiter).encode("utf-8"))
    else:
        out.write(_header(frame, delimiter).encode("utf-8"))
        options = pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")
        pacsv.write_csv(arrow, out, options)


def _header(frame: pd.DataFrame, delimiter: str) -> str:
    """The header line as pandas writes it (csv module, minimal quoting)."""
    line = io.StringIO()
    csv.writer(line, delimiter=delimiter, lineterminator="\n").writerow([str(c) for c in frame.columns])
    return line.getvalue()


def _as_arrow(frame: pd.DataFrame, delimiter: str) -> pa.Table | None:
    """The frame as Arrow columns whose CSV text equals pandas', or None where it would not."""
    if frame.shape[1] < 2:
        return None  # pandas writes an empty lone field as "": leave that to pandas
    special = (delimiter, '"', "\n", "\r")
    columns: dict[str, Any] = {}
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        kind = col.dtype.kind if isinstance(col.dtype, np.dtype) else None
        if kind in ("i", "u"):
            columns[str(i)] = pa.array(col.to_numpy())
            continue
        if isinstance(col.dtype, pd.CategoricalDtype):  # its codes already number its values
            codes, values = col.cat.codes.to_numpy(), np.asarray(col.cat.categories, dtype=object)
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            values = np.asarray(uniques, dtype=object)
        if kind == "f":
            spelt = values.astype(np.float64).astype(str)  # repr, as pandas writes floats
        elif all(isinstance(v, str) for v in values):
            joined = "".join(values.tolist())  # a character in any value is in their concatenation
            spelt = values.astype(str) if "\x00" in joined else values  # (NumPy's text drops a last NUL)
            if any(s in joined for s in special) and any(any(s in v for s in special) for v in spelt):
                return None
        else:
            return None  # booleans, dates, mixed objects: pandas' own spelling
        dictionary = pa.array(spelt.tolist(), type=pa.string())
        indices = pa.array(codes.astype(np.int32), mask=codes < 0)
        columns[str(i)] = pa.DictionaryArray.from_arrays(indices, dictionary)
    return pa.table(columns)
