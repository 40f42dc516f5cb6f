"""Reading an owner's file as it comes: CSV with or without a header, any delimiter, quote and missing-value
markers (named as DuckDB's CSV reader names them), Parquet, JSON and Excel.

Every reader ends as one DuckDB relation (``SELECT * FROM read_csv(…)``), so loading, the load-time checks and
``privdb infer`` read a file the same way. The relation is staged as a *temporary* view of the reading
connection (DuckDB's ``temp`` catalog): never written to the data file, seen by no other connection, gone
when that connection closes or its process dies — so no analyst's path can ever name it, and nothing of a
failed or killed load survives. Excel goes through pandas and openpyxl (the optional ``excel``
extra): DuckDB's own Excel reader is an extension it downloads on first use, which a machine without access to
DuckDB's extension server cannot do.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from privdb.catalog.reading import FORMATS, FileFormat, ReadOptions
from privdb.catalog.typed import described_type, forced_types, wrong_type
from privdb.errors import InvalidParameter, install_hint

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FORMATS",
    "FileFormat",
    "ReadOptions",
    "bad_lines",
    "csv_kwargs",
    "format_of",
    "read_relation",
    "release",
]

_STAGED = "__privdb_file"  # the temporary view a file is read through (reserved: privdb.backends.names)
_SUFFIXES: dict[str, FileFormat] = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".xlsx": "excel",
    ".xlsm": "excel",
}


def format_of(path: Path, options: ReadOptions) -> FileFormat:
    """The file's format: as given, else from its suffix (anything else is read as CSV, e.g. ``.data``)."""
    return options.format or _SUFFIXES.get(path.suffix.lower(), "csv")


def csv_kwargs(options: ReadOptions) -> dict[str, Any]:
    """DuckDB's read_csv arguments for the options given (the rest detected by its sniffer)."""
    given = {
        "header": options.header,
        "names": list(options.names) if options.names else None,
        "delimiter": _unescape(options.delimiter),
        "quotechar": options.quote,
        "na_values": list(options.null) if options.null else None,
    }
    # malformed lines are set aside, not guessed around (the sniffer would read a file with one line too
    # long as a single text column): bad_lines() then refuses them, or counts them if told to skip
    given["allow_quoted_nulls"] = None if options.quoted_nulls else False
    return {k: v for k, v in given.items() if v is not None} | {"ignore_errors": True, "store_rejects": True}


def _unescape(delimiter: str | None) -> str | None:
    """``\\t`` typed on a command line means a tab."""
    return None if delimiter is None else delimiter.replace("\\t", "\t")


def read_relation(con: duckdb.DuckDBPyConnection, path: Path, options: ReadOptions) -> str:
    """Register the file as the temporary view ``temp.__privdb_file`` of ``con`` (module doc) and return its
    name.

    Errors name the file and what to change; the view is what the caller loads, checks or infers from."""
    if not path.is_file():
        raise InvalidParameter(f"file {str(path)!r} does not exist")
    kind = format_of(path, options)
    misfits = options.misfits(kind)
    if misfits:
        raise InvalidParameter(
            f"{', '.join(misfits)} do not apply to {kind} files like {path.name!r} "
            "(say --format csv to read it as CSV)"
        )
    view = f"temp.{_STAGED}"
    try:
        if kind == "excel":
            con.register(_STAGED, _excel(path, options))
            return view
        if kind == "csv":
            relation = con.read_csv(str(path), **csv_kwargs(options))
            sniffed = {str(c): str(t) for c, t in zip(relation.columns, relation.types, strict=True)}
            forced = forced_types(sniffed, options)  # the types the metadata or the table asks for
            if forced:
                relation = con.read_csv(str(path), **csv_kwargs(options), dtype=forced)
        elif kind == "parquet":
            relation = con.read_parquet(str(path))
        else:
            relation = con.read_json(str(path))
        # register: a temporary view (a relation's create_view would write a lasting one to the data file)
        con.register(_STAGED, relation)
        names = [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]
    except duckdb.Error as err:
        raise InvalidParameter(
            f"could not read {str(path)!r} as {kind}: {str(err).splitlines()[0]}"
            + ("; check --delimiter, --quote and --no-header" if kind == "csv" else "")
        ) from None
    if options.names is not None and kind in ("parquet", "json"):
        if len(options.names) != len(names):
            raise InvalidParameter(
                f"--names gives {len(options.names)} names but {path.name!r} has {len(names)} columns"
            )
        renamed = ", ".join(
            f"{_ident(old)} AS {_ident(new)}" for old, new in zip(names, options.names, strict=True)
        )
        con.execute(f"CREATE OR REPLACE TEMP VIEW {_STAGED}_named AS SELECT {renamed} FROM {view}")
        return f"{view}_named"
    if options.names is not None and len(options.names) != len(names):
        raise InvalidParameter(
            f"--names gives {len(options.names)} names but {path.name!r} has {len(names)} columns"
        )
    return view


def bad_lines(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    options: ReadOptions,
    types: dict[str, str] | None = None,
    kept: int | None = None,
) -> int:
    """After ``con`` has read the file through :func:`read_relation`: the number of malformed lines it set
    aside (0 for formats other than CSV), a value that does not fit its column's type included. Unless
    ``options.skip_bad_lines``, any is refused, naming the first line, its column and the type expected
    (``types``: column → DuckDB type as read), never its values: they are the data. A column whose type was
    asked for (privdb.catalog.typed) but whose values mostly do not fit it (more lines set aside for it than
    the ``kept`` lines read) is refused even so: its type is what is wrong, not a few lines."""
    if format_of(path, options) != "csv":
        return 0
    try:
        rows = con.execute(
            "SELECT DISTINCT line, error_type, column_name, column_idx FROM reject_errors "
            "ORDER BY line, column_idx"
        ).fetchall()
    except duckdb.CatalogException:  # nothing was set aside
        return 0
    lines = sorted({int(r[0]) for r in rows})
    if kept is not None:
        casts = Counter(str(r[2]) for r in rows if str(r[1]).upper() == "CAST" and r[2])
        for column, bad in casts.items():
            first = min(int(r[0]) for r in rows if str(r[2]) == column)
            wrong = wrong_type(column, bad, bad + kept, first, options)
            if wrong is not None:
                raise InvalidParameter(wrong)
    if not lines or options.skip_bad_lines:
        return len(lines)
    line, kind, column, _ = rows[0]
    if str(kind).upper() == "CAST" and column:
        expected = described_type(str(column), (types or {}).get(str(column)), options)
        what = f"column {str(column)!r} holds a value that is not {expected}; the value is not shown"
        fix = "fix the file, mark missing values with --null (e.g. --null NA)"
    else:
        what = str(kind).lower() + (f" in column {str(column)!r}" if column else "")
        fix = "fix the file, check --delimiter, --quote and --no-header"
    more = f" (and {len(lines) - 1:,} more bad line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    raise InvalidParameter(
        f"line {line} of {path.name!r}: {what}{more}; {fix}, or give --skip-bad-lines to leave out the "
        f"{len(lines):,} bad line{'s' if len(lines) > 1 else ''}"
    )


def release(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what :func:`read_relation` registered on ``con`` (temporary, so closing ``con`` drops it too; a
    connection kept open reads the next file afresh)."""
    con.execute(f"DROP VIEW IF EXISTS temp.{_STAGED}_named")
    for table in ("reject_errors", "reject_scans"):  # the CSV reader's record of the lines it set aside
        con.execute(f"DROP TABLE IF EXISTS temp.{table}")
    with contextlib.suppress(duckdb.Error):
        con.unregister(_STAGED)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _excel(path: Path, options: ReadOptions) -> pd.DataFrame:
    import importlib.util

    import pandas as pd  # pandas' reader: loading an Excel file only

    if importlib.util.find_spec("openpyxl") is None:  # pandas' reader for .xlsx
        raise InvalidParameter(
            f"reading Excel needs openpyxl: {install_hint('excel')} (or save the sheet as CSV)"
        )
    try:
        frame = pd.read_excel(
            path,
            header=None if options.header is False else 0,
            names=list(options.names) if options.names is not None else None,
            na_values=list(options.null) or None,
        )
    except (ValueError, OSError) as err:
        raise InvalidParameter(f"could not read {str(path)!r} as Excel: {err}") from None
    return frame
