"""A file to send to a server, read on the owner's machine as a local load reads it.

The server cannot see the owner's files, so the client reads the file here (its format, the reading options,
the metadata's number columns), tells the server its columns and types first (so a load the server would
refuse is refused before any data is sent), then writes it as a plain CSV into a private folder and streams
that: header, commas, double quotes, NULL as an empty field and the empty text as ``""``. The server reads it
back with the same types (``ReadOptions.types``), so the table is the one a local load would make. Bad lines
and columns of mostly numbers are found here, where the line numbers are the file's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from privdb.catalog.files import bad_lines, read_relation, release
from privdb.catalog.mixed import MixedColumn, mixed_columns
from privdb.catalog.reading import ReadOptions
from privdb.catalog.typed import engine_type

__all__ = ["FileToSend", "Written", "sent_options", "too_large"]


def too_large(size: int, limit: int) -> str:
    """The refusal of a file over the server's ``--max-load-bytes`` (the same on either side)."""
    return (
        f"the file is {size:,} bytes as CSV, over this server's limit of {limit:,} bytes for a load "
        "(--max-load-bytes): load it in parts with --append, or ask the owner to raise the limit"
    )


def sent_options(columns: dict[str, str]) -> ReadOptions:
    """How the server reads what :class:`FileToSend` wrote: its fixed dialect, the types as read here."""
    return ReadOptions(
        header=True,
        delimiter=",",
        quote='"',
        format="csv",
        types=tuple((name.lower(), duck_type) for name, duck_type in columns.items()),
        quoted_nulls=False,
    )


@dataclass(frozen=True)
class Written:
    """The CSV written for sending: where, its size in bytes, its rows, the bad lines left out of it
    (``skip_bad_lines``) and the text columns of mostly numbers found in the file."""

    path: Path
    size: int
    rows: int
    skipped: int
    mixed: tuple[MixedColumn, ...]


class FileToSend:
    """The owner's file opened for sending: ``columns`` (name → DuckDB type) at once, from DuckDB's sniffer
    and the types asked for; the whole file read and written by :meth:`write`."""

    def __init__(self, path: Path, options: ReadOptions) -> None:
        self.path, self.options = path, options
        self._con = duckdb.connect()
        try:
            self._view = read_relation(self._con, path, options)
            described = self._con.execute(f"DESCRIBE {self._view}").fetchall()
        except BaseException:
            self._con.close()
            raise
        # nested values travel as their text, as a CSV holds them (and are text on the server, as they were)
        self.columns = {
            str(r[0]): "VARCHAR" if engine_type(str(r[1])) == "nested" else str(r[1]) for r in described
        }

    def __enter__(self) -> FileToSend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            release(self._con)
        finally:
            self._con.close()

    def write(self, folder: Path) -> Written:
        """Read the whole file and write it as CSV into ``folder`` (the caller's private folder): refused
        here, naming the line, if a line is bad (unless ``skip_bad_lines``)."""
        target = folder / "upload.csv"
        picked = ", ".join(
            f"CAST({_quote(c)} AS VARCHAR) AS {_quote(c)}" if t == "VARCHAR" else _quote(c)
            for c, t in self.columns.items()
        )
        literal = "'" + str(target).replace("'", "''") + "'"
        copied = self._con.execute(
            f"COPY (SELECT {picked} FROM {self._view}) TO {literal} (HEADER, DELIMITER ',', QUOTE '\"')"
        ).fetchall()
        rows = int(copied[0][0]) if copied else 0
        skipped = bad_lines(self._con, self.path, self.options, self.columns, rows)
        typed = {name for name, _ in self.options.declared} | {name for name, _ in self.options.types}
        mixed = tuple(mixed_columns(self._con, self._view, self.path, self.options, typed))
        return Written(target, target.stat().st_size, rows, skipped, mixed)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
