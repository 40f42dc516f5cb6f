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
import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privdb.backends.names import HIDDEN_PREFIX, reserved_column, unit_choice_column, unit_rows_column
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
    """What privdb wrote for a Spark table: its unit and hidden unit-size column (None without a unit), the
    Parquet files, and per choice column (privdb.backends.names.layout_of) its hidden choice column."""

    unit: str | None
    column: str | None
    files: tuple[str, ...]
    choices: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "column": self.column,
            "files": list(self.files),
            "choices": dict(self.choices),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SparkLayout:
        """The layout of a stamp; a stamp written before choices were kept has none."""
        unit, column = d.get("unit"), d.get("column")
        return cls(
            None if unit is None else str(unit),
            None if column is None else str(column),
            tuple(str(f) for f in d["files"]),
            tuple((str(c), str(h)) for c, h in (d.get("choices") or {}).items()),
        )

    def choice(self, column: str) -> str | None:
        """The hidden choice column kept for ``column`` (matched in any case), or None."""
        return next((h for c, h in self.choices if c.lower() == column.lower()), None)


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


def _file_column(frame: Any, name: str, what: str) -> str:
    """The file's column named ``name`` in any case."""
    found = [c for c in frame.columns if c.lower() == name.lower()]
    if not found:
        raise InvalidParameter(f"the {what} {name!r} is not a column of the file")
    return str(found[0])


def _with_choice(frame: Any, unit: str, column: str, hidden: str) -> Any:
    """``frame`` with each unit's group in ``column`` drawn: the rows it has in that value on the rows of
    the value, 0 on its other rows (privdb.backends.duckdb_layout, the same column for DuckDB).

    The draw ranks a unit's distinct values (NULL one of them) by a 64-bit hash of the value under a salt
    drawn afresh for each write, so it is uniform among them, made from the unit's rows alone, and the
    same on every row of a value (a task Spark runs again draws the same). The windows are partitioned by
    the unit (then the value), the shuffle the unit count already made: no other shuffle."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)

    by_value = Window.partitionBy(F.col(unit), F.col(column))
    salt = F.lit(secrets.randbits(63))
    draw = F.max(F.xxhash64(salt, F.col(unit), F.col(column))).over(by_value)  # one draw per value
    rows = F.count(F.lit(1)).over(by_value)
    frame = frame.withColumn(hidden, F.struct(draw.alias("h"), rows.alias("r")))
    best = F.max(F.struct(F.col(hidden)["h"].alias("h"), F.col(column).alias("v"))).over(
        Window.partitionBy(F.col(unit))
    )
    kept = (F.col(hidden)["h"] == best["h"]) & F.col(column).eqNullSafe(best["v"])
    return frame.withColumn(hidden, F.when(kept, F.col(hidden)["r"]).otherwise(F.lit(0)).cast("bigint"))


def write_table(
    spark: Any, frame: Any, into: str, table: str, unit: str | None, choices: tuple[str, ...] = ()
) -> tuple[str, SparkLayout]:
    """Write ``frame`` as Parquet into a new directory under ``into``: clustered by ``unit`` (each unit's rows
    in one file) with its unit-size column and a choice column for each of ``choices``
    (privdb.backends.names.layout_of), or as it is without a unit. Returns the directory and what was
    written there."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)

    out = f"{into.rstrip('/')}/{table}.{uuid.uuid4().hex[:12]}"
    column = None
    kept: list[tuple[str, str]] = []
    if unit is not None:
        unit = _file_column(frame, unit, "privacy unit")
        column = unit_rows_column(unit)
        # one shuffle by unit: the window counts each unit's rows, and its partitions (sorted by unit) are
        # written as they are, so every unit's rows land in one file
        frame = frame.withColumn(column, F.count(F.lit(1)).over(Window.partitionBy(F.col(unit))))
        for name in choices:
            found = _file_column(frame, name, "column")
            kept.append((found, unit_choice_column(unit, found)))
            frame = _with_choice(frame, unit, found, kept[-1][1])
    try:
        frame.write.mode("errorifexists").parquet(out)
    except Exception as err:
        raise InvalidParameter(
            f"Spark could not write the table under {into!r} ({type(err).__name__}); give --into a directory "
            "every Spark worker can write (the cluster's file system)"
        ) from None
    _private(out)
    return out, SparkLayout(unit, column, file_names(spark.read.parquet(out)), tuple(kept))


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
