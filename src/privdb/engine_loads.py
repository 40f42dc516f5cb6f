"""An owner's files into a table privdb writes in another engine (Spark: ``privdb load --engine spark://…``),
so the table carries the per-unit layout an attached table cannot (privdb.backends.spark_layout).

The file is read by Spark (so it may be on the cluster's file system), checked against the metadata before
anything is written, and written to a new directory; the catalog then points the table at it with its
metadata and layout in one transaction, so an interrupted load leaves the table as it was. An append
writes the table's rows and the new ones together (units the new rows touch get their new size) and
swaps the same way. Its own module, imported by the command that loads (``privdb load --engine``), so the
database and every other command start without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privdb.backends.base import WritesTables
from privdb.backends.names import HIDDEN_PREFIX, check_name, layout_of
from privdb.backends.spark_layout import SparkLayout, read_file, remove_directory, spark_type, write_table
from privdb.catalog.metadata import TableMeta
from privdb.catalog.metadata_file import load_metadata
from privdb.catalog.metadata_spec import metadata_from_dict
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.private_files import private_dir

__all__ = ["load_engine", "written_layout"]


def written_layout(db: Database, table: str) -> SparkLayout | None:
    """What privdb wrote for ``table`` in another engine (None: an owner's attached table)."""
    stamp = db.catalog.layout(table)
    return None if stamp is None else SparkLayout.from_dict(stamp)


def load_engine(
    db: Database,
    table: str,
    source: str,
    engine: str,
    metadata: str | Path | dict[str, Any] | None = None,
    *,
    into: str | None = None,
    append: bool = False,
) -> tuple[TableMeta, int]:
    """Load (or with ``append`` add) the file ``source`` as ``table`` in ``engine``, written by privdb
    under ``into`` (default: the database directory's ``spark`` folder, for a local master; a cluster
    needs a directory every worker reads). Returns the metadata and the table's row count."""
    db._writable("loading a table")
    check_name(table)
    backend = db._open_engine(engine) if engine.startswith("spark://") else None
    if not isinstance(backend, WritesTables):  # checked before the engine opens: nothing is read
        raise InvalidParameter(
            f"privdb writes tables into Spark only (spark://…), not {engine.split(':', 1)[0]!r}: load "
            "into the embedded engine (no --engine), or attach the table where it is"
        )
    if table.lower() in {t.lower() for t in db.backend.tables()}:
        raise InvalidParameter(f"a table {table!r} is loaded here already; load under another name")
    spark = backend.session
    before = db.catalog.attachments().get(table)
    old = written_layout(db, table) if before is not None else None
    if append:
        if before is None or old is None:
            raise InvalidParameter(
                f"no table {table!r} that privdb wrote into Spark: load it first (privdb load --engine), "
                "or add rows to an attached table in its own engine"
            )
        spec = db.catalog.metadata(table)
        kept = spark.read.parquet(before[1])
        kept = kept.select(*[c for c in kept.columns if not c.lower().startswith(HIDDEN_PREFIX)])
        frame = _with_rows(kept, read_file(spark, source), table)
    else:
        if metadata is None:
            raise InvalidParameter("a table loaded into Spark needs its metadata: give --metadata M.yaml")
        spec = load_metadata(metadata, table) if isinstance(metadata, str | Path) else metadata
        frame = read_file(spark, source)
    # the metadata checked against the file's columns before anything is written
    meta = metadata_from_dict(table, spec, {c: spark_type(t) for c, t in frame.dtypes})
    if into is None:
        into = str(private_dir(db.path / "spark"))
    kept = layout_of(meta)  # the choice columns a stored DuckDB table keeps, kept here alike
    choices = kept.choices if kept is not None else ()
    out, layout = write_table(spark, frame, into, table, meta.privacy_unit, choices)
    db.catalog.attach(table, engine, out, meta.to_dict(), layout.to_dict())  # both or neither
    if before is not None and old is not None and before[1] != out:
        remove_directory(spark, before[1])  # the replaced table's files: privdb wrote them
    return meta, int(spark.read.parquet(out).count())


def _with_rows(kept: Any, added: Any, table: str) -> Any:
    """The table's rows and a file's, by column name; the file must have the table's columns."""
    have = {c.lower() for c in kept.columns}
    got = {c.lower() for c in added.columns}
    if have != got:
        missing, extra = sorted(have - got), sorted(got - have)
        raise InvalidParameter(
            f"the file's columns are not table {table!r}'s"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not in the table: {', '.join(extra)}" if extra else "")
        )
    names = {c.lower(): c for c in added.columns}
    return kept.unionByName(added.select(*[names[c.lower()] for c in kept.columns]))
