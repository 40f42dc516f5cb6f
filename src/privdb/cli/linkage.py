"""``privdb linkage``: the linkage attack of the course (Sweeney 2002) on a release and a public table."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from privdb.cli.core import app, console, errors, friendly
from privdb.cli.options import TableOrJson
from privdb.cli.table_options import FixLabelsOption, HierarchiesOption, hierarchy_frames, qi_columns


@app.command()
@friendly
def linkage(
    release: Annotated[Path, typer.Argument(help="the published table (CSV or Parquet)")],
    public: Annotated[Path, typer.Argument(help="a public, named table, e.g. a voter list (CSV or Parquet)")],
    on: Annotated[str, typer.Option("--on", help="comma-separated quasi-identifiers both tables hold")],
    limit: Annotated[int, typer.Option(help="matches shown in the table (JSON lists them all)")] = 20,
    hierarchies: HierarchiesOption = None,
    fix_labels: FixLabelsOption = False,
    output_format: TableOrJson = "table",
) -> None:
    """Join a release with a public table on the quasi-identifiers: which released records it pins down.

    A public record matches a released record when each of its values is covered by the released one (a
    lo-hi range holds it, a label or a|b set names it, * covers all; raw values must be equal). A released
    record is linked when it matches exactly one public record and that public record matches no other
    released record. Records are numbered from 1, the first after the header.

    A release of a hierarchy's labels (Adult's Undergraduate) needs --hierarchies (the ones it was made
    with) for its labels to match the public values under them; a column none of whose released values is
    a public one is refused without them. Other released values no public record holds are counted on
    stderr (people not on the public list, or labels: then pass --hierarchies).
    """
    from privdb.anonymize.linkage import link
    from privdb.anonymize.report import read_table

    columns = qi_columns(on, "--on")
    released, _ = read_table(release)
    named, _ = read_table(public)
    loaded = hierarchy_frames(hierarchies, columns, fix_labels)
    found = link(released, named, columns, hierarchies=loaded, refuse_labels=True)
    if found.unread:
        missed = ", ".join(
            f"{len(v):,} of '{c}' ({n:,} record{'s' * (n != 1)})" for c, (v, n) in found.unread.items()
        )
        errors().print(
            f"note: released values no public record holds: {missed}. Their records are not on the public "
            "list, or they are a hierarchy's labels: then pass --hierarchies DIR, or links are missed."
        )
    body: dict[str, Any] = {"on": columns} | {
        key: value for key, value in found.to_dict().items() if key != "correct"
    }
    pairs = list(zip(found.released_rows.tolist(), found.public_rows.tolist(), strict=True))
    body["matches"] = [{"released_record": r + 1, "public_record": p + 1} for r, p in pairs]
    if output_format == "json":
        sys.stdout.write(json.dumps(body) + "\n")
        return
    console().print(
        f"{found.unique:,} of {found.released:,} released records ({found.share:.1%}) linked to exactly one "
        f"of {found.public:,} public records on {', '.join(columns)}"
    )
    if not pairs:
        return
    theirs = [c for c in named.columns if c not in columns]
    ours = [c for c in released.columns if c not in columns]
    shown = pairs[: max(limit, 0)]
    table = Table(caption=f"{len(shown):,} of {len(pairs):,} links" if len(shown) < len(pairs) else None)
    for name in ["released record", "public record", *theirs, *(f"released {c}" for c in ours)]:
        table.add_column(str(name))
    for r, p in shown:
        values = [str(v) for v in (*named.iloc[p][theirs].tolist(), *released.iloc[r][ours].tolist())]
        table.add_row(str(r + 1), str(p + 1), *values)
    console().print(table)
