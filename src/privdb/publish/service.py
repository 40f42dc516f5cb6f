"""One way to publish, for every face (CLI, Python API, server): check every public input, reserve the charge,
compute the release, commit the charge, and only then hand the release back to be written or sent.

A check that fails spends nothing; once the private rows have been read, the spend stands even if the work
fails (DESIGN.md). The charge is privdb.publish.charge's: the owner's publication account and the table's
lifetime budget.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from privdb.anonymize.hierarchy import Hierarchy, TaxonomyHierarchy
from privdb.backends.names import HIDDEN_PREFIX, quote
from privdb.catalog.metadata import TableMeta
from privdb.database import Database
from privdb.errors import InvalidParameter
from privdb.publish.charge import reserve_release
from privdb.publish.histogram import HistogramRelease, release_histograms
from privdb.publish.safepub import Published, check_inputs, safepub
from privdb.publish.synthetic import check_synthetic, options_of, release_synthetic
from privdb.publish.synthmodel import check_model_path
from privdb.sql.run.targets import for_engine

if TYPE_CHECKING:
    from privdb.publish.synthetic import SyntheticRelease

__all__ = [
    "HistogramOptions",
    "SafePubOptions",
    "publish_histogram",
    "publish_request",
    "publish_safepub",
    "publish_synthetic",
    "table_rows",
]


@dataclass(frozen=True)
class HistogramOptions:
    """``privdb publish histogram``'s options (privdb.publish.histogram.release_histograms)."""

    epsilon: float
    marginals: tuple[tuple[str, ...], ...] = ()
    hierarchical: str | None = None
    branching: int = 4
    bins: tuple[tuple[str, int], ...] = ()
    delta: float = 0.0
    noise: str = "laplace"
    method: str = "consistent"
    buckets: int | None = None  # StructureFirst
    count_bound: int | None = None
    structure_share: float = 0.5

    def arguments(self) -> dict[str, Any]:
        return {
            "marginals": [list(m) for m in self.marginals], "hierarchical": self.hierarchical,
            "branching": self.branching, "bins": dict(self.bins), "epsilon": self.epsilon,
            "delta": self.delta, "noise": self.noise, "method": self.method, "buckets": self.buckets,
            "count_bound": self.count_bound, "structure_share": self.structure_share,
        }  # fmt: skip

    def note(self, table: str) -> str:
        what = (
            " ".join(f"--columns {','.join(m)}" for m in self.marginals)
            or f"--hierarchical {self.hierarchical}"
        )
        how = f" --method {self.method}" if self.method != "consistent" else ""
        return f"publish histogram {table} {what}{how} ε={self.epsilon:g} δ={self.delta:g}"


@dataclass(frozen=True)
class SafePubOptions:
    """``privdb publish safepub``'s options (privdb.publish.safepub.safepub)."""

    qi: tuple[str, ...]
    epsilon: float
    delta: float
    epsilon_search: float = 0.1
    metric: str | None = None  # None: classification with a target, else loss
    steps: int | None = None
    target: str | None = None  # the classification score's column to predict
    node: tuple[int, ...] | None = None  # a user-fixed level per QI: no search (data-independent SafePub)
    search: str = "auto"  # walk, lattice or auto (privdb.publish.safepub_search.search_kind)

    def arguments(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "epsilon_search": self.epsilon_search,
                "metric": self.metric, "steps": self.steps, "target": self.target,
                "node": self.node, "search": self.search}  # fmt: skip


def publish_histogram(
    db: Database, frame: pd.DataFrame, meta: TableMeta, options: HistogramOptions
) -> HistogramRelease:
    """Marginals or a histogram of ``frame`` (the rows of ``meta``'s table), charged to that table."""
    # every check on parameters and domains runs first on no rows: a bad input spends nothing
    release_histograms(frame.iloc[:0], meta, **options.arguments())
    reservation = reserve_release(db, meta.name, options.epsilon, options.delta, options.note(meta.name))
    try:
        return release_histograms(frame, meta, rng=db.noise_source, **options.arguments())
    finally:
        reservation.commit()  # the data was read: the spend stands


def publish_safepub(
    db: Database,
    frame: pd.DataFrame,
    table: str,
    hierarchies: Mapping[str, Hierarchy],
    options: SafePubOptions,
    note: str | None = None,
) -> Published:
    """A SafePub release of ``frame``'s quasi-identifiers, charged to ``table``."""
    check_inputs(frame, options.qi, hierarchies, **options.arguments())
    default = f"publish safepub {table} ε={options.epsilon:g} δ={options.delta:g}"
    reservation = reserve_release(db, table, options.epsilon, options.delta, note or default)
    try:
        return safepub(frame, options.qi, hierarchies, rng=db.noise_source, **options.arguments())
    finally:
        reservation.commit()  # the data was read: charged even if the run failed


def publish_synthetic(
    db: Database, frame: pd.DataFrame, meta: TableMeta, options: Mapping[str, Any], note: str,
    save_model: Path | None = None,
) -> SyntheticRelease:  # fmt: skip
    """Synthetic rows of ``frame`` (privdb.publish.synthetic: MST, AIM or MWEM), charged to ``meta``'s table;
    ``options``: epsilon, delta, rows and SyntheticOptions' fields. The model carries the charge's ledger id
    and time, and is written to ``save_model`` (a folder) when given."""
    given = {k: v for k, v in options.items() if k not in ("epsilon", "delta", "rows")}
    chosen = options_of(given)
    epsilon, delta, rows = float(options["epsilon"]), float(options["delta"]), int(options["rows"])
    check_synthetic(meta, epsilon=epsilon, delta=delta, rows=rows, options=chosen)
    if save_model is not None:
        check_model_path(save_model)
    reservation = reserve_release(db, meta.name, epsilon, delta, note)
    try:
        released = release_synthetic(
            frame, meta, epsilon=epsilon, delta=delta, rows=rows, options=chosen, rng=db.noise_source
        )
    finally:
        reservation.commit()  # the data was read: the spend stands
    if released.model is not None:
        released.model.info["ledger"] = {"id": reservation.id, "time": reservation.created}
        released.model.info["created"] = time.time()
        if save_model is not None:
            released.model.save(save_model)
    return released


def table_rows(db: Database, table: str) -> pd.DataFrame:
    """Every row of a table of the database (the owner's read: what a release is computed from), from
    the engine that holds it: DuckDB, or the SQLite file, PostgreSQL database or Spark it is attached from."""
    engine, source = db.backend_for(table)
    if engine is db.backend:  # privdb's hidden per-unit columns are no part of the table's rows
        rows = db.owner_sql(f"SELECT * FROM {quote(table)}")
        return rows[[c for c in rows.columns if not str(c).startswith(HIDDEN_PREFIX)]]
    return engine.fetch(for_engine(engine, None, f"SELECT * FROM {quote(source)}"), timeout=db.query_timeout)


_NUMBERS: dict[str, type] = {
    "epsilon": float, "delta": float, "epsilon_search": float, "branching": int, "rows": int, "steps": int,
    "buckets": int, "count_bound": int, "structure_share": float, "degree": int, "bounds_share": float,
}  # fmt: skip


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidParameter(f"{name} must be a string, got {value!r}")
    return value


def _typed(options: Mapping[str, Any]) -> dict[str, Any]:
    """The request's options with its numbers checked and converted (a JSON request may send anything):
    a value that is not a number of the right kind is refused naming the option."""
    out = dict(options)
    for name, kind in _NUMBERS.items():
        value = out.get(name)
        if value is None:
            continue
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not whole):
            what = "a whole number" if kind is int else "a number"
            raise InvalidParameter(f"{name} must be {what}, got {value!r}")
        out[name] = kind(value)
    return out


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(v, str) for v in value)
    ):
        raise InvalidParameter(f"{what} must be a list of column names")
    return tuple(value)


def publish_request(db: Database, method: str, table: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """A release of a table of ``db`` described as JSON (the server's POST /v1/publish, Connection.publish):
    ``histogram`` with ``columns`` (a list of marginals) or ``hierarchical``, ``safepub`` with ``qi`` and
    ``hierarchies`` ({column: [[value, level 1, …], …]}, public), or ``synthetic`` with ``rows`` (``method``
    mst or aim). Returns the released rows and a summary. The table is read once the request's shape has been
    checked."""
    meta = db.metadata(table)
    known = {
        "histogram": {
            "columns",
            "hierarchical",
            "branching",
            "bins",
            "epsilon",
            "delta",
            "noise",
            "method",
            "buckets",
            "count_bound",
            "structure_share",
        },
        "safepub": {
            "qi",
            "hierarchies",
            "epsilon",
            "delta",
            "epsilon_search",
            "metric",
            "steps",
            "target",
            "search",
            "node",
        },
        "synthetic": {
            "epsilon",
            "delta",
            "rows",
            "columns",
            "bins",
            "method",
            "nulls",
            "bounds_share",
            "workload",
            "degree",
            "compress",
        },
    }
    if method not in known:
        raise InvalidParameter(f"method must be histogram, safepub or synthetic, not {method!r}")
    unknown = set(options) - known[method]
    if unknown:
        raise InvalidParameter(f"unknown option(s) for {method}: {', '.join(sorted(unknown))}")
    if "epsilon" not in options:
        raise InvalidParameter("epsilon: every release states its ε (and δ where it needs one)")
    options = _typed(options)
    frame = table_rows(db, meta.name)
    if method == "histogram":
        marginals = tuple(_strings(m, "each marginal in columns") for m in options.get("columns") or ())
        bins = options.get("bins") or {}
        if not isinstance(bins, Mapping) or not all(isinstance(v, int) for v in bins.values()):
            raise InvalidParameter('bins must map column names to whole numbers of bins, e.g. {"age": 10}')
        hist = HistogramOptions(
            epsilon=float(options["epsilon"]), marginals=marginals, hierarchical=options.get("hierarchical"),
            branching=int(options.get("branching", 4)), bins=tuple(bins.items()),
            delta=float(options.get("delta", 0.0)), noise=str(options.get("noise", "laplace")),
            method=str(options.get("method", "consistent")), buckets=options.get("buckets"),
            count_bound=options.get("count_bound"),
            structure_share=float(options.get("structure_share", 0.5)),
        )  # fmt: skip
        released = publish_histogram(db, frame, meta, hist)
        out = released.to_frame()
        summary: dict[str, Any] = {"marginals": ["|".join(c) for c, _ in released.marginals],
                                   "hierarchical": released.hierarchical,
                                   "structure": released.structure}  # fmt: skip
    elif method == "synthetic":
        if "delta" not in options or "rows" not in options:
            raise InvalidParameter("synthetic data needs delta (e.g. 1e-9) and rows (how many to make)")
        columns = options.get("columns")
        chosen = {"epsilon": float(options["epsilon"]), "delta": float(options["delta"]),
                  "rows": int(options["rows"]), "method": str(options.get("method", "mst")),
                  "columns": None if columns is None else list(_strings(columns, "columns")),
                  "bins": dict(options.get("bins") or {})}  # fmt: skip
        for name in ("nulls", "compress"):
            if name in options:
                if not isinstance(options[name], bool):
                    raise InvalidParameter(f"{name} must be true or false")
                chosen[name] = options[name]
        if "bounds_share" in options:
            chosen["bounds_share"] = float(options["bounds_share"])
        if "degree" in options:
            chosen["degree"] = int(options["degree"])
        if "workload" in options:
            given = options["workload"]
            if isinstance(given, str) or not isinstance(given, Sequence):
                raise InvalidParameter("workload must be a list of marginals, each a list of column names")
            chosen["workload"] = [list(_strings(m, "each workload marginal")) for m in given]
        made = publish_synthetic(
            db, frame, meta, chosen, f"publish synthetic {meta.name} --rows {chosen['rows']}"
        )
        out = made.frame
        summary = {"method": made.method, "rho": made.rho, "measured": ["|".join(c) for c in made.cliques],
                   "bounds": {c: list(b) for c, b in made.bounds.items()}}  # fmt: skip
        if made.method == "aim":
            summary["rounds"] = made.rounds
    else:
        qi = _strings(options.get("qi"), "qi")
        given = options.get("hierarchies") or {}
        if not isinstance(given, Mapping):
            raise InvalidParameter(
                "hierarchies must map each quasi-identifier to its rows [[value, …, '*'], …]"
            )
        hierarchies = {str(c): TaxonomyHierarchy(str(c), rows) for c, rows in given.items()}
        if "delta" not in options:
            raise InvalidParameter("delta: SafePub needs δ in (0, 1), e.g. 1e-5")
        steps, target, metric = options.get("steps"), options.get("target"), options.get("metric")
        if target is not None and not isinstance(target, str):
            raise InvalidParameter("target must be a column name")
        node = options.get("node")
        if node is not None and not (isinstance(node, list) and all(isinstance(v, int) for v in node)):
            raise InvalidParameter("node must be a list of whole levels, one per quasi-identifier")
        sp = SafePubOptions(
            qi=qi, epsilon=float(options["epsilon"]), delta=float(options["delta"]),
            epsilon_search=float(options.get("epsilon_search", 0.1)),
            metric=None if metric is None else str(metric), steps=None if steps is None else int(steps),
            target=target, node=None if node is None else tuple(node),
            search=_string(options.get("search", "auto"), "search"),
        )  # fmt: skip
        published = publish_safepub(db, frame, meta.name, hierarchies, sp)
        out = published.table
        summary = {"k": published.params.k, "beta": published.params.beta, "node": published.node,
                   "metric": published.metric, "target": published.target,
                   "search": published.search}  # fmt: skip
    return {
        "method": method, "table": meta.name, "epsilon": float(options["epsilon"]),
        "delta": float(options.get("delta", 0.0)), "columns": [str(c) for c in out.columns],
        "rows": out.astype(object).where(out.notna(), None).to_numpy().tolist(), "summary": summary,
    }  # fmt: skip
