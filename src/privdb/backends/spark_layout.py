"""Spark tables privdb writes: an owner's file read by Spark and written again as Parquet, clustered by the
privacy unit, with each row's unit size beside it (issue 40).

Tables only attached to Spark stay the owner's and are never written, so their queries bound every unit.
A table privdb writes carries the hidden column ``__privdb_rows_per_<unit>`` (privdb.backends.names), the
rows its unit has in the whole table: units within the bound then take the plain aggregate, with no
shuffle by unit (privdb.sql.run.rewrite). The count is only as good as the files it was written with, so
the write returns a stamp, the names of the Parquet files it wrote (Spark puts a fresh write id in each
name); the engine trusts the column only while its view reads exactly those files
(privdb.backends.spark.SparkBackend.unit_rows). A file added, removed or rewritten by Spark outside privdb
changes the names, and the table's queries fall back to bounding every unit.

Each load or append writes a new directory (``<into>/<table>.<write id>``) and the catalog is pointed at it
only once it is complete, so an interrupted write leaves an unused directory no query reads; the
directory it replaced is removed after. Files are written owner-only (umask 077) where the file system
keeps permissions.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privdb.backends.names import HIDDEN_PREFIX, reserved_column, unit_rows_column
from privdb.errors import InvalidParameter
from privdb.private_files import FOLDER_MODE, chmod_private

__all__ = ["SparkLayout", "file_names", "read_file", "remove_directory", "spark_type", "write_table"]


def spark_type(data_type: str) -> str:
    t = data_type.lower()
    if t == "boolean":
        return "bool"
    if t in ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte"):
        return "int"
    if t in ("float", "double", "real") or t.startswith("decimal"):
        return "float"
    if t.startswith(("date", "timestamp")):
        return "date"
    return "text"


@dataclass(frozen=True)
class SparkLayout:
    """What privdb wrote for a Spark table: its unit and hidden unit-size column (None without a unit), and
    the Parquet files."""

    unit: str | None
    column: str | None
    files: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"unit": self.unit, "column": self.column, "files": list(self.files)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SparkLayout:
        unit, column = d.get("unit"), d.get("column")
        return cls(
            None if unit is None else str(unit),
            None if column is None else str(column),
            tuple(str(f) for f in d["files"]),
        )


def file_names(frame: Any) -> tuple[str, ...]:
    """The Parquet files a DataFrame reads, by name (their directory left out), sorted."""
    return tuple(sorted(str(f).rstrip("/").rsplit("/", 1)[-1] for f in frame.inputFiles()))


def read_file(spark: Any, path: str) -> Any:
    """The owner's file as a DataFrame: Parquet (a ``.parquet`` file or a directory), else CSV with a
    header and types inferred; a column named like privdb's hidden ones is refused."""
    try:
        if path.endswith((".parquet", ".pq")) or "." not in path.rstrip("/").rsplit("/", 1)[-1]:
            frame = spark.read.parquet(path)
        else:
            frame = spark.read.option("header", "true").option("inferSchema", "true").csv(path)
        columns = list(frame.columns)
    except Exception as err:
        raise InvalidParameter(
            f"Spark cannot read {path!r} ({type(err).__name__}): give a Parquet file or directory, or a CSV "
            "with a header, at a path every Spark worker can read"
        ) from None
    for column in columns:
        if column.lower().startswith(HIDDEN_PREFIX):
            raise reserved_column(column)
    return frame


def write_table(spark: Any, frame: Any, into: str, table: str, unit: str | None) -> tuple[str, SparkLayout]:
    """Write ``frame`` as Parquet into a new directory under ``into``: clustered by ``unit`` (each unit's rows
    in one file) with its unit-size column, or as it is without a unit. Returns the directory and what
    was written there."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)

    out = f"{into.rstrip('/')}/{table}.{uuid.uuid4().hex[:12]}"
    column = None
    if unit is not None:
        found = [c for c in frame.columns if c.lower() == unit.lower()]
        if not found:
            raise InvalidParameter(f"the privacy unit {unit!r} is not a column of the file")
        unit = found[0]
        column = unit_rows_column(unit)
        # one shuffle by unit: the window counts each unit's rows, and its partitions (sorted by unit) are
        # written as they are, so every unit's rows land in one file
        frame = frame.withColumn(column, F.count(F.lit(1)).over(Window.partitionBy(F.col(unit))))
    try:
        frame.write.mode("errorifexists").parquet(out)
    except Exception as err:
        raise InvalidParameter(
            f"Spark could not write the table under {into!r} ({type(err).__name__}); give --into a directory "
            "every Spark worker can write (the cluster's file system)"
        ) from None
    _private(out)
    return out, SparkLayout(unit, column, file_names(spark.read.parquet(out)))


def _private(out: str) -> None:
    """A local directory's files made owner-only (the session's umask 077, privdb.backends.spark, covers
    file systems that keep permissions; Hadoop's local one caches the umask of its first use)."""
    local = out.removeprefix("file://") if out.startswith("file://") else out
    if "://" in local or not os.path.isdir(local):
        return
    os.chmod(local, FOLDER_MODE)
    for name in os.listdir(local):
        chmod_private(Path(local) / name)


def remove_directory(spark: Any, path: str) -> None:
    """Remove a directory privdb wrote (a replaced table's), on whatever file system holds it."""
    jvm = spark.sparkContext._jvm
    target = jvm.org.apache.hadoop.fs.Path(path)
    target.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(target, True)
