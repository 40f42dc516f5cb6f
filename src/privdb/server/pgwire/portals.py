"""The messages that describe and page the extended protocol's statements and portals, as PostgreSQL's.

``Execute(max_rows=n)`` sends at most n rows, then ``PortalSuspended`` if n were sent: PostgreSQL does not
look ahead, so with exactly n rows left the next ``Execute`` sends none and completes. ``CommandComplete``
ends the portal; its ``SELECT k`` counts the rows that ``Execute`` sent (pquery.c's ``nprocessed``), not
the portal's total. A portal's rows are sent with the types its statement's ``Describe`` announced
(encoding.retyped).
"""

from __future__ import annotations

from pygwire import messages as m

from privdb.server.pgwire.encoding import SIZES, TEXT, Answer, encode_value

__all__ = ["page", "parameter_types", "row_description"]


def parameter_types(declared: list[int], used: int) -> list[int]:
    """The ParameterDescription: as many types as Parse declared or the statement uses (its highest
    ``$n``), whichever is more; an unspecified one is text, as PostgreSQL reads a parameter it cannot
    infer."""
    count = max(used, len(declared))
    return [oid or TEXT for oid in [*declared, *[0] * count][:count]]


def result_format(formats: list[int], i: int) -> int:
    """Column ``i``'s format as Bind gave them: none (text), one for all, or one per column."""
    if not formats:
        return 0
    return formats[0] if len(formats) == 1 else formats[i]


def row_description(answer: Answer, formats: list[int]) -> m.RowDescription:
    fields = [
        m.FieldDescription(name=name, type_oid=oid, type_size=SIZES.get(oid, -1), type_modifier=-1,
                           format_code=result_format(formats, i))
        for i, (name, oid) in enumerate(zip(answer.columns, answer.types, strict=True))
    ]  # fmt: skip
    return m.RowDescription(fields=fields)


def page(answer: Answer, formats: list[int], start: int, limit: int) -> tuple[list[m.PGMessage], int]:
    """The rows from ``start`` on, at most ``limit`` of them (0: all), then ``PortalSuspended`` if
    ``limit`` were sent, else ``CommandComplete``; and where the next Execute starts."""
    batch = answer.rows[start:] if limit <= 0 else answer.rows[start : start + limit]
    binary = [result_format(formats, i) == 1 for i in range(len(answer.columns))]
    out: list[m.PGMessage] = [
        m.DataRow(
            columns=[encode_value(v, oid, b) for v, oid, b in zip(row, answer.types, binary, strict=True)]
        )
        for row in batch
    ]
    if answer.columns and 0 < limit == len(batch):
        out.append(m.PortalSuspended())
    else:
        tag = f"SELECT {len(batch)}" if answer.tag.startswith("SELECT ") else answer.tag
        out.append(m.CommandComplete(tag=tag))
    return out, start + len(batch)
