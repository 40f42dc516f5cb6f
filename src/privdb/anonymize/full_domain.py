"""Full-domain generalisation end to end: choose the search, run it, recode suppressed records locally.

* The search: ``optimal`` (``lattice.Lattice.search``), ``lightning``, ``lightning-top-down`` or
  ``genetic`` (``heuristic``), or
  ``auto``: optimal while the lattice has at most ``lattice.MAX_NODES`` nodes, Lightning beyond (and the
  reason is returned, for the CLI to print).
* Attribute weights (ARX's weighted loss, Σ wⱼ·lossⱼ / Σ wⱼ) steer the search; the published ``ncp`` is
  always the unweighted loss of the release, so releases with and without weights compare.
* Local recoding (ARX's iterative "local generalization", ``ARXResult.optimizeIterative``): the records
  the node suppresses are anonymised again on their own with the same search and privacy model (their
  suppression limit 100 %: the loss, 1 per suppressed cell, decides how many to recover), and those the
  new node keeps are published at its levels; repeated up to N times or until nothing is recovered. A
  recovered class is a class of at least k records meeting the l/t condition (the t-closeness
  reference stays the whole table's distribution). Equal released tuples from two rounds merge into one
  class, which k and distinct l survive but entropy/recursive l and t need not, so after each round every
  class of the whole release is checked again and a round that breaks one is undone (and ends the
  recoding).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privdb.anonymize.heuristic import SEARCHES, Budget, genetic, lightning, lightning_top_down
from privdb.anonymize.hierarchy import Hierarchy, lattice_size
from privdb.anonymize.lattice import MAX_NODES, Lattice, NodeResult
from privdb.anonymize.node_criteria import NodeCriteria
from privdb.anonymize.release import GeneralizedColumn, class_ids
from privdb.anonymize.sensitive_condition import SensitiveCondition
from privdb.errors import InvalidParameter, UnknownColumn

__all__ = ["FullDomain", "Search", "full_domain", "weight_list"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Search:
    """Which search, its budget (seconds, evaluations) and the genetic search's seed."""

    method: str = "auto"
    time_limit: float = 10.0
    max_evaluations: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in ("auto", *SEARCHES):
            raise InvalidParameter(
                f"unknown search '{self.method}': use auto, optimal, lightning, lightning-top-down or genetic"
            )
        Budget(self.time_limit, self.max_evaluations)


@dataclass(frozen=True)
class FullDomain:
    """The released columns, suppression, the main node, the loss and what to add to the parameters."""

    columns: list[GeneralizedColumn]
    suppressed: NDArray[np.bool_]
    node: dict[str, int]
    loss: float
    loss_by_column: dict[str, float]
    params: dict[str, Any]
    note: str | None


def weight_list(qi: Sequence[str], weights: Mapping[str, float] | None) -> list[float] | None:
    """Weights per quasi-identifier in ``qi`` order (1 for the unnamed), validated; None without any."""
    if not weights:
        return None
    for column, w in weights.items():
        if column not in qi:
            raise UnknownColumn(
                f"a weight is given for '{column}', not a generalised quasi-identifier ({', '.join(qi)})"
            )
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not np.isfinite(w) or w < 0:
            raise InvalidParameter(f"the weight of '{column}' must be a number >= 0 (got {w!r})")
    out = [float(weights.get(c, 1.0)) for c in qi]
    if sum(out) <= 0:
        raise InvalidParameter("every weight is 0: give at least one quasi-identifier a positive weight")
    return out


def full_domain(
    df: pd.DataFrame,
    qi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    k: int,
    *,
    condition: SensitiveCondition | None,
    suppression_limit: float,
    metric: str,
    search: Search,
    weights: Mapping[str, float] | None = None,
    local_recoding: int = 0,
    criteria: NodeCriteria | None = None,
    gs_factor: float = 0.5,
) -> FullDomain:
    """Anonymise ``df`` by full-domain generalisation of ``qi`` (see the module docstring)."""
    w = weight_list(qi, weights)
    if w is not None and metric != "loss":
        raise InvalidParameter("weights weigh the loss metric's columns: use metric='loss' with weights")
    if isinstance(local_recoding, bool) or not isinstance(local_recoding, int) or local_recoding < 0:
        raise InvalidParameter(f"local_recoding is a number of iterations >= 0 (got {local_recoding!r})")
    if local_recoding and criteria is not None and criteria.active:
        raise InvalidParameter(
            "local recoding cannot keep δ-presence, k-map against a population or the risk thresholds (ARX "
            "does not either): leave out local_recoding, or those models"
        )
    size = lattice_size(hierarchies[c].height for c in qi)
    method, note = search.method, None
    if method == "auto":
        method = "optimal" if size <= MAX_NODES else "lightning"
        if method == "lightning":
            note = (
                f"the lattice has {size:,} nodes (more than {MAX_NODES:,}, the optimal search's limit): "
                f"using Lightning with a {search.time_limit:g} s limit"
            )

    def run(
        frame: pd.DataFrame, cond: SensitiveCondition | None, limit: float
    ) -> tuple[Lattice, NodeResult, bool]:
        lat = Lattice(
            frame, qi, hierarchies, k, condition=cond, suppression_limit=limit, metric=metric,
            weights=w, enumerate_nodes=method == "optimal", criteria=criteria, gs_factor=gs_factor,
        )  # fmt: skip
        budget = Budget(search.time_limit, search.max_evaluations)
        if method == "optimal":
            return lat, lat.search(), True
        if method in ("lightning", "lightning-top-down"):
            best, finished = (lightning if method == "lightning" else lightning_top_down)(lat, budget)
            return lat, best, finished
        return lat, genetic(lat, budget, seed=search.seed), False

    lat, best, finished = run(df, condition, suppression_limit)
    # every record at the node (a read-only view; a recoding round copies it)
    levels = np.broadcast_to(np.asarray(best.levels, dtype=np.int64), (len(df), len(best.levels)))
    suppressed = best.suppressed_tuples[lat.tuple_of_record]  # the mask alone, not lat.release's columns
    rounds = []
    for _ in range(local_recoding):
        rows = np.flatnonzero(suppressed)
        if len(rows) < k:
            break
        sub_cond = dataclasses.replace(condition, codes=condition.codes[rows]) if condition else None
        try:
            sub_lat, sub_best, _ = run(df.iloc[rows], sub_cond, 1.0)
        except InvalidParameter:  # no node holds the model on these records alone
            break
        recovered = rows[~sub_lat.release(sub_best)[1]]
        if len(recovered) == 0:
            break
        trial_levels, trial_supp = levels.copy(), suppressed.copy()
        trial_levels[recovered] = sub_best.levels
        trial_supp[recovered] = False
        if not _holds(_columns(lat, trial_levels), trial_supp, k, condition):
            break
        levels, suppressed = trial_levels, trial_supp
        rounds.append({"node": dict(zip(qi, sub_best.levels, strict=True)), "recovered": len(recovered)})
    params: dict[str, Any] = {"search": method, "nodes": size, "evaluations": lat.evaluations}
    params["metric_value"] = best.value  # the metric at the main node, in its own unit (as ARX reports it)
    if method != "optimal":
        params |= {"time_limit": search.time_limit, "complete": finished}
        params |= {"seed": search.seed} if method == "genetic" else {}
    if w is not None:
        params |= {
            "weights": dict(zip(qi, w, strict=True)),
            "weighted_loss": float(np.average(_column_losses(lat, levels, suppressed), weights=w)),
        }
    if local_recoding:
        params["local_recoding"] = {"iterations": local_recoding, "rounds": rounds}
    by_column = _column_losses(lat, levels, suppressed)
    return FullDomain(
        columns=_columns(lat, levels),
        suppressed=suppressed,
        node=dict(zip(qi, best.levels, strict=True)),
        loss=float(by_column.mean()),
        loss_by_column={c: float(x) for c, x in zip(qi, by_column, strict=True)},
        params=params,
        note=note,
    )


def _columns(lat: Lattice, levels: IntArray) -> list[GeneralizedColumn]:
    """Released columns when record i is generalised to ``levels[i]`` (labels merged across levels)."""
    out = []
    for j, (q, lv) in enumerate(zip(lat.qis, _one_levels(levels), strict=True)):
        if lv is not None:
            # one level: the same codes as below, from the distinct tuples (numbered in order of their first
            # record, so factorize numbers their groups in order of first record too; labels are distinct)
            rank, present = pd.factorize(q.groups[lv][lat.tup[j]])
            out.append(GeneralizedColumn(rank.astype(np.int64)[lat.tuple_of_record], q.labels[lv][present]))
            continue
        text = np.empty(lat.n, dtype=object)
        for lv in np.unique(levels[:, j]):
            at = levels[:, j] == lv
            text[at] = q.labels[int(lv)][q.groups[int(lv)][q.codes[at]]]
        codes, uniq = pd.factorize(pd.Series(text, dtype=object))
        out.append(GeneralizedColumn(codes.astype(np.int64), np.asarray(uniq, dtype=object)))
    return out


def _one_levels(levels: IntArray) -> list[int | None]:
    """Per quasi-identifier, the level every record has in ``levels``, or None if they differ."""
    if not len(levels):
        return [None] * levels.shape[1]
    return [int(col[0]) if (col == col[0]).all() else None for col in levels.T]


def _holds(
    cols: list[GeneralizedColumn], suppressed: NDArray[np.bool_], k: int, cond: SensitiveCondition | None
) -> bool:
    """Whether every class of the release has k records and meets the l/t condition."""
    ids = class_ids(cols, suppressed)
    keep = np.flatnonzero(ids >= 0)
    n_cls = int(ids.max()) + 1 if len(keep) else 0
    if n_cls and np.bincount(ids[keep], minlength=n_cls).min() < k:
        return False
    return cond is None or not n_cls or bool(cond.ok(cond.histogram(ids[keep], n_cls, keep)).all())


def _column_losses(lat: Lattice, levels: IntArray, suppressed: NDArray[np.bool_]) -> NDArray[np.float64]:
    """ARX's loss of each quasi-identifier of a release whose record i is at ``levels[i]`` (the mean over
    records, 1 per suppressed cell); their mean is the loss the search minimises, their mean weighted by
    ``wⱼ`` ARX's weighted loss Σ wⱼ·lossⱼ / Σ wⱼ."""
    out = np.zeros(len(lat.qis))
    for j, (q, one) in enumerate(zip(lat.qis, _one_levels(levels), strict=True)):
        if one is not None:  # the same cells as below, without a mask per level
            cell = q.cost[one][q.groups[one][lat.tup[j]]][lat.tuple_of_record]
            cell[suppressed] = 1.0
        else:
            cell = np.ones(lat.n)
            for lv in np.unique(levels[:, j]):
                at = (levels[:, j] == lv) & ~suppressed
                cell[at] = q.cost[int(lv)][q.groups[int(lv)][q.codes[at]]]
        out[j] = float(cell.sum()) / lat.n
    return out
