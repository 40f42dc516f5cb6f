"""Anonymised publishing: generalise quasi-identifiers until every record hides in a crowd.

``anonymize`` is the entry point: Mondrian multidimensional partitioning (``mondrian``) or optimal
full-domain generalisation over hierarchy levels (``lattice``), with k-anonymity (Sweeney 2002) and
optionally l-diversity (Machanavajjhala et al. 2007), t-closeness (Li et al. 2007) and ``criteria.Models``
(β-likeness, δ-disclosure, δ-presence, k-map, risk thresholds; ``node_criteria``). The release keeps the
input's columns and row order (``release``); what `privdb anonymize` writes is ``release.publishable``: the
classified columns only, the rows shuffled.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize._classes import STAR, HierarchyLike
from privdb.anonymize.full_domain import Search, full_domain
from privdb.anonymize.hierarchy import (
    DateHierarchy,
    FlatHierarchy,
    Hierarchy,
    IntervalHierarchy,
    MaskHierarchy,
    TaxonomyHierarchy,
)
from privdb.anonymize.lattice_metrics import METRICS
from privdb.anonymize.microaggregate import aggregate
from privdb.anonymize.microaggregate import checked as checked_aggregates
from privdb.anonymize.model_spec import MONDRIAN_REFUSAL, Models, check_model_inputs, derived_k
from privdb.anonymize.mondrian import partition
from privdb.anonymize.mondrian_codes import encode
from privdb.anonymize.mondrian_labels import generalize
from privdb.anonymize.node_criteria import NodeCriteria
from privdb.anonymize.population import check_population
from privdb.anonymize.release import Anonymized, GeneralizedColumn, build_release, class_ids
from privdb.anonymize.resolve import automatic, load_hierarchies, resolve
from privdb.anonymize.sensitive_condition import SensitiveCondition
from privdb.anonymize.side_by_side import each_column
from privdb.errors import InvalidParameter, UnknownColumn

__all__ = [
    "Anonymized",
    "DateHierarchy",
    "FlatHierarchy",
    "Hierarchy",
    "IntervalHierarchy",
    "MaskHierarchy",
    "Models",
    "Search",
    "SensitiveCondition",
    "TaxonomyHierarchy",
    "anonymize",
    "automatic",
    "load_hierarchies",
]

ALGORITHMS = ("mondrian", "lattice")


def _models(
    df: pd.DataFrame,
    qi: Sequence[str],
    k: int,
    models: Models | None,
    *,
    sensitive: str | None,
    algorithm: str,
    population: pd.DataFrame | None,
    sampling_fraction: float | None,
    aggregated: bool,
    diverse: bool = False,
) -> tuple[int, NodeCriteria | None, dict[str, Any]]:
    """k with k-map's estimate folded in, the node criteria, and the parameters to record; refuse what
    cannot be honoured."""
    check_model_inputs(models, sensitive, population, sampling_fraction)
    if models is None or not models.any:
        return k, None, {}
    if population is not None:
        check_population(df, population, qi)
    criteria = NodeCriteria(
        models,
        population=population,
        sampling_fraction=sampling_fraction,
        sized=k > 1 or diverse,  # ARX's minimal class size (its δ-presence rule depends on it)
    )
    if criteria.active and algorithm != "lattice":
        raise InvalidParameter(MONDRIAN_REFUSAL)
    if criteria.active and aggregated:
        raise InvalidParameter(
            "microaggregated columns are not generalised, so population counts and risk thresholds cannot "
            "be planned over them: leave out microaggregate, or those models"
        )
    params: dict[str, Any] = {"models": {f: v for f, v in vars(models).items() if v is not None}}
    if sampling_fraction is not None:
        params["sampling_fraction"] = sampling_fraction
    if models.k_map is not None and population is None and sampling_fraction is not None:
        k2 = derived_k(models.k_map, sampling_fraction, models.significance, models.k_map_estimator, len(df))
        params["k_map_derived_k"] = k2
        k = max(k, k2)
    return k, criteria if criteria.active else None, params


def _check(
    df: pd.DataFrame, qi: Sequence[str], k: int, sensitive: str | None, algorithm: str, need_sensitive: bool
) -> None:
    if isinstance(qi, str):
        raise InvalidParameter(f"qi is a list of column names, e.g. ['{qi}'], not one string")
    if not qi:
        raise InvalidParameter("give at least one quasi-identifier, e.g. qi=['age', 'zip']")
    cols = [str(c) for c in df.columns]
    for c in [*qi, *([sensitive] if sensitive else [])]:
        if c not in cols:
            raise UnknownColumn(f"unknown column '{c}': the table has {', '.join(cols)}")
    if len(set(qi)) != len(qi):
        raise InvalidParameter("a quasi-identifier is listed twice: list each column once")
    if sensitive is not None and sensitive in qi:
        raise InvalidParameter(f"'{sensitive}' is both sensitive and a quasi-identifier: choose one role")
    if need_sensitive and sensitive is None:
        raise InvalidParameter("l-diversity and t-closeness need sensitive='<column>'")
    if algorithm not in ALGORITHMS:
        raise InvalidParameter(f"unknown algorithm '{algorithm}': use mondrian or lattice")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidParameter(f"k must be a whole number of at least 1 (got {k!r})")
    if len(df) == 0:
        raise InvalidParameter("the table is empty: there is nothing to anonymise")
    if k > len(df):
        raise InvalidParameter(
            f"k = {k} is larger than the table ({len(df)} rows): no class can hold k records; lower k"
        )


def _all_starred(columns: Sequence[GeneralizedColumn], n: int) -> NDArray[np.bool_]:
    """Per record: whether its label is ``*`` in every column (read from the labels, once each)."""
    out = np.ones(n, dtype=bool)
    for col in columns:
        out &= (np.asarray(col.labels, dtype=object) == STAR)[col.codes]
    return out


def anonymize(
    df: pd.DataFrame,
    qi: Sequence[str],
    *,
    k: int,
    l: float | None = None,  # noqa: E741 (the field's notation)
    t: float | None = None,
    sensitive: str | None = None,
    diversity: str = "distinct",
    c: float | None = None,
    algorithm: str = "mondrian",
    hierarchies: Mapping[str, Hierarchy | str] | str | None = None,
    hierarchy_fallback: bool = False,
    fix_labels: bool = False,
    suppression_limit: float = 0.05,
    metric: str = "loss",
    gs_factor: float = 0.5,
    t_hierarchy: HierarchyLike | None = None,
    t_distance: str = "auto",
    strict: bool = True,
    categorical: str = "auto",
    search: Search | str = "auto",
    weights: Mapping[str, float] | None = None,
    local_recoding: int = 0,
    microaggregate: Mapping[str, str] | None = None,
    models: Models | None = None,
    population: pd.DataFrame | None = None,
    sampling_fraction: float | None = None,
) -> Anonymized:
    """Anonymise ``df`` on the quasi-identifiers ``qi``.

    ``algorithm="mondrian"`` partitions records (``strict`` or relaxed; categories split along their
    hierarchy or as ordered values, ``categorical`` = auto/tree/ordered); numbers are published as the
    ``lo-hi`` range of each partition's own records. ``algorithm="lattice"`` finds the full-domain
    generalisation minimising ``metric`` (one of ``METRICS``) with at most ``suppression_limit`` (a fraction
    of the records) suppressed, ``gs_factor`` weighing generalisation against suppression in it (ARX's,
    ``lattice_metrics``). ``hierarchies`` maps columns to ``Hierarchy`` objects or kind names
    (intervals, mask, date, flat), or is a directory of ``<column>.csv`` files; the rest are automatic. A
    file's ``lo-hi`` labels must hold the numbers under them; ``fix_labels`` renames those that do not.
    ``l`` (with ``diversity`` distinct/entropy/recursive and ``c``) and ``t`` need ``sensitive``; with
    ``t_hierarchy`` (the sensitive attribute's hierarchy, ARX layout) t is the hierarchical distance;
    ``t_distance`` chooses it (auto, equal, ordered: numbers by value, text in sorted order; hierarchical).

    Full-domain only: ``search`` (a ``Search`` or its method: auto, optimal, lightning, genetic; auto is
    optimal up to ``lattice.MAX_NODES`` nodes, Lightning beyond), ``weights`` (column → weight in the loss),
    ``local_recoding`` (rounds re-anonymising the suppressed records). Any algorithm: ``microaggregate``
    (quasi-identifier → mean, median or mode) publishes those columns as their class's value.

    ``models`` adds issue 31's models as criteria: β-likeness and δ-disclosure of ``sensitive`` (any
    algorithm), k-map (against ``population``, or k raised to ARX's estimate from ``sampling_fraction``),
    and, lattice only, δ-presence (``population``), k-map against a population and the risk thresholds
    (population uniqueness with ``sampling_fraction``). See ``node_criteria``.
    """
    started = time.perf_counter()
    qi = list(qi) if not isinstance(qi, str) else qi
    _check(df, qi, k, sensitive, algorithm, l is not None or t is not None)
    k_eff, criteria, model_params = _models(
        df, qi, k, models, sensitive=sensitive, algorithm=algorithm, population=population,
        sampling_fraction=sampling_fraction, aggregated=bool(microaggregate), diverse=l is not None,
    )  # fmt: skip
    if algorithm == "lattice" and metric not in METRICS:
        raise InvalidParameter(f"unknown metric '{metric}': use one of {', '.join(METRICS)}")
    if (t_hierarchy is not None or t_distance != "auto") and t is None:
        raise InvalidParameter("t_hierarchy and t_distance choose t-closeness's distance: give t as well")
    if algorithm != "lattice" and gs_factor != 0.5:
        raise InvalidParameter("gs_factor weighs the lattice search's metric: algorithm='lattice'")
    plan = Search(search) if isinstance(search, str) else search
    if algorithm != "lattice" and (plan.method != "auto" or weights or local_recoding):
        raise InvalidParameter(
            "search, weights and local_recoding tune the full-domain search: algorithm='lattice'"
        )
    aggregated = checked_aggregates(df, qi, microaggregate)
    searched = [c for c in qi if c not in aggregated] if algorithm == "lattice" else qi
    if isinstance(hierarchies, str):
        hierarchies = load_hierarchies(hierarchies, searched, fix_labels=fix_labels)
    if algorithm == "lattice":
        given = {c: h for c, h in (hierarchies or {}).items() if c not in aggregated}
        hier = resolve(df, searched, given, fallback=hierarchy_fallback)
    else:  # Mondrian needs only the hierarchies it was given (numbers and the rest need none)
        hier = resolve(
            df, [c for c in qi if c in (hierarchies or {})], hierarchies, fallback=hierarchy_fallback
        )
    condition = None
    likeness = {
        "beta": models.beta if models else None,
        "enhanced_beta": models.enhanced_beta if models else None,
        "delta_disclosure": models.delta_disclosure if models else None,
    }
    if sensitive is not None and (l is not None or t is not None or any(likeness.values())):
        condition = SensitiveCondition.build(
            df[sensitive], l=l, diversity=diversity, c=c, t=t, t_hierarchy=t_hierarchy,
            t_distance=t_distance, **likeness,
        )  # fmt: skip
        whole = condition.histogram(np.zeros(len(df), dtype=np.int64), 1)
        if not condition.ok(whole)[0]:
            raise InvalidParameter(
                f"the whole table does not satisfy the l/t condition on '{sensitive}', so no release can: "
                "lower l or raise t"
            )
    params: dict[str, Any] = {"k": k, "l": l, "t": t, "sensitive": sensitive, "algorithm": algorithm}
    params.update(model_params)
    if algorithm == "mondrian":
        named = [(name, df[name]) for name in qi]  # taken here: the threads only read the columns
        dims = each_column(lambda nc: encode(nc[1], hier.get(nc[0]), categorical), named)
        ids, sizes = partition(dims, k_eff, strict=strict, condition=condition)
        cols, ncp = generalize(dims, ids, sizes)
        by_column: dict[str, float] = {}
        suppressed = np.zeros(len(df), dtype=bool)
        reason = None
        node = None
        n_parts = len(sizes)
        params.update(strict=strict, categorical=categorical)
    else:
        done = full_domain(
            df, searched, hier, k_eff, condition=condition, suppression_limit=suppression_limit,
            metric=metric, search=plan, weights=weights, local_recoding=local_recoding, criteria=criteria,
            gs_factor=gs_factor,
        )  # fmt: skip
        cols, suppressed, ncp = done.columns, done.suppressed, done.loss
        by_column = {c: done.loss_by_column.get(c, 0.0) for c in qi}  # an aggregated column: unchanged
        reason = (
            "class smaller than k"
            + (
                f" or failing the {'l/t' if not any(likeness.values()) else 'sensitive-value'} condition"
                if condition
                else ""
            )
            + (" or the population/risk models" if criteria else "")
            + " after generalisation"
            if suppressed.any()
            else None
        )
        node = done.node
        n_parts = 0
        params.update(suppression_limit=suppression_limit, metric=metric, **done.params)
        if done.note:
            params.update(note=done.note)
    if aggregated:
        ids_cls = class_ids(cols, suppressed)
        made = dict(zip(searched, cols, strict=True))
        made |= {c: aggregate(df[c], ids_cls, how) for c, how in aggregated.items()}
        cols = [made[c] for c in qi]
        params.update(microaggregate=aggregated)
    ids_cls = class_ids(cols, suppressed)
    n_parts = n_parts or (int(ids_cls.max()) + 1 if len(ids_cls) else 0)
    table = build_release(df, qi, cols, suppressed)
    starred = int((_all_starred(cols, len(df)) & ~suppressed).sum())
    if starred:  # shown as suppressed, so the reason is owed (the top node: no less general one passed)
        reason = "; ".join(
            [
                *([reason] if reason else []),
                f"{starred:,} generalised to '*' in every quasi-identifier: no less general node meets the "
                "privacy models within the suppression limit",
            ]
        )
    return Anonymized(
        table=table,
        qi=tuple(qi),
        class_ids=ids_cls,
        suppressed=suppressed,
        suppression_reason=reason,
        algorithm=algorithm,
        k=k,
        ncp=float(ncp),
        seconds=time.perf_counter() - started,
        partitions=n_parts,
        node=node,
        params=params,
        columns=tuple(cols),
        hierarchies=hier,
        ncp_by_column=by_column,
    )
