"""How to read an owner's file: its format and the reading options (``privdb load``, ``privdb infer``,
``Connection.load``), apart from the readers in privdb.catalog.files so the CLI can declare its options
without importing DuckDB and pandas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from privdb.errors import InvalidParameter

__all__ = ["FORMATS", "FileFormat", "ReadOptions"]

FileFormat = Literal["csv", "parquet", "json", "excel"]
FORMATS: tuple[FileFormat, ...] = ("csv", "parquet", "json", "excel")


@dataclass(frozen=True)
class ReadOptions:
    """How to read a file. ``None`` means "detect" (DuckDB's sniffer for CSV); names replace the header (or
    name the columns of a file without one)."""

    header: bool | None = None
    names: tuple[str, ...] | None = None
    delimiter: str | None = None
    quote: str | None = None
    null: tuple[str, ...] = field(default_factory=tuple)
    format: FileFormat | None = None
    skip_bad_lines: bool = False  # leave out a CSV's malformed lines (counted) instead of refusing the file
    # the types a CSV's columns must have, by lower-cased column name (privdb.catalog.typed): ``declared``
    # the metadata's (int, float: read as numbers, so a value that is not one is a bad line, named; text:
    # as text), ``types`` DuckDB's exact ones (a table rows are added to, a file uploaded to a server as the
    # owner read it)
    declared: tuple[tuple[str, str], ...] = ()
    types: tuple[tuple[str, str], ...] = ()
    quoted_nulls: bool = True  # a quoted empty value ("") is NULL, as DuckDB reads it; False: empty text

    def __post_init__(self) -> None:
        if self.names is not None:
            clean = tuple(n.strip() for n in self.names)
            if not clean or any(not n for n in clean):
                raise InvalidParameter(
                    "--names needs comma-separated column names, e.g. --names age,sex,income"
                )
            dupes = sorted({n for n in clean if clean.count(n) > 1})
            if dupes:
                raise InvalidParameter(f"--names repeats {', '.join(dupes)}: each column needs its own name")
            object.__setattr__(self, "names", clean)
        if self.delimiter is not None and not 1 <= len(self.delimiter.encode()) <= 4:
            raise InvalidParameter(
                "--delimiter must be 1 to 4 bytes, e.g. ',' or ';' or '\\t' or ', ' (comma and space)"
            )
        if self.quote is not None and len(self.quote) != 1:
            raise InvalidParameter("--quote must be one character, e.g. '\"' or \"'\"")

    def misfits(self, kind: FileFormat) -> list[str]:
        """The options given that a reader of ``kind`` does not understand."""
        given = {
            "--no-header": self.header is not None and kind not in ("csv", "excel"),
            "--delimiter": self.delimiter is not None and kind != "csv",
            "--quote": self.quote is not None and kind != "csv",
            "--null": bool(self.null) and kind not in ("csv", "excel"),
        }
        return [name for name, on in given.items() if on]
