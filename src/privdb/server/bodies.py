"""The JSON bodies the server accepts, as pydantic models.

Every body but a query's is a :class:`Body`: a string anywhere in it (keys of objects included) that is not
Unicode text — a lone surrogate, sent as a JSON ``"\\ud800"`` escape — is refused as ``invalid_parameter``
before any route sees it, since no store, engine or JSON writer could take it. A query's text (``QueryIn``)
is checked by the query parser instead (a free ``parse_error``), so that its refusal is logged like any
other bad query's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, StrictBool, StrictFloat, StrictInt, model_validator

from privdb.sql.front.limits import MAX_DEPTH, MAX_QUERY_LENGTH
from privdb.text import not_unicode

__all__ = [
    "AnalystIn",
    "AttachIn",
    "Body",
    "PublishIn",
    "QueryIn",
    "RawIn",
    "SharedBudgetIn",
    "TableIn",
]


class Body(BaseModel):
    """A request body whose strings must all be Unicode text."""

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        if (where := not_unicode(data)) is not None:
            raise ValueError(
                f"{where} is not Unicode text (it holds half of a surrogate pair, e.g. a lone \\ud800 "
                "escape); send valid UTF-8"
            )
        return data


class QueryIn(BaseModel):
    # no max_length here: privdb.sql.front.limits refuses a longer query with the one parse_error every face
    # gives
    sql: str = Field(
        description=f"a DP-SELECT, at most {MAX_QUERY_LENGTH:,} characters, nested at most {MAX_DEPTH} levels"
    )
    parameters: dict[str, StrictInt | StrictFloat | StrictBool | str | None] | None = Field(
        default=None,
        max_length=100,
        description="values of the query's @name parameters (BigQuery's), written in as literals",
    )


class RawIn(Body):
    sql: str = Field(max_length=100_000, description="any SQL (owner only)")


class AnalystIn(Body):
    name: str = Field(max_length=64)
    epsilon: float | None = None  # a re-grant keeps what is left out
    delta: float | None = None
    tables: list[str] | None = None
    expires_in: float | None = Field(default=None, description="the token's life in seconds")
    group: str | None = Field(default=None, description="a budget group to join ('' leaves it)")
    query_epsilon: float | None = Field(
        default=None, description="the ε plain aggregate SQL is answered at by default (0 removes it)"
    )
    query_delta: float | None = Field(default=None, description="the δ beside query_epsilon")


class PublishIn(Body):
    method: str = Field(description="histogram, safepub or synthetic")
    table: str = Field(description="a table of the database")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="histogram: columns [[a, b], …] or hierarchical, epsilon, delta, bins, noise, method; "
        "safepub: qi, hierarchies {column: [[value, …, '*'], …]}, epsilon, delta, epsilon_search, metric, "
        "target, steps, search (walk, lattice or auto), node; "
        "synthetic: epsilon, delta, rows, columns, bins, method (mst or aim)",
    )


class SharedBudgetIn(Body):
    table: str | None = Field(default=None, description="a table: its lifetime budget")
    group: str | None = Field(default=None, description="a budget group: its shared budget")
    epsilon: float
    delta: float = 0.0
    renew: str | float | None = Field(
        default=None,
        description="refill every period (30d, 12h, 1w or seconds); null: never (a lifetime budget)",
    )


class TableIn(Body):
    name: str = Field(max_length=64)
    csv: str = Field(description="the table as CSV text (delimiter and header detected)")
    metadata: dict[str, Any] | None = None
    append: bool = Field(default=False, description="add the rows to the table (which keeps its metadata)")


class AttachIn(Body):
    name: str = Field(max_length=64)
    engine: str = Field(
        description="sqlite:////abs/path.db (absolute), sqlite:///relative.db, postgresql://user@host/db or spark://…"
    )
    source: str | None = Field(default=None, description="the table's name in that engine (default: name)")
    metadata: dict[str, Any] | None = None
