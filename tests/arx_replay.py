"""Replaying one of ARX's cases (``arx_corpus``) through ``privdb.anonymize``: the translation of ARX's
configuration into privdb's parameters, or the reason privdb cannot express it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from arx_corpus import COLUMNS, ArxCase
from privdb.anonymize import Models, Search, anonymize, load_hierarchies
from privdb.anonymize.hierarchy import Hierarchy

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
USA = 317_238_626  # ARX's population of the USA (its ARXPopulationModel's Region.USA)

__all__ = ["NotExpressible", "Outcome", "adult", "replay", "translate"]


class NotExpressible(Exception):
    """privdb has no parameter for part of the case (the message says which)."""


@dataclass(frozen=True)
class Outcome:
    """privdb's optimal node (ARX's order) and its metric value."""

    node: tuple[int, ...]
    value: float


@cache
def adult() -> pd.DataFrame:
    """ARX's adult.csv (read once per process)."""
    return pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)


@cache
def _subset() -> pd.DataFrame:
    return pd.read_csv(ADULT / "adult_subset.csv", sep=";", dtype=str, keep_default_na=False)


@cache
def _hierarchies() -> dict[str, Hierarchy]:
    return dict(load_hierarchies(ADULT / "hierarchies", list(COLUMNS), fix_labels=True))


def _metric(case: ArxCase) -> tuple[str, float]:
    """privdb's metric and gs factor for ARX's quality model."""
    args = case.metric_args
    if case.metric == "precomputed_loss":  # (threshold): ARX's Loss, the threshold only picks a cache
        return "geometric-loss", 0.5
    if case.metric == "loss":  # ARX's Loss: geometric mean of the columns, gs factor 0.5 unless given
        return "geometric-loss", float(args[0]) if args else 0.5
    if case.metric == "precomputed_entropy":  # (threshold[, monotonic]); the threshold only picks a cache
        return ("monotonic-entropy" if len(args) > 1 and args[1] else "entropy"), 0.5
    if case.metric == "discernibility":
        return ("dm-star" if args and args[0] else "discernibility"), 0.5
    if case.metric == "aecs":
        return "aecs", 0.5
    raise NotExpressible(f"metric {case.metric}")


def java_subset(size: int) -> list[int]:
    """The rows ARX's subset suite draws: ``size`` calls of ``java.util.Random(0xDEADBEEF).nextInt(size)``
    (Java's 48-bit linear congruential generator), as a sorted set. Java's literal 0xDEADBEEF is the int
    −559038737, which the long seed sign-extends."""
    mask, seed, out = (1 << 48) - 1, (-0x21524111 ^ 0x5DEECE66D) & ((1 << 48) - 1), set()
    for _ in range(size):
        while True:
            seed = (seed * 0x5DEECE66D + 0xB) & mask
            bits = seed >> 17
            if size & (size - 1) == 0:
                value = (size * bits) >> 31
                break
            value = bits % size
            if bits - value + (size - 1) < (1 << 31):
                break
        out.add(value)
    return sorted(out)


def translate(case: ArxCase) -> dict[str, Any]:
    """Keyword arguments of ``privdb.anonymize`` for the case (raises ``NotExpressible``)."""
    metric, gs = _metric(case)
    kw: dict[str, Any] = {"k": 1, "metric": metric, "gs_factor": gs, "sensitive": case.sensitive}
    models: dict[str, Any] = {}
    for name, args in case.models:
        if name == "KAnonymity":
            kw["k"] = int(args[0])
        elif name == "EntropyLDiversity" and args[2:] in ((), ("estimator:SHANNON",)):
            kw |= {"l": float(args[1]), "diversity": "entropy"}
        elif name == "EntropyLDiversity" and args[2:] == ("estimator:GRASSBERGER",):
            kw |= {"l": float(args[1]), "diversity": "grassberger"}
        elif name == "RecursiveCLDiversity":
            kw |= {"l": float(args[2]), "c": float(args[1]), "diversity": "recursive"}
        elif name == "DistinctLDiversity":
            kw |= {"l": float(args[1]), "diversity": "distinct"}
        elif name == "EqualDistanceTCloseness":
            kw["t"] = float(args[1])
        elif name == "OrderedDistanceTCloseness":  # ARX orders a string attribute by its text
            kw |= {"t": float(args[1]), "t_distance": "ordered"}
        elif (
            name == "HierarchicalDistanceTCloseness" and args[2] == f"hierarchy:adult_hierarchy_{args[0]}.csv"
        ):
            kw |= {"t": float(args[1]), "t_hierarchy": _hierarchies()[str(args[0])]}
        elif name == "BasicBLikeness":
            models["beta"] = float(args[1])
        elif name == "EnhancedBLikeness":
            models["enhanced_beta"] = float(args[1])
        elif name == "DPresence" and args[2] == "adult_subset.csv":
            models["delta_presence"] = (float(args[0]), float(args[1]))
            models["presence_coverage"] = False  # ARX's δ-presence
            kw["population"] = adult()
        elif name == "KMap" and args[1:] == ("adult_subset.csv",):
            models["k_map"] = int(args[0])
            kw["population"] = adult()
        elif name == "KMap" and args[2:] == ("population:USA", "estimator:ZERO_TRUNCATED_POISSON"):
            models |= {"k_map": int(args[0]), "significance": float(args[1])}
            models["k_map_estimator"] = "zero-truncated-poisson"
            kw["sampling_fraction"] = len(adult()) / USA
        elif name == "Inclusion":  # ARX counts classes, metric and references over the subset's rows only
            kw["rows"] = java_subset(int(str(args[0]).split(":")[1]))
        elif name == "AverageReidentificationRisk":
            models["average_risk"] = float(args[0])
        elif name == "SampleUniqueness":
            models["sample_uniqueness"] = float(args[0])
        elif name == "PopulationUniqueness" and args[2:] == ("population:USA",):
            models |= {"population_uniqueness": float(args[0]), "estimator": str(args[1])[6:].lower()}
            kw["sampling_fraction"] = len(adult()) / USA
        else:
            raise NotExpressible(f"model {name}{args}")
    if models:
        kw["models"] = Models(**models)
    return kw


def _search(case: ArxCase) -> Search | str:
    """The optimal search, or for ARX's ``Heuristic`` and ``HeuristicTopDown`` suites their heuristic:
    Lightning (ARX's best-effort bottom-up search) or its top-down variant, stopped after ARX's 1,000 steps
    (node evaluations), with no time limit to speak of."""
    heuristic = {"Heuristic": "lightning", "HeuristicTopDown": "lightning-top-down"}.get(case.suite)
    if heuristic is not None:
        return Search(heuristic, time_limit=3600.0, max_evaluations=1000)
    return "optimal"


def replay(case: ArxCase) -> Outcome:
    """privdb's optimal node and metric value for the case."""
    kw = translate(case)
    rows = kw.pop("rows", None)
    df = _subset() if "population" in kw else adult()
    df = df if rows is None else df.iloc[rows].reset_index(drop=True)
    qi = list(case.qi)
    hier = _hierarchies()
    done = anonymize(
        df, qi, algorithm="lattice", hierarchies={c: hier[c] for c in qi},
        suppression_limit=case.suppression, search=_search(case), **kw,
    )  # fmt: skip
    assert done.node is not None
    return Outcome(tuple(done.node[c] for c in qi), float(done.params["metric_value"]))
